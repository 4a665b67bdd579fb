"""The event stream (the token's "admin" scope): every event of the log, decoded.

    import sandboxd.events
    for event in sandboxd.events.follow(from_offset={0: 120}):
        print(event.partition, event.offset, event.sandbox_id, event.kind, event.payload)

Asyncio code: ``async for event in client.admin.events(...)``. One sandbox's events:
``sbx.watch()``."""

from __future__ import annotations

from typing import Iterator, Mapping, Optional

from .admin import _default
from .client import Client
from .types import Event


def follow(from_offset: Optional[Mapping[int, int]] = None, *, follow: bool = True,
           addr: Optional[str] = None, token: Optional[str] = None,
           client: Optional[Client] = None) -> Iterator[Event]:
    """Every event from `from_offset` (partition → offset; partitions not named from 0),
    then live ones as they are appended; with ``follow=False`` the iteration ends at the
    log's end as of the call. Close the iterator (or break) to stop."""
    return _default(addr, token, client).events(from_offset, follow=follow)
