"""The SDK's exceptions: one hierarchy, one class per sandboxd error code.

Every failed call raises a :class:`SandboxError` whose ``code`` is the daemon's error code
(``"not_found"``, ``"conflict"``, ... — docs/errors.md) and whose ``message`` is the
daemon's own message, which names the thing and says what to do. A command that exits
non-zero is a result, not an error, unless it was run with ``check=True``
(:class:`CommandExitError`); a command that runs past its ``timeout`` raises
:class:`CommandTimeoutError`, as ``subprocess.run`` does, with its result on the exception.

``TimeoutError``, ``NotADirectoryError`` and ``IsADirectoryError`` are also the Python
built-ins of the same name, so ``except TimeoutError`` catches the SDK's deadline either way.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Dict, Optional, Type

if TYPE_CHECKING:
    from .types import CommandResult

__all__ = [
    "SandboxError",
    "NotFoundError",
    "ConflictError",
    "PermissionDeniedError",
    "InvalidArgumentError",
    "ResourceExhaustedError",
    "UnavailableError",
    "NotADirectoryError",
    "IsADirectoryError",
    "TooLargeError",
    "CommandTimeoutError",
    "InternalError",
    "TimeoutError",
    "CommandExitError",
]


class SandboxError(Exception):
    """A call to sandboxd failed.

    Attributes:
        code: the daemon's error code (``"not_found"``, ``"conflict"``, ...).
        message: what happened and what to do, as the daemon said it.
    """

    code: str = "internal"

    def __init__(self, message: str, code: Optional[str] = None) -> None:
        if code is not None:
            self.code = code
        self.message = message
        super().__init__(f"{self.code}: {message}")


class NotFoundError(SandboxError):
    """The sandbox (exec, file, template) does not exist — or belongs to another tenant."""

    code = "not_found"


class ConflictError(SandboxError):
    """The call does not fit the sandbox's state (exec on a paused sandbox, a write while
    memory-paused)."""

    code = "conflict"


class PermissionDeniedError(SandboxError):
    """The token may not do this (an unknown token, an admin call without the admin scope)."""

    code = "permission_denied"


class InvalidArgumentError(SandboxError):
    """The request is malformed; retrying it unchanged fails again."""

    code = "invalid_argument"


class ResourceExhaustedError(SandboxError):
    """A quota or limit was reached (tenant quota, disk, calls in flight); retrying later may
    succeed."""

    code = "resource_exhausted"


class UnavailableError(SandboxError):
    """sandboxd cannot be reached, a dependency of it is down, or the outcome is unknown;
    retrying may succeed. A lost or refused connection is this error too.

    Attributes:
        connection_lost: the connection went while the call was in flight; the client
            connects again for its next call.
    """

    code = "unavailable"

    def __init__(self, message: str, code: Optional[str] = None,
                 connection_lost: bool = False) -> None:
        super().__init__(message, code)
        self.connection_lost = connection_lost


class NotADirectoryError(SandboxError, builtins.NotADirectoryError):
    """A path component, or a directory call's target, is not a directory."""

    code = "not_a_directory"


class IsADirectoryError(SandboxError, builtins.IsADirectoryError):
    """A file call named a directory."""

    code = "is_a_directory"


class TooLargeError(SandboxError):
    """A file or message is bigger than its limit."""

    code = "too_large"


class InternalError(SandboxError):
    """The runtime or the host failed a step; the message holds its output."""

    code = "internal"


class TimeoutError(SandboxError, builtins.TimeoutError):
    """A call did not answer within its client-side deadline (``request_timeout``). The
    operation may still complete in the daemon."""

    code = "timeout"


class CommandExitError(SandboxError):
    """A command run with ``check=True`` exited non-zero (or was killed, or timed out).

    Attributes:
        result: the command's :class:`~sandboxd.CommandResult`, output included.
    """

    code = "command_failed"

    def __init__(self, result: "CommandResult") -> None:
        self.result = result
        if result.timed_out:
            what = "timed out"
        elif result.signal:
            what = f"was killed by signal {result.signal}"
        else:
            what = f"exited with code {result.exit_code}"
        tail = result.stderr[-500:].strip()
        super().__init__(f"command {result.exec_id} {what}" + (f": {tail}" if tail else ""))



class CommandTimeoutError(TimeoutError, CommandExitError):
    """A command ran past its ``timeout`` and the daemon ended it. It is a
    :class:`TimeoutError` (the built-in too, as ``subprocess.run``'s and E2B's are) and a
    :class:`CommandExitError`.

    Attributes:
        result: the command's :class:`~sandboxd.CommandResult` (``timed_out`` set), with the
            output it wrote before it was ended.
    """

    code = "timeout"

    def __init__(self, result: "CommandResult") -> None:
        CommandExitError.__init__(self, result)

_BY_CODE: Dict[str, Type[SandboxError]] = {
    c.code: c
    for c in (
        NotFoundError,
        ConflictError,
        PermissionDeniedError,
        InvalidArgumentError,
        ResourceExhaustedError,
        UnavailableError,
        NotADirectoryError,
        IsADirectoryError,
        TooLargeError,
        InternalError,
    )
}

_REMOTE_PREFIX = "remote exception: "


def error_from_description(description: str, disconnected: bool = False) -> SandboxError:
    """The exception for a Cap'n Proto exception's description (``"<code>: <message>"``,
    possibly behind ``"remote exception: "``). A lost connection, or a description that
    does not start with a known code, is :class:`UnavailableError`."""
    text = description
    if text.startswith(_REMOTE_PREFIX):
        text = text[len(_REMOTE_PREFIX):]
    code, sep, message = text.partition(": ")
    if disconnected:
        if "too large" in text:
            return UnavailableError(
                f"request too large: sandboxd closed the connection on it ({text}); send large "
                "content as a file (files.write streams it in pieces). The client connects "
                "again for its next call", connection_lost=True)
        return UnavailableError(
            f"the connection to sandboxd was lost ({text}); check that the daemon runs, then "
            "retry (the client connects again for its next call)", connection_lost=True)
    cls = _BY_CODE.get(code) if sep else None
    if cls is None:
        return UnavailableError(text)
    return cls(message)


def check_choice(what: str, value: str, allowed: "tuple[str, ...]") -> str:
    """`value` when it is one of `allowed`; else InvalidArgumentError naming them (before
    the request is built, so a typo never reaches the wire as a pycapnp error)."""
    if value not in allowed:
        raise InvalidArgumentError(f"{what} {value!r} is not one of {', '.join(allowed)}")
    return value
