"""Files through the SDK on runsc and crun: text and bytes exact, a 64 MiB file by SHA-256,
listing, directories, rename, remove, exists, info, and the errors of each."""

import hashlib
import io
import os

import pytest

import sandboxd
from sandboxd import Sandbox


def test_text_and_bytes_round_trip(sbx: Sandbox) -> None:
    info = sbx.files.write("/workspace/a.txt", "h\u00e9llo\n")
    assert (info.path, info.type, info.size) == ("/workspace/a.txt", "file", 7)
    assert sbx.files.read("/workspace/a.txt") == "h\u00e9llo\n"
    data = bytes(range(256))
    sbx.files.write("/workspace/b.bin", data, mode=0o600)
    assert sbx.files.read("/workspace/b.bin", format="bytes") == data
    assert sbx.files.get_info("/workspace/b.bin").mode == 0o600
    # The command sees the same bytes.
    r = sbx.commands.run(["od", "-An", "-tu1", "-v", "/workspace/b.bin"])
    assert [int(x) for x in r.stdout.split()] == list(range(256))


def test_a_64_mib_file_by_sha256(sbx: Sandbox) -> None:
    data = os.urandom(64 << 20)
    digest = hashlib.sha256(data).hexdigest()
    info = sbx.files.write("/workspace/big", io.BytesIO(data))
    assert info.size == len(data)
    assert sbx.commands.run(["sha256sum", "/workspace/big"]).stdout.split()[0] == digest
    back = sbx.files.read("/workspace/big", format="bytes")
    assert hashlib.sha256(back).hexdigest() == digest


def test_directories_list_rename_remove(sbx: Sandbox) -> None:
    sbx.files.make_dir("/workspace/d/e/f")
    sbx.files.write("/workspace/d/e/one.txt", "1")
    sbx.files.write("/workspace/d/e/two.txt", "22")
    entries = sbx.files.list("/workspace/d/e")
    assert sorted((e.name, e.type, e.size) for e in entries if e.type == "file") == [
        ("one.txt", "file", 1), ("two.txt", "file", 2)]
    assert [(e.name, e.type) for e in entries if e.type == "dir"] == [("f", "dir")]
    assert not entries.truncated
    assert len(sbx.files.list("/workspace/d/e", limit=1)) == 1
    sbx.files.rename("/workspace/d/e/one.txt", "/workspace/d/moved.txt")
    assert not sbx.files.exists("/workspace/d/e/one.txt")
    assert sbx.files.read("/workspace/d/moved.txt") == "1"
    assert sbx.files.get_info("/workspace/d").type == "dir"
    sbx.files.remove("/workspace/d/moved.txt")
    assert not sbx.files.exists("/workspace/d/moved.txt")
    sbx.files.remove("/workspace/d", recursive=True)
    assert not sbx.files.exists("/workspace/d")
    with pytest.raises(sandboxd.SandboxError):
        sbx.files.make_dir("/workspace/x/y", parents=False)


def test_file_errors(sbx: Sandbox) -> None:
    with pytest.raises(sandboxd.NotFoundError) as e:
        sbx.files.read("/workspace/missing.txt")
    assert "/workspace/missing.txt" in e.value.message
    with pytest.raises(sandboxd.NotFoundError):
        sbx.files.get_info("/workspace/missing.txt")
    with pytest.raises(sandboxd.IsADirectoryError):
        sbx.files.read("/workspace")
    sbx.files.write("/workspace/plain", "x")
    with pytest.raises(sandboxd.NotADirectoryError):
        sbx.files.list("/workspace/plain")
