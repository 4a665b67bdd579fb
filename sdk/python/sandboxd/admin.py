"""Administration (the token's "admin" scope): bills, the audit log, and the whole event
stream. `AsyncAdmin` / `Admin` are reached from a client (``client.admin``); the module
functions use the default client:

    import sandboxd.admin
    report = sandboxd.admin.bill("acme", start, end, by="day")
    for page in sandboxd.admin.audit(tenant="acme"): ...
    assert sandboxd.admin.audit_verify().ok

A token without the admin scope gets PermissionDeniedError from every call here."""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, Mapping, Optional, Union

from . import _event_stream
from ._kj import LoopBound
from ._portal import portal
from .client import Client
from .errors import check_choice
from .paginator import AsyncPaginator, Paginator
from .types import AuditCheck, AuditProblem, AuditRow, BillReport, Event, ns_of_time

if TYPE_CHECKING:
    from .client import AsyncClient

Instant = Union[_dt.datetime, int]  # a datetime (naive: UTC) or nanoseconds since the epoch


class AsyncAdmin(LoopBound):
    """Administration calls, for asyncio code (``client.admin``)."""

    def __init__(self, client: "AsyncClient") -> None:
        self._bind_loop(client)
        self._client = client
        self._cap: Any = None
        self._generation = -1

    def _admin(self) -> Any:
        if self._cap is None or self._generation != self._client._generation:
            self._generation = self._client._generation
            # Pipelined: the admin capability's calls go out with Session.admin; without the
            # scope they fail with its PERMISSION_DENIED.
            self._cap = self._client._live_session.admin().admin
        return self._cap

    async def bill(self, tenant: str, start: Instant, end: Instant,
                   by: str = "sandbox") -> BillReport:
        """The bill of `tenant` for [start, end) (whole hours), from the billing read model:
        one line per sandbox (``by="sandbox"``), or per ``"hour"`` or ``"day"``."""
        r = await self._client._call("bill", self._admin().bill(
            tenant, ns_of_time(start), ns_of_time(end),
            check_choice("bill grouping", by, ("sandbox", "hour", "day"))))
        return BillReport._from(r.report)

    def audit(self, *, tenant: str = "", sandbox_id: str = "", start: Optional[Instant] = None,
              end: Optional[Instant] = None, limit: int = 100) -> "AsyncPaginator[AuditRow]":
        """Pages of audit rows by time, filtered by tenant, sandbox and [start, end)."""

        async def fetch(page_token: str) -> Any:
            req = self._admin().audit_request()
            q = req.query
            q.tenant, q.sandboxId, q.pageToken, q.limit = tenant, sandbox_id, page_token, limit
            q.fromNs = ns_of_time(start) if start is not None else 0
            q.toNs = ns_of_time(end) if end is not None else 0
            r = await self._client._call("audit", req.send())
            return [AuditRow._from(x) for x in r.rows], r.nextPageToken

        return AsyncPaginator(fetch)

    async def audit_verify(self, tenant: str = "") -> AuditCheck:
        """Recomputes the audit log's hash chains ("" = every tenant); ``ok`` when they hold,
        else ``problems`` names each row that does not fit."""
        r = await self._client._call("auditVerify", self._admin().auditVerify(tenant))
        return AuditCheck(r.ok, r.checkedRows, [AuditProblem._from(p) for p in r.problems])

    def events(self, from_offset: Optional[Mapping[int, int]] = None, *,
               follow: bool = True) -> AsyncIterator[Event]:
        """The whole event stream from `from_offset` (partition → offset; partitions not named
        start at 0), decoded. With ``follow`` it goes on with live events; without, it ends at
        the log's end as of the call. Resume from ``event.offset + 1`` of each partition."""
        offsets = dict(from_offset or {})

        async def start(sink: Any) -> Any:
            req = self._admin().tail_request()
            items = req.init("from", len(offsets))
            for i, (partition, offset) in enumerate(sorted(offsets.items())):
                items[i].partition, items[i].offset = partition, offset
            req.follow = follow
            req.sink = sink
            r = await self._client._call("tail", req.send())
            return r.handle

        return _event_stream.events(start)


class Admin:
    """Administration calls (``client.admin``), blocking."""

    def __init__(self, inner: AsyncAdmin) -> None:
        self._async = inner

    def bill(self, tenant: str, start: Instant, end: Instant, by: str = "sandbox") -> BillReport:
        """The bill of `tenant` for [start, end) in whole hours (datetimes, or ns since the
        epoch): lines by ``"sandbox"``, ``"hour"`` or ``"day"``, and totals in micro-dollars."""
        return portal().run(self._async.bill(tenant, start, end, by))

    def audit(self, *, tenant: str = "", sandbox_id: str = "", start: Optional[Instant] = None,
              end: Optional[Instant] = None, limit: int = 100) -> "Paginator[AuditRow]":
        """Pages of audit rows by time ("" = every tenant, every sandbox; [start, end))."""
        return Paginator(self._async.audit(tenant=tenant, sandbox_id=sandbox_id, start=start,
                                           end=end, limit=limit))

    def audit_verify(self, tenant: str = "") -> AuditCheck:
        """Recomputes the audit log's hash chains; ``ok`` when they hold."""
        return portal().run(self._async.audit_verify(tenant))

    def events(self, from_offset: Optional[Mapping[int, int]] = None, *,
               follow: bool = True) -> Iterator[Event]:
        """The whole event stream from `from_offset` (partition → offset), decoded; live
        events follow unless ``follow=False``. Close the iterator to stop."""
        return portal().iterate(self._async.events(from_offset, follow=follow))


def _default(addr: Optional[str], token: Optional[str], client: Optional[Client]) -> Admin:
    from .client import AsyncClient

    if client is not None:
        return client.admin
    return Admin(portal().run(AsyncClient.default(addr, token)).admin)


def bill(tenant: str, start: Instant, end: Instant, by: str = "sandbox", *,
         addr: Optional[str] = None, token: Optional[str] = None,
         client: Optional[Client] = None) -> BillReport:
    """The bill of `tenant` for [start, end) (see :meth:`Admin.bill`)."""
    return _default(addr, token, client).bill(tenant, start, end, by)


def audit(*, tenant: str = "", sandbox_id: str = "", start: Optional[Instant] = None,
          end: Optional[Instant] = None, limit: int = 100, addr: Optional[str] = None,
          token: Optional[str] = None, client: Optional[Client] = None) -> "Paginator[AuditRow]":
    """Pages of audit rows (see :meth:`Admin.audit`)."""
    return _default(addr, token, client).audit(tenant=tenant, sandbox_id=sandbox_id, start=start,
                                               end=end, limit=limit)


def audit_verify(tenant: str = "", *, addr: Optional[str] = None, token: Optional[str] = None,
                 client: Optional[Client] = None) -> AuditCheck:
    """Recomputes the audit log's hash chains (see :meth:`Admin.audit_verify`)."""
    return _default(addr, token, client).audit_verify(tenant)
