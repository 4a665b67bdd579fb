"""Files in a sandbox: `sbx.files.read/write/list/...`.

A read streams the file's content to a ByteSink capability served here; a write sends it
through the daemon's Upload in chunks of at most 1 MiB, a few in flight at a time, and commits
it (readers see the old file or the new one, never a part). Both check the content's SHA-256
against the daemon's. Reads are served while the sandbox runs or is paused (offline from its
writable layer); writes too, except while it is memory-paused (ConflictError)."""

from __future__ import annotations

import asyncio
import collections
import hashlib
from typing import TYPE_CHECKING, Any, BinaryIO, Deque, Iterator, List, Literal, Union, overload

from ._portal import portal
from ._schema import api
from .errors import InternalError
from .types import EntryInfo

if TYPE_CHECKING:
    from .sandbox import AsyncSandbox

CHUNK_BYTES = 1 << 20
# Upload chunks in flight: enough to keep the socket busy, small next to the daemon's
# 16 MiB message limit and its memory.
CHUNKS_IN_FLIGHT = 4

Data = Union[str, bytes, bytearray, memoryview, BinaryIO]


class EntryList(List[EntryInfo]):
    """The entries of a directory; ``truncated`` when there were more than the limit."""

    truncated: bool = False


class _Collect(api.ByteSink.Server):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        self.content = bytearray()

    async def write(self, data: bytes, **_: Any) -> None:
        self.content.extend(data)

    async def done(self, **_: Any) -> None:
        """The daemon's last call before readFile returns: every write came before it."""


def _chunks(data: Data) -> Iterator[bytes]:
    if isinstance(data, str):
        data = data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        view = memoryview(data).cast("B")
        for start in range(0, len(view), CHUNK_BYTES):
            yield bytes(view[start:start + CHUNK_BYTES])
        return
    while True:
        block = data.read(CHUNK_BYTES)
        if not block:
            return
        yield block if isinstance(block, bytes) else block.encode("utf-8")


def _check_digest(path: str, what: str, local: bytes, remote: bytes) -> None:
    if local != bytes(remote):
        raise InternalError(
            f"file {path} {what}: its SHA-256 is {local.hex()} here but {bytes(remote).hex()} in "
            "the sandbox; retry"
        )


