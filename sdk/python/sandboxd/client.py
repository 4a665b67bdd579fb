"""A connection to sandboxd: one socket, authenticated once, shared by every sandbox object
made through it (`AsyncClient` for asyncio, `Client` for plain code).

Most programs never make one: `Sandbox.create()` and the other entry points use a default
client per (address, token), made on first use from their arguments or SANDBOXD_ADDR and
SANDBOXD_TOKEN (see _settings.py). Make one to pick its options, or to close it early:

    async with await AsyncClient.connect("unix:/var/lib/sandboxd/sandboxd.sock", token) as c:
        sbx = await AsyncSandbox.create(client=c)
"""

from __future__ import annotations

import asyncio
import weakref
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

import capnp  # type: ignore[import-untyped]

from . import _kj, _settings
from ._kj import LoopBound
from ._call import call
from ._portal import portal
from ._schema import api
from .errors import UnavailableError
from .types import Identity

if TYPE_CHECKING:
    from .admin import Admin, AsyncAdmin

DEFAULT_REQUEST_TIMEOUT = 60.0
UPLOADS_PER_CONNECTION = 8

_defaults: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Dict[Tuple[Any, ...], asyncio.Task[AsyncClient]]]" = (
    weakref.WeakKeyDictionary()
)


class AsyncClient(LoopBound):
    """An authenticated connection to sandboxd, for asyncio code.

    Attributes:
        address: the daemon's address (``unix:/path`` or ``tcp:host:port``).
        identity: the tenant, principal and scopes the token stands for.
        request_timeout: the client-side deadline of each call in seconds (None: none);
            past it a call raises :class:`~sandboxd.TimeoutError`.
    """

    def __init__(self, settings: "_settings.Settings", rpc: Any, stream: Any, session: Any,
                 identity: Identity, request_timeout: Optional[float]) -> None:
        self._bind_loop()
        self.address = settings.address
        self.identity = identity
        self.request_timeout = request_timeout
        self._settings = settings
        self._rpc = rpc
        self._stream = stream
        self._session = session
        self._closed = False
        # Counts the connections made: a sandbox or admin handle opened on an earlier one
        # opens itself again on the current one (AsyncSandbox._cap).
        self._generation = 0
        # Uploads (file writes) open at once on this connection: below the daemon's
        # max_uploads_per_connection (16), so concurrent writes queue here.
        self._upload_places = asyncio.Semaphore(UPLOADS_PER_CONNECTION)

    @classmethod
    async def connect(
        cls,
        addr: Optional[str] = None,
        token: Optional[str] = None,
        *,
        token_file: Optional[str] = None,
        tls_ca_file: Optional[str] = None,
        request_timeout: Optional[float] = DEFAULT_REQUEST_TIMEOUT,
    ) -> "AsyncClient":
        """Connects and authenticates.

        Args:
            addr: ``unix:PATH`` or ``tcp:HOST:PORT``; default SANDBOXD_ADDR, else
                ``unix:./var/sandboxd.sock``.
            token: the bearer token; default SANDBOXD_TOKEN, else the content of
                ``token_file`` (default ``./var/dev-token``).
            tls_ca_file: PEM certificates to trust for TLS (TCP to a host that is not
                loopback); default the system's trust store.
            request_timeout: seconds each call may take before TimeoutError (None: no limit).

        Raises:
            UnavailableError: the daemon cannot be reached.
            PermissionDeniedError: the token is unknown (or there is none).
        """
        settings = _settings.resolve(addr, token, token_file, tls_ca_file)
        await _kj.ensure_kj_loop()

        async def open_session() -> "AsyncClient":
            rpc, stream, r = await _open(settings)
            return cls(settings, rpc, stream, r.session, Identity._from(r.identity), request_timeout)

        return await call(f"connecting to {settings.address}", open_session(), request_timeout)

    @classmethod
    async def default(
        cls,
        addr: Optional[str] = None,
        token: Optional[str] = None,
        *,
        token_file: Optional[str] = None,
        tls_ca_file: Optional[str] = None,
    ) -> "AsyncClient":
        """The shared client of the running event loop for these settings, connected on first
        use (and again after it was closed). It closes when the loop ends."""
        settings = _settings.resolve(addr, token, token_file, tls_ca_file)
        loop = asyncio.get_running_loop()
        clients = _defaults.setdefault(loop, {})
        key = (settings.address, settings.token, settings.tls_ca_file)
        # One connection however many coroutines ask at once: they share its connecting task.
        connecting = clients.get(key)
        if connecting is not None and connecting.done() and (
                connecting.exception() is not None or connecting.result()._closed):
            connecting = None
        if connecting is None:
            connecting = loop.create_task(cls._connect_default(settings))
            clients[key] = connecting
        return await asyncio.shield(connecting)

    @classmethod
    async def _connect_default(cls, settings: "_settings.Settings") -> "AsyncClient":
        client = await cls.connect(settings.address, settings.token,
                                   tls_ca_file=settings.tls_ca_file)
        _kj.on_loop_end(client.close)
        return client

    @property
    def admin(self) -> "AsyncAdmin":
        """Billing, the audit log and the event stream (needs the token's admin scope)."""
        from .admin import AsyncAdmin

        return AsyncAdmin(self)

    async def version(self) -> Tuple[str, int]:
        """The daemon's version and API level."""
        gateway = self._rpc.bootstrap().cast_as(api.Gateway)
        r = await self._call("version", gateway.version())
        return r.version, r.apiLevel

    async def close(self) -> None:
        """Closes the connection; sandboxes made through it keep running (delete them first
        if they should not)."""
        if self._closed:
            return
        self._closed = True
        self._session = None
        self._rpc.close()
        self._stream.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def _call(self, what: str, awaitable: Any, timeout: Any = "default") -> Any:
        try:
            return await call(what, awaitable,
                              self.request_timeout if timeout == "default" else timeout)
        except UnavailableError as e:
            if e.connection_lost and not self._closed:
                await self._reconnect()
            raise

    async def _reconnect(self) -> None:
        """Connects and authenticates again after the connection was lost, so that the next
        call is answered: only the calls in flight when it went fail. When the daemon cannot
        be reached yet, the next call that fails for it tries again."""
        try:
            rpc, stream, r = await call(f"connecting to {self.address}", _open(self._settings),
                                        self.request_timeout)
        except UnavailableError:
            return
        old_rpc, old_stream = self._rpc, self._stream
        self._rpc, self._stream, self._session = rpc, stream, r.session
        self._generation += 1
        for closing in (old_rpc.close, old_stream.close):
            try:
                closing()
            except Exception:  # the old connection is gone already
                pass

    @property
    def _live_session(self) -> Any:
        if self._closed:
            raise UnavailableError(f"the client of {self.address} is closed; connect again")
        return self._session


