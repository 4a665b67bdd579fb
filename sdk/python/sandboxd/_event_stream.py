"""A stream of events from the daemon (Sandbox.watch, Admin.tail) as an async iterator: the
daemon calls our EventSink; each event is decoded at once (the message it came in does not
outlive the call) and queued. The queue is bounded, so a consumer that does not keep up
slows the daemon's stream (Cap'n Proto's flow control) instead of filling memory. Closing
the iterator drops the stream's handle, which ends the stream in the daemon."""

from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Awaitable, Callable, Union

from ._schema import api
from .errors import error_from_description
from .types import Event

QUEUE_EVENTS = 256


class _End:
    def __init__(self, reason: str) -> None:
        self.reason = reason


class _Sink(api.EventSink.Server):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        self.queue: "asyncio.Queue[Union[Event, _End]]" = asyncio.Queue(QUEUE_EVENTS)

    async def event(self, event: Any, partition: int, offset: int, **_: Any) -> None:
        await self.queue.put(Event._from(event, partition, offset))

    async def end(self, reason: str, **_: Any) -> None:
        await self.queue.put(_End(reason))


# Reasons a stream ends well: the sandbox was deleted (watch), the end offsets as of the
# call were reached (tail without follow). Anything else is "<code>: <message>".
_NORMAL_ENDS = ("deleted", "caught up")


async def events(start: Callable[[Any], Awaitable[Any]]) -> AsyncIterator[Event]:
    """The events of the stream `start(sink)` opens (it returns the stream's handle)."""
    sink = _Sink()
    handle = await start(sink)
    try:
        while True:
            item = await sink.queue.get()
            if isinstance(item, _End):
                if item.reason in _NORMAL_ENDS:
                    return
                raise error_from_description(item.reason)
            yield item
    finally:
        del handle