class AsyncFiles:
    """The files of one sandbox (``sbx.files``), for asyncio code. Paths are absolute paths in
    the sandbox."""

    def __init__(self, sandbox: "AsyncSandbox") -> None:
        self._sandbox = sandbox

    def _call(self, what: str, awaitable: Any) -> Any:
        return self._sandbox._client._call(what, awaitable)

    @overload
    async def read(self, path: str, format: Literal["text"] = ...) -> str: ...
    @overload
    async def read(self, path: str, format: Literal["bytes"]) -> bytes: ...

    async def read(self, path: str, format: str = "text") -> Union[str, bytes]:
        """The file's content: str (UTF-8) or, with ``format="bytes"``, bytes."""
        sink = _Collect()
        r = await self._call(f"read {path}", self._sandbox._cap.readFile(path, sink))
        content = bytes(sink.content)
        _check_digest(path, "arrived damaged", hashlib.sha256(content).digest(), r.sha256)
        return content if format == "bytes" else content.decode("utf-8")

    async def write(self, path: str, data: Data, *, mode: int = 0o644) -> EntryInfo:
        """Writes (creates or replaces) a file: str (as UTF-8), bytes, or a binary file object
        read to its end. Returns the new file's info."""
        # sandboxd keeps a few uploads open per connection (docs/api.md "Limits"): more writes
        # at once than that wait here for a place instead of being refused.
        async with self._sandbox._client._upload_places:
            r, digest = await self._upload(path, data, mode)
        _check_digest(path, "was written damaged", digest.digest(), r.sha256)
        return EntryInfo._from(r.info)

    async def _upload(self, path: str, data: Data, mode: int) -> Any:
        promise = self._sandbox._cap.writeFile(path, mode)
        upload = promise.upload  # pipelined: the chunks go out before writeFile answers
        digest = hashlib.sha256()
        in_flight: Deque["asyncio.Future[Any]"] = collections.deque()
        try:
            for chunk in _chunks(data):
                digest.update(chunk)
                in_flight.append(asyncio.ensure_future(upload.write(chunk)))
                if len(in_flight) >= CHUNKS_IN_FLIGHT:
                    await self._call(f"write {path}", in_flight.popleft())
            while in_flight:
                await self._call(f"write {path}", in_flight.popleft())
            r = await self._call(f"write {path}", upload.commit())
        except BaseException:
            for f in in_flight:
                f.cancel()
            raise
        return r, digest

    async def list(self, path: str, *, limit: int = 0) -> EntryList:
        """The entries of a directory (at most `limit`; 0: the daemon's default)."""
        r = await self._call(f"list {path}", self._sandbox._cap.listDir(path, limit))
        entries = EntryList(EntryInfo._from(e.info, e.name) for e in r.entries)
        entries.truncated = r.truncated
        return entries

    async def get_info(self, path: str) -> EntryInfo:
        """The type, size, mode and modification time of a path (NotFoundError if absent)."""
        r = await self._call(f"stat {path}", self._sandbox._cap.stat(path))
        return EntryInfo._from(r.info)

    async def exists(self, path: str) -> bool:
        """Whether the path exists."""
        from .errors import NotFoundError

        try:
            await self.get_info(path)
            return True
        except NotFoundError:
            return False

    async def make_dir(self, path: str, *, parents: bool = True) -> None:
        """Makes a directory (and its missing parents, unless ``parents=False``)."""
        await self._call(f"makeDir {path}", self._sandbox._cap.makeDir(path, parents))

    async def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file, or a directory (with everything in it when ``recursive``)."""
        await self._call(f"remove {path}", self._sandbox._cap.remove(path, recursive))

    async def rename(self, old_path: str, new_path: str) -> None:
        """Renames (moves) a file or directory."""
        await self._call(f"rename {old_path}", self._sandbox._cap.rename(old_path, new_path))


class Files:
    """The files of one sandbox (``sbx.files``). Paths are absolute paths in the sandbox."""

    def __init__(self, inner: AsyncFiles) -> None:
        self._async = inner

    @overload
    def read(self, path: str, format: Literal["text"] = ...) -> str: ...
    @overload
    def read(self, path: str, format: Literal["bytes"]) -> bytes: ...

    def read(self, path: str, format: str = "text") -> Union[str, bytes]:
        """The file's content: str (UTF-8) or, with ``format="bytes"``, bytes (exact).
        Served while paused too (from the writable layer)."""
        return portal().run(self._async.read(path, format))  # type: ignore[call-overload]

    def write(self, path: str, data: Data, *, mode: int = 0o644) -> EntryInfo:
        """Writes (creates or replaces) a file atomically: str (as UTF-8), bytes, or a binary
        file object read to its end, sent in 1 MiB chunks. ConflictError while memory-paused."""
        return portal().run(self._async.write(path, data, mode=mode))

    def list(self, path: str, *, limit: int = 0) -> EntryList:
        """The entries of a directory (at most `limit`; 0: the daemon's default);
        ``.truncated`` says whether there were more."""
        return portal().run(self._async.list(path, limit=limit))

    def get_info(self, path: str) -> EntryInfo:
        """The type, size, mode and modification time of a path (NotFoundError if absent)."""
        return portal().run(self._async.get_info(path))

    def exists(self, path: str) -> bool:
        """Whether the path exists."""
        return portal().run(self._async.exists(path))

    def make_dir(self, path: str, *, parents: bool = True) -> None:
        """Makes a directory (and its missing parents, unless ``parents=False``)."""
        portal().run(self._async.make_dir(path, parents=parents))

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Removes a file, or a directory (with everything in it when ``recursive``)."""
        portal().run(self._async.remove(path, recursive=recursive))

    def rename(self, old_path: str, new_path: str) -> None:
        """Renames (moves) a file or directory."""
        portal().run(self._async.rename(old_path, new_path))