async def _open(settings: "_settings.Settings") -> Tuple[Any, Any, Any]:
    """A connection to the daemon, authenticated: (rpc client, stream, authenticate's answer)."""
    try:
        stream = await _settings.open_stream(settings)
    except OSError as e:
        raise UnavailableError(
            f"cannot connect to sandboxd at {settings.address}: {e.strerror or e}; check "
            "that it runs (scripts/start) and SANDBOXD_ADDR"
        ) from None
    rpc = capnp.TwoPartyClient(stream)
    try:
        gateway = rpc.bootstrap().cast_as(api.Gateway)
        r = await gateway.authenticate(settings.token)
    except BaseException:
        rpc.close()
        stream.close()
        raise
    return rpc, stream, r


async def resolve_client(client: Optional[AsyncClient], addr: Optional[str],
                         token: Optional[str]) -> AsyncClient:
    """`client`, or the loop's default client for `addr` and `token`."""
    if client is not None:
        return client
    return await AsyncClient.default(addr, token)


class Client:
    """An authenticated connection to sandboxd, for plain (blocking) code: the same as
    :class:`AsyncClient`, run on the SDK's private event loop thread."""

    def __init__(self, inner: AsyncClient) -> None:
        self._async = inner

    @classmethod
    def connect(
        cls,
        addr: Optional[str] = None,
        token: Optional[str] = None,
        *,
        token_file: Optional[str] = None,
        tls_ca_file: Optional[str] = None,
        request_timeout: Optional[float] = DEFAULT_REQUEST_TIMEOUT,
    ) -> "Client":
        """Connects and authenticates (arguments as :meth:`AsyncClient.connect`)."""
        return cls(portal().run(AsyncClient.connect(
            addr, token, token_file=token_file, tls_ca_file=tls_ca_file,
            request_timeout=request_timeout)))

    @property
    def address(self) -> str:
        return self._async.address

    @property
    def identity(self) -> Identity:
        return self._async.identity

    @property
    def admin(self) -> "Admin":
        """Billing, the audit log and the event stream (needs the token's admin scope)."""
        from .admin import Admin

        return Admin(self._async.admin)

    def version(self) -> Tuple[str, int]:
        """The daemon's version and API level."""
        return portal().run(self._async.version())

    def close(self) -> None:
        """Closes the connection; sandboxes made through it keep running."""
        portal().run(self._async.close())

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def async_of(client: Optional[Client]) -> Optional[AsyncClient]:
    return client._async if client is not None else None
