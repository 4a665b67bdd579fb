"""The KJ event loop under asyncio: pycapnp runs every RPC on a KJ loop bound to the running
asyncio loop (`capnp.kj_loop()`). The SDK starts one on first use when the application has
not, and keeps it until that asyncio loop cancels its remaining tasks (as `asyncio.run` does
when it returns); the SDK's default clients of that loop are closed first."""

from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Awaitable, Callable, List, Optional, Set

import capnp  # type: ignore[import-untyped]

# Holds the keeper tasks (asyncio keeps tasks only weakly).
_keepers: Set["asyncio.Task[None]"] = set()
# Per asyncio loop: what to close before its KJ loop goes (only loops whose KJ loop is ours).
_closers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, List[Callable[[], Awaitable[None]]]]" = (
    weakref.WeakKeyDictionary()
)


async def ensure_kj_loop() -> None:
    """Makes sure a KJ event loop runs on the current asyncio loop."""
    loop = asyncio.get_running_loop()
    if hasattr(loop, "_kj_loop"):
        return
    context = capnp.kj_loop()
    await context.__aenter__()
    _closers[loop] = []
    task = loop.create_task(_keep(loop, context), name="sandboxd-kj-loop")
    _keepers.add(task)
    task.add_done_callback(_keepers.discard)


def on_loop_end(closer: Callable[[], Awaitable[None]]) -> None:
    """Runs `closer` when the KJ loop the SDK started on the current asyncio loop ends (nothing
    when the application runs its own KJ loop: it closes what it made)."""
    closers = _closers.get(asyncio.get_running_loop())
    if closers is not None:
        closers.append(closer)


async def _keep(loop: asyncio.AbstractEventLoop, context: Any) -> None:
    try:
        await loop.create_future()
    finally:
        for closer in _closers.pop(loop, []):
            try:
                await closer()
            except Exception:  # the connection may be gone already; nothing left to do
                pass
        await context.__aexit__(None, None, None)


class LoopBound:
    """Base of the SDK's objects that hold Cap'n Proto references (capabilities, the RPC
    system). KJ must release those on the thread of their event loop while the connection is
    open: destroying one elsewhere aborts the process. The sync API's objects live on the
    caller's thread, so when the last reference to such an object goes on another thread
    (or the garbage collector runs there), its attributes are handed to its loop's thread to
    be dropped there."""

    _loop: asyncio.AbstractEventLoop
    _thread: int

    def _bind_loop(self, like: "Optional[LoopBound]" = None) -> None:
        """Binds to the running loop's thread, or to the same as `like`."""
        if like is not None:
            self._loop, self._thread = like._loop, like._thread
        else:
            self._loop = asyncio.get_running_loop()
            self._thread = threading.get_ident()

    def __del__(self) -> None:
        state = self.__dict__
        loop = state.get("_loop")
        if loop is None or state.get("_thread") == threading.get_ident() or loop.is_closed():
            return
        moved = dict(state)
        state.clear()
        try:
            # Only `moved` holds the references now, and it is emptied on the loop's thread,
            # whenever this thread lets go of it.
            loop.call_soon_threadsafe(moved.clear)
        except RuntimeError:  # the loop closed meanwhile: its connections are gone too
            pass
