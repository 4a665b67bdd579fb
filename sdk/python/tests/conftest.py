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
import secrets
from dataclasses import dataclass, field
from typing import Dict, Iterator, Optional

import pytest

import sandboxd
from sandboxd.testing import DaemonError, LocalDaemon

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BINARY = os.environ.get("SANDBOXD_BIN", os.path.join(REPO, "build", "apps", "sandboxd"))
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
    if not os.access(BINARY, os.X_OK):
        return f"no sandboxd binary at {BINARY}; build it (cmake --build build --target sandboxd)"
    if not os.path.exists("/usr/lib/postgresql/15/bin/initdb"):
        return "PostgreSQL 15 binaries are missing (scripts/setup installs them)"
    return None


def _other_tenant(token: str) -> str:
    digest = hashlib.sha256(token.encode()).hexdigest()
    return (f'[[token]]\nsha256 = "{digest}"\ntenant = "other"\nprincipal = "other@sdk-tests"\n'
            'scopes = ["sandboxes"]\n')


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
    other_token = "sbd_" + secrets.token_hex(32)
    # The suite holds more at once than a tenant's fair share of a small node (250 hollow
    # sandboxes in test_list, 50 real ones in test_async): its daemon has no tenant quotas.
    # Quotas are tested on their own (tests/security/test_resource_bounds).
    no_quotas = [f"--quota-{q}=0" for q in ("sandboxes", "memory-mib", "cpu-millicores", "pids",
                                             "disk-mib")]
    local = LocalDaemon(BINARY, tokens_toml=_other_tenant(other_token), prefix="sandboxd-test-sdk-",
                        args=no_quotas)
    try:
        local.start()
    except DaemonError as e:
        local.stop()
        pytest.fail(str(e))
    d = Daemon(local.address, local.data_dir, local.dev_token, other_token, local.unavailable)
    os.environ["SANDBOXD_ADDR"] = d.address
    os.environ["SANDBOXD_TOKEN"] = d.dev_token
    try:
        yield d
        _delete_everything(d)
    finally:
        local.stop()


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
