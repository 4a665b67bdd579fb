"""The sync API's engine: one asyncio loop (with its KJ loop) on a private daemon thread,
started on first use and stopped at interpreter exit. Sync calls submit the async API's
coroutines to it and wait, so the sync and async APIs are one implementation.

Callbacks given to the sync API (on_stdout, on_stderr) run on that thread: they must not call
the sync API themselves (that would wait on the thread that has to answer); such a call
raises RuntimeError instead of hanging."""

from __future__ import annotations

import asyncio
import atexit
import gc
import threading
from typing import Any, AsyncIterator, Coroutine, Iterator, Optional, TypeVar

import capnp  # type: ignore[import-untyped]

T = TypeVar("T")


class Portal:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: Optional[asyncio.Event] = None
        self._thread = threading.Thread(target=self._main, name="sandboxd-io", daemon=True)
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        async with capnp.kj_loop():
            self._stop = asyncio.Event()
            self._ready.set()
            await self._stop.wait()
            # The clients made on this loop go with the KJ loop (kj_loop closes them).

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs `coro` on the portal's loop and returns its result (or raises its exception)."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(
                "the sandboxd sync API was called from one of its own callbacks (on_stdout, "
                "on_stderr); use the async API (AsyncSandbox) for that, or call it after run "
                "returns"
            )
        future = asyncio.run_coroutine_threadsafe(_detached(coro), self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def iterate(self, agen: AsyncIterator[T]) -> Iterator[T]:
        """The items of an async iterator, one portal call each; closing the returned iterator
        closes `agen`."""
        try:
            while True:
                try:
                    item: T = self.run(agen.__anext__())  # type: ignore[arg-type]
                except StopAsyncIteration:
                    return
                yield item
        finally:
            aclose = getattr(agen, "aclose", None)
            if aclose is not None:
                self.run(aclose())

    def close(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=10)


async def _detached(coro: Coroutine[Any, Any, T]) -> T:
    """Runs `coro`; an exception it raises leaves without the tracebacks of the portal's
    thread. Their frames hold Cap'n Proto objects, which must be released on this thread
    (_kj.LoopBound), not on the caller's when it drops the exception; cycles they were part of
    are collected here for the same reason."""
    try:
        return await coro
    except BaseException as e:
        seen = set()
        x: Optional[BaseException] = e
        while x is not None and id(x) not in seen:
            seen.add(id(x))
            x.__traceback__ = None
            if x.__suppress_context__:
                x.__context__ = None
            x = x.__cause__ or x.__context__
        del x
        gc.collect(1)
        raise e.with_traceback(None)


_portal: Optional[Portal] = None
_lock = threading.Lock()


def portal() -> Portal:
    global _portal
    with _lock:
        if _portal is None:
            _portal = Portal()
            atexit.register(_portal.close)
        return _portal
