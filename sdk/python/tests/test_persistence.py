"""What a pause keeps: markers written in /workspace, /usr/local/share and /etc survive a
filesystem pause (read and written offline while paused, found by commands after resume);
a memory pause keeps running processes and refuses writes (ConflictError) but serves reads."""

import pytest

import sandboxd
from sandboxd import Sandbox

MARKERS = ["/workspace/marker", "/usr/local/share/marker", "/etc/marker"]


def test_markers_survive_a_filesystem_pause_with_offline_reads_and_writes(sbx: Sandbox) -> None:
    for i, path in enumerate(MARKERS):
        sbx.commands.run(f"mkdir -p $(dirname {path}) && echo m{i} > {path}", check=True)
    sbx.files.write("/etc/written-by-sdk", "sdk")
    sbx.pause(mode="filesystem")
    # Offline: reads and writes go to the writable layer while no process runs.
    for i, path in enumerate(MARKERS):
        assert sbx.files.read(path) == f"m{i}\n"
    sbx.files.write("/workspace/while-paused", "offline")
    assert sbx.files.exists("/workspace/while-paused")
    assert "while-paused" in [e.name for e in sbx.files.list("/workspace")]
    sbx.resume()
    r = sbx.commands.run("cat " + " ".join(MARKERS) + " /etc/written-by-sdk /workspace/while-paused")
    assert r.stdout == "m0\nm1\nm2\nsdkoffline"


def test_a_memory_pause_keeps_processes_and_refuses_writes(sbx: Sandbox) -> None:
    sbx.files.write("/workspace/kept", "k")
    h = sbx.commands.run("sleep 300", background=True)
    sbx.pause(mode="memory")
    with pytest.raises(sandboxd.ConflictError) as e:
        sbx.files.write("/workspace/refused", "no")
    assert "memory" in e.value.message
    assert sbx.files.read("/workspace/kept") == "k"
    sbx.resume()
    assert h.exec_id in [p.exec_id for p in sbx.commands.list()]
    assert not sbx.files.exists("/workspace/refused")
    h.kill()
    h.wait()
