"""Administration through the SDK: the bill, the audit log (rows of accepted and rejected
operations, pages, the chain check) and the event stream (from offsets, caught up, live)."""

import datetime as dt
import os
import time

import pytest

import sandboxd
from sandboxd import Sandbox

HOUR = 3600 * 10**9


def _until(what, check, limit: float = 60):
    deadline = time.monotonic() + limit
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def test_bill_has_a_line_for_a_sandbox_that_ran(runtime: str) -> None:
    now = time.time_ns()
    start = now // HOUR * HOUR
    sbx = Sandbox.create(runtime=runtime, memory_mib=512, metadata={"suite": "sdk"})
    time.sleep(1)
    sbx.delete()  # closes its running interval

    def line():
        report = sandboxd.admin.bill("dev", start, start + 2 * HOUR)
        return next((x for x in report.lines if x.sandbox_id == sbx.sandbox_id), None), report

    found = _until("bill", lambda: line()[0])
    assert found is not None, "the deleted sandbox has no bill line"
    _, report = line()
    assert found.tenant == "dev"
    # 0.5 GiB for at least a second of running, less than a minute.
    assert 0.5 <= found.compute_gib_seconds < 30
    assert found.events  # the event ids the line comes from
    assert report.total_micros == report.total_compute_micros + report.total_storage_micros
    assert report.total_micros >= found.compute_micros + found.storage_micros
    by_hour = sandboxd.admin.bill("dev", dt.datetime.fromtimestamp(start / 1e9, dt.timezone.utc),
                                  start + 2 * HOUR, by="hour")
    assert all(x.sandbox_id == "" for x in by_hour.lines)


def test_bill_refuses_a_period_that_is_not_whole_hours(daemon) -> None:
    with pytest.raises(sandboxd.InvalidArgumentError):
        sandboxd.admin.bill("dev", 0, HOUR + 1)


def test_audit_rows_record_accepted_and_rejected_operations(runtime: str) -> None:
    sbx = Sandbox.create(runtime=runtime, metadata={"suite": "sdk"})
    with pytest.raises(sandboxd.ConflictError):
        sbx.resume()
    sbx.delete()

    def rows():
        found = [r for page in sandboxd.admin.audit(sandbox_id=sbx.sandbox_id, limit=2)
                 for r in page]
        return found if any(r.action == "deleted" for r in found) else None

    found = _until("audit", rows)
    assert found, "no audit rows for the sandbox"
    actions = [(r.action, r.outcome) for r in found]
    assert ("created", "accepted") in actions
    assert any(outcome == "conflict" for _, outcome in actions)
    assert all(r.tenant == "dev" and r.sandbox_id == sbx.sandbox_id for r in found)
    assert all(len(r.hash) == 32 for r in found)
    times = [r.occurred_at for r in found]
    assert times == sorted(times)


def test_audit_verify_holds(daemon) -> None:
    check = sandboxd.admin.audit_verify()
    assert check.ok and check.problems == []
    assert check.checked_rows > 0
    assert sandboxd.admin.audit_verify("dev").checked_rows <= check.checked_rows


def test_events_follow_from_offsets_caught_up_and_live(daemon) -> None:
    label = {"stream": os.urandom(4).hex()}
    first = Sandbox.create(runtime="hollow", metadata=label)
    everything = list(sandboxd.events.follow(follow=False))
    created = [e for e in everything if e.sandbox_id == first.sandbox_id]
    assert [e.kind for e in created][:2] == ["created", "started"]
    assert created[0].payload["labels"] == [{"key": "stream", "value": label["stream"]}]
    # Resuming after an event's offset leaves that event (and all before it) out.
    offsets = {}
    for e in everything:
        offsets[e.partition] = max(offsets.get(e.partition, 0), e.offset + 1)
    seen = {e.event_id for e in everything}
    resumed = list(sandboxd.events.follow(offsets, follow=False))  # storage samples, at most
    assert not seen & {e.event_id for e in resumed}
    assert all(e.offset >= offsets.get(e.partition, 0) for e in resumed)
    # Live: a sandbox made after the stream began arrives through it.
    live = sandboxd.events.follow(offsets)
    second = Sandbox.create(runtime="hollow", metadata=label)
    mine = next(e for e in live if e.sandbox_id == second.sandbox_id)
    assert (mine.kind, mine.sequence) == ("created", 1)
    assert mine.event_id not in seen
    live.close()
    first.delete()
    second.delete()
