"""Snapshots and forks through the SDK (docs/snapshots.md): ``sbx.snapshot()`` of a running
sandbox, a fork with ``Sandbox.create(snapshot=...)`` and ``sbx.fork()`` each start with the
files as they were at the snapshot and change only their own; another tenant's snapshot is
NotFoundError."""

import pytest

import sandboxd
from sandboxd import Sandbox


def test_a_snapshot_forks_sandboxes_with_the_files_as_they_were(sbx: Sandbox,
                                                                 runtime: str) -> None:
    sbx.files.write("/workspace/state.txt", "before")
    snap = sbx.snapshot("checkpoint")
    assert snap.snapshot_id.startswith("snap-") and len(snap.snapshot_id) == 21
    assert (snap.name, snap.sandbox_id, snap.runtime) == ("checkpoint", sbx.sandbox_id, runtime)
    assert snap.referenced_bytes > 0
    sbx.files.write("/workspace/state.txt", "after")
    with Sandbox.create(snapshot=snap.snapshot_id) as fork:
        assert fork.get_info().runtime == runtime
        assert fork.files.read("/workspace/state.txt") == "before"
        fork.files.write("/workspace/state.txt", "fork")
        with fork.fork() as grandchild:
            assert grandchild.files.read("/workspace/state.txt") == "fork"
    assert sbx.files.read("/workspace/state.txt") == "after"


def test_another_tenants_snapshot_is_not_found(sbx: Sandbox, daemon) -> None:
    snap = sbx.snapshot()
    other = sandboxd.Client.connect(daemon.address, daemon.other_token)
    try:
        with pytest.raises(sandboxd.NotFoundError):
            Sandbox.create(snapshot=snap.snapshot_id, client=other)
    finally:
        other.close()
