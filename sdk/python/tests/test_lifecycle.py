"""A sandbox's lifecycle through the SDK on runsc and crun: create with settings, info,
pause in both modes and resume, timeouts, connect by id, delete (the context manager's exit),
conflicts, and the sandbox's own event stream."""

import datetime as dt
import time

import pytest

import sandboxd
from sandboxd import Sandbox


def test_create_applies_the_settings_and_info_tells_them(runtime: str) -> None:
    before = dt.datetime.now(dt.timezone.utc)
    with Sandbox.create(runtime=runtime, timeout=300, metadata={"agent": "x", "suite": "sdk"},
                        memory_mib=256, pids=128) as sbx:
        info = sbx.get_info()
        assert info.sandbox_id == sbx.sandbox_id and sbx.sandbox_id.startswith("sb-")
        assert info.state == "running"
        assert info.runtime == runtime and info.template == "base"
        assert info.metadata == {"agent": "x", "suite": "sdk"}
        assert info.limits.memory_mib == 256 and info.limits.pids == 128
        assert info.tenant == "dev"
        assert info.created_at is not None and abs((info.created_at - before).total_seconds()) < 60
        # timeout=300 is an end time five minutes after creation.
        assert info.end_at is not None
        assert 299 <= (info.end_at - info.created_at).total_seconds() <= 301
        assert sbx.is_running()
    with pytest.raises(sandboxd.NotFoundError):
        Sandbox.get_info_of(sbx.sandbox_id)  # deleted on exit


@pytest.mark.parametrize("mode", ["filesystem", "memory"])
def test_pause_and_resume(sbx: Sandbox, mode: str) -> None:
    paused = sbx.pause(mode=mode)
    assert paused.state == "paused" and paused.pause_mode == mode
    assert Sandbox.get_info_of(sbx.sandbox_id).state == "paused"
    with pytest.raises(sandboxd.ConflictError) as e:
        sbx.pause(mode=mode)
    assert sbx.sandbox_id in e.value.message
    resumed = sbx.resume()
    assert resumed.state == "running" and resumed.pause_mode is None


def test_resume_of_a_running_sandbox_is_conflict(sbx: Sandbox) -> None:
    with pytest.raises(sandboxd.ConflictError):
        sbx.resume()


def test_set_timeout_moves_the_end_time(sbx: Sandbox) -> None:
    info = sbx.set_timeout(600)
    assert info.end_at is not None
    now = dt.datetime.now(dt.timezone.utc)
    assert 590 <= (info.end_at - now).total_seconds() <= 601
    info = sbx.set_timeouts(idle_timeout=120, on_timeout="pause:memory", paused_retention=3600)
    assert info.idle_timeout == 120 and info.paused_retention == 3600
    assert info.on_timeout == "pause:memory"
    assert info.end_at is not None  # kept
    info = sbx.set_timeout(0)
    assert info.end_at is None


