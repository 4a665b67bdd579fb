"""The languages ``Sandbox.run(language, code)`` takes, and what it runs for each: the code
goes to the interpreter's stdin (no quoting, no file in the sandbox). The same table as
sandboxctl's ``run`` (api/code_language.cpp in sandboxd); keep the two in step.

    python (python3, py)      python3 -
    node (javascript, js)     node -
    bash                      bash -s
    sh                        /bin/sh -s

The command first looks the interpreter up: a template without it (``base`` has no python)
answers exit code 127 and a line on stderr naming the template that has it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Tuple

from .errors import InvalidArgumentError
from .types import CommandResult

# name: (aliases, program, its "program on stdin" argument, a stock template that has it)
_LANGUAGES: Dict[str, Tuple[Tuple[str, ...], str, str, str]] = {
    "python": (("python3", "py"), "python3", "-", "python"),
    "node": (("javascript", "js"), "node", "-", "node"),
    "bash": ((), "bash", "-s", "debian"),
    "sh": ((), "/bin/sh", "-s", "base"),
}

LANGUAGES: Tuple[str, ...] = tuple(_LANGUAGES)


def language_of(name: str) -> str:
    """The canonical name of language `name` (case-insensitive, aliases included);
    InvalidArgumentError naming the languages otherwise."""
    key = str(name).lower()
    for canonical, (aliases, _, _, _) in _LANGUAGES.items():
        if key == canonical or key in aliases:
            return canonical
    raise InvalidArgumentError(
        f"unknown language '{name}'; the languages are {', '.join(LANGUAGES)}")


def argv_for(language: str) -> List[str]:
    """The argv that runs code of `language` read from stdin."""
    _, program, arg, template = _LANGUAGES[language_of(language)]
    return ["/bin/sh", "-c",
            f"command -v {program} >/dev/null 2>&1 || {{ echo 'sandboxd: {program} is not in "
            f"this sandbox: its template has none (the {template} template has it)' >&2; "
            f"exit 127; }}; exec {program} {arg}"]


@dataclass(frozen=True)
class RunResult:
    """What ``Sandbox.run`` answers: the code's stdout, stderr, both as they came
    (``output``), its exit code, and the whole command result (``command``)."""

    language: str
    exit_code: int
    stdout: str
    stderr: str
    output: str
    command: CommandResult

    @property
    def ok(self) -> bool:
        """It exited with 0."""
        return self.command.ok
