"""Keyset pages of a listing (`Sandbox.list`, `admin.audit`): iterate to get one page (a
list) at a time, or call `next_items()` while `has_next`. Each page is one call; the page
token of the last page is empty."""

from __future__ import annotations

from typing import AsyncIterator, Awaitable, Callable, Generic, Iterator, List, Tuple, TypeVar

from ._portal import portal

T = TypeVar("T")
Fetch = Callable[[str], Awaitable[Tuple[List[T], str]]]


class AsyncPaginator(Generic[T]):
    """Pages of a listing, for asyncio code: ``async for page in paginator``."""

    def __init__(self, fetch: "Fetch[T]") -> None:
        self._fetch = fetch
        self._token = ""
        self._done = False

    @property
    def has_next(self) -> bool:
        """Whether another page may follow (the last one fetched had a next page token)."""
        return not self._done

    @property
    def next_token(self) -> str:
        """The page token the next page is fetched with ("" before the first page)."""
        return self._token

    async def next_items(self) -> List[T]:
        """The next page ([] once there is none)."""
        if self._done:
            return []
        items, token = await self._fetch(self._token)
        self._token = token
        self._done = token == ""
        return items

    async def __aiter__(self) -> AsyncIterator[List[T]]:
        while self.has_next:
            yield await self.next_items()


class Paginator(Generic[T]):
    """Pages of a listing: ``for page in paginator``."""

    def __init__(self, inner: AsyncPaginator[T]) -> None:
        self._inner = inner

    @property
    def has_next(self) -> bool:
        """Whether another page may follow."""
        return self._inner.has_next

    @property
    def next_token(self) -> str:
        """The page token the next page is fetched with ("" before the first page)."""
        return self._inner.next_token

    def next_items(self) -> List[T]:
        """The next page ([] once there is none)."""
        return portal().run(self._inner.next_items())

    def __iter__(self) -> Iterator[List[T]]:
        while self.has_next:
            yield self.next_items()