def test_a_sandbox_ends_at_its_timeout(runtime: str) -> None:
    sbx = Sandbox.create(runtime=runtime, timeout=1, metadata={"suite": "sdk"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            sbx.get_info()
        except sandboxd.NotFoundError:
            return
        time.sleep(0.2)
    sbx.delete()
    pytest.fail("a sandbox created with timeout=1 still exists a minute later")


def test_connect_by_id_reaches_the_same_sandbox(sbx: Sandbox) -> None:
    other = Sandbox.connect(sbx.sandbox_id)
    other.pause()
    assert sbx.get_info().state == "paused"
    other.resume()


def test_connect_resumes_a_paused_sandbox_when_asked(sbx: Sandbox) -> None:
    sbx.pause()
    assert Sandbox.connect(sbx.sandbox_id).get_info().state == "paused"  # not unless asked
    same = Sandbox.connect(sbx.sandbox_id, resume=True)
    assert same.get_info().state == "running"
    assert Sandbox.connect(sbx.sandbox_id, resume=True).get_info().state == "running"


def test_kill_is_delete(runtime: str) -> None:
    sbx = Sandbox.create(runtime=runtime, metadata={"suite": "sdk"})
    sbx.kill()
    with pytest.raises(sandboxd.NotFoundError):
        sbx.get_info()


def test_a_deleted_sandbox_answers_not_found_to_every_call(runtime: str) -> None:
    sbx = Sandbox.create(runtime=runtime, metadata={"suite": "sdk"})
    sbx.delete()
    for call in (sbx.get_info, sbx.pause, sbx.resume, sbx.delete, lambda: sbx.set_timeout(5)):
        with pytest.raises(sandboxd.NotFoundError) as e:
            call()
        assert sbx.sandbox_id in e.value.message
    with pytest.raises(sandboxd.NotFoundError):
        Sandbox.connect(sbx.sandbox_id)


def test_redact_waits_for_the_delete_and_then_removes_the_metadata(runtime: str) -> None:
    sbx = Sandbox.create(runtime=runtime, metadata={"suite": "sdk", "customer": "jane-doe"})
    with pytest.raises(sandboxd.ConflictError) as e:
        Sandbox.redact(sbx.sandbox_id, "privacy request 9")
    assert "delete it first" in e.value.message
    sbx.delete()
    Sandbox.redact(sbx.sandbox_id, "privacy request 9")
    Sandbox.redact(sbx.sandbox_id)  # a repeat does nothing
    with pytest.raises(sandboxd.NotFoundError):
        Sandbox.redact("sb-000000000000")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = [s for page in Sandbox.list(state="deleted", include_deleted=True)
                for s in page if s.sandbox_id == sbx.sandbox_id]
        if rows and not rows[0].metadata:
            return
        time.sleep(0.2)
    pytest.fail(f"the read model still shows {sbx.sandbox_id}'s metadata after the redaction")


def test_invalid_settings_are_invalid_argument(daemon) -> None:
    with pytest.raises(sandboxd.InvalidArgumentError) as e:
        Sandbox.create(runtime="kata")
    assert "kata" in e.value.message
    with pytest.raises(sandboxd.InvalidArgumentError):
        Sandbox.create(runtime="hollow", timeout=60, lifetime=60)
    with pytest.raises(sandboxd.InvalidArgumentError):
        Sandbox.create(runtime="hollow", on_timeout="explode")
    with pytest.raises(sandboxd.InvalidArgumentError) as e:
        Sandbox.create(runtime="hollow", network="bridge")
    assert "'bridge' is not one of none" in e.value.message
    # An allow list is parsed by the daemon (a bad rule is named), and refused where the
    # node cannot enforce it (hollow has no links).
    with pytest.raises(sandboxd.InvalidArgumentError) as e:
        Sandbox.create(runtime="hollow", network=["pypi.org", "10.1.2.3/16"])
    assert "10.1.2.3/16" in e.value.message
    with pytest.raises(sandboxd.InvalidArgumentError) as e:
        Sandbox.create(runtime="hollow", network=["pypi.org:443"])
    assert "cannot enforce a network policy" in e.value.message
    with pytest.raises(sandboxd.InvalidArgumentError):
        next(iter(Sandbox.list(state="runnin")))
    with Sandbox.create(runtime="hollow") as s:
        with pytest.raises(sandboxd.InvalidArgumentError):
            s.pause(mode="disk")
    with pytest.raises(sandboxd.InvalidArgumentError):
        sandboxd.admin.bill("dev", 0, 3600 * 10**9, by="week")


def test_a_repeated_request_id_returns_the_same_sandbox(daemon) -> None:
    with Sandbox.create(runtime="hollow", request_id="sdk-idempotent-1") as a:
        b = Sandbox.create(runtime="hollow", request_id="sdk-idempotent-1")
        assert b.sandbox_id == a.sandbox_id


def test_watch_streams_the_sandbox_events_until_it_is_deleted(runtime: str) -> None:
    sbx = Sandbox.create(runtime=runtime, metadata={"suite": "sdk"})
    events = sbx.watch()
    first = next(events)
    sbx.pause()
    sbx.resume()
    sbx.delete()
    got = [first, *events]  # the iteration ends by itself after "deleted"
    assert [e.sequence for e in got] == list(range(1, len(got) + 1))
    assert [e.kind for e in got if e.kind != "storageSampled"] == [
        "created", "started", "pauseRequested", "paused", "resumeRequested", "resumed",
        "deleteRequested", "deleted"]


def test_watch_from_a_sequence_and_live(sbx: Sandbox) -> None:
    events = sbx.watch(from_sequence=2)
    first = next(events)
    assert first.sequence == 2 and first.kind == "started"
    assert first.sandbox_id == sbx.sandbox_id and first.tenant == "dev"
    sbx.pause(mode="filesystem")  # live events follow
    e = next(events)
    assert (e.kind, e.payload["mode"]) == ("pauseRequested", "filesystem")
    events.close()
    sbx.resume()
