"""The SDK's tests run against a real sandboxd that this file starts once per session on a
fresh data directory (/tmp/sandboxd-test-sdk-*): the embedded log and PostgreSQL, the runsc,
crun and hollow runtimes (those that can run here; the others' tests are skipped with the
reason), the development token (tenant "dev", admin) in SANDBOXD_TOKEN, and a tokens file
with a second tenant ("other", no admin scope). At the end every sandbox is deleted, the
daemon is stopped with SIGTERM and must exit 0, and nothing is left: no process, no mount,
no directory.

Environment: SANDBOXD_BIN (default build/apps/sandboxd of this checkout).

Reporting: each skipped test prints "sandboxd-test: skipped <test>: <reason>", and a run in
which nothing ran (every test skipped) exits 77, which ctest reports as Skipped."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional

import pytest

import sandboxd

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RUNTIMES = ("runsc", "crun", "hollow")
NOT_SERVED = "is not served by this build"


@dataclass
class Daemon:
    address: str
    data_dir: str
    dev_token: str
    other_token: str
    unavailable: Dict[str, str] = field(default_factory=dict)  # runtime -> why it cannot run


def _why_not_startable() -> Optional[str]:
    if os.geteuid() != 0:
        return "sandboxd needs root (namespaces, mounts, cgroups)"
    binary = os.environ.get("SANDBOXD_BIN", os.path.join(REPO, "build", "apps", "sandboxd"))
    if not os.access(binary, os.X_OK):
        return f"no sandboxd binary at {binary}; build it (cmake --build build --target sandboxd)"
    if not os.path.exists("/usr/lib/postgresql/15/bin/initdb"):
        return "PostgreSQL 15 binaries are missing (scripts/setup installs them)"
    return None


def _tokens_file(path: str, token: str) -> None:
    digest = hashlib.sha256(token.encode()).hexdigest()
    with open(path, "w") as f:
        f.write(f'[[token]]\nsha256 = "{digest}"\ntenant = "other"\nprincipal = "other@sdk-tests"\n'
                'scopes = ["sandboxes"]\n')


def _start(binary: str, args: List[str], log: str) -> "subprocess.Popen[bytes]":
    with open(log, "wb") as out:
        return subprocess.Popen([binary, *args], stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)


def _wait_ready(proc: "subprocess.Popen[bytes]", log: str, limit: float = 180) -> bool:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        with open(log, "rb") as f:
            if b"sandboxd ready" in f.read():
                return True
        if proc.poll() is not None:
            return False
        time.sleep(0.1)
    return False


def _mounts_under(path: str) -> List[str]:
    with open("/proc/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(path)]


def _delete_everything(d: Daemon) -> None:
    for token in (d.dev_token, d.other_token):
        client = sandboxd.Client.connect(d.address, token)
        try:
            for page in sandboxd.Sandbox.list(client=client, limit=1000):
                for s in page:
                    try:
                        sandboxd.Sandbox.connect(s.sandbox_id, client=client).delete()
                    except sandboxd.NotFoundError:
                        pass
        finally:
            client.close()


@pytest.fixture(scope="session")
def daemon() -> Iterator[Daemon]:
    why = _why_not_startable()
    if why:
        pytest.skip(why)
    binary = os.environ.get("SANDBOXD_BIN", os.path.join(REPO, "build", "apps", "sandboxd"))
    root = tempfile.mkdtemp(prefix="sandboxd-test-sdk-")
    os.chmod(root, 0o711)  # the embedded PostgreSQL runs as its own user below it
    other_token = "sbd_" + secrets.token_hex(32)
    _tokens_file(os.path.join(root, "tokens.toml"), other_token)
    data = os.path.join(root, "data")
    unavailable: Dict[str, str] = {}
    proc = None
    log = os.path.join(root, "sandboxd.log")
    try:
        while True:
            kinds = [k for k in RUNTIMES if k not in unavailable]
            proc = _start(binary, ["--data-dir", data, "--runtime", ",".join(kinds),
                                   "--tokens-file", os.path.join(root, "tokens.toml")], log)
            if _wait_ready(proc, log):
                break
            proc.kill()
            proc.wait()
            output = open(log, errors="replace").read()
            refused = re.search(r"runtime (\w+) cannot run sandboxes here: (.*?); fix it", output)
            if not refused or refused.group(1) == "hollow":
                pytest.fail(f"sandboxd did not start:\n{output[-3000:]}")
            unavailable[refused.group(1)] = refused.group(2)
            shutil.rmtree(data, ignore_errors=True)
        d = Daemon(
            address="unix:" + os.path.join(data, "sandboxd.sock"),
            data_dir=data,
            dev_token=open(os.path.join(data, "dev-token")).read().strip(),
            other_token=other_token,
            unavailable=unavailable,
        )
        os.environ["SANDBOXD_ADDR"] = d.address
        os.environ["SANDBOXD_TOKEN"] = d.dev_token
        yield d
        _delete_everything(d)
    finally:
        problems = []
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=120)
                if rc != 0:
                    problems.append(f"sandboxd exited {rc} on SIGTERM")
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                problems.append("sandboxd did not stop within 120 s of SIGTERM")
        left = _mounts_under(root)
        for m in sorted(left, reverse=True):
            subprocess.run(["umount", "-l", m], check=False)
        if left:
            problems.append(f"mounts left under {root}: {left}")
        if problems:
            problems.append(open(log, errors="replace").read()[-3000:])
        shutil.rmtree(root, ignore_errors=True)
        if problems:
            pytest.fail("\n".join(problems))


@pytest.fixture(params=["runsc", "crun"])
def runtime(request: pytest.FixtureRequest, daemon: Daemon) -> str:
    """Each test that takes it runs once per real runtime."""
    why = daemon.unavailable.get(request.param)
    if why:
        pytest.skip(f"{request.param} cannot run sandboxes here: {why}")
    return request.param


@pytest.fixture
def sbx(runtime: str) -> Iterator[sandboxd.Sandbox]:
    """A sandbox of the runtime under test, deleted after the test."""
    with sandboxd.Sandbox.create(runtime=runtime, metadata={"suite": "sdk"}) as s:
        yield s


# --- reporting ---------------------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A call this build of sandboxd answers "not served" makes its test skipped, with the
    daemon's message as the reason, until the daemon serves it."""
    outcome = yield
    report = outcome.get_result()
    e = call.excinfo.value if call.excinfo is not None else None
    if isinstance(e, sandboxd.UnavailableError) and NOT_SERVED in e.message:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0,
                           f"Skipped: sandboxd does not serve this yet: {e.message}")


def pytest_terminal_summary(terminalreporter: "pytest.TerminalReporter") -> None:
    skipped = terminalreporter.stats.get("skipped", [])
    for r in skipped:
        reason = r.longrepr[2] if isinstance(r.longrepr, tuple) else str(r.longrepr)
        reason = reason.removeprefix("Skipped: ")
        terminalreporter.write_line(f"sandboxd-test: skipped {r.nodeid}: {reason}")
    ran = len(terminalreporter.stats.get("passed", [])) + len(terminalreporter.stats.get("failed", []))
    if skipped and ran == 0:
        terminalreporter.write_line(f"sandboxd-test: all {len(skipped)} test cases skipped")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or exitstatus != 0:
        return
    stats = reporter.stats
    if stats.get("skipped") and not stats.get("passed") and not stats.get("failed"):
        session.exitstatus = 77
