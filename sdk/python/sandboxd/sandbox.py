"""Sandboxes: `Sandbox` (blocking) and `AsyncSandbox` (asyncio), the same API.

    from sandboxd import Sandbox
    with Sandbox.create(template="base", metadata={"agent": "x"}) as sbx:   # deleted on exit
        print(sbx.commands.run("echo hi").stdout)

A sandbox object holds a capability for one sandbox of the token's tenant. Another tenant's
sandbox cannot be reached: its id answers NotFoundError, exactly as a missing one."""

from __future__ import annotations

import inspect
from typing import (Any, AsyncIterator, Callable, Iterable, Iterator, List, Mapping, Optional,
                    Tuple, Union)

from . import _event_stream
from ._kj import LoopBound
from .client import AsyncClient, Client, async_of, resolve_client
from ._portal import portal
from .commands import AsyncCommands, Commands, OutputCallback
from .files import AsyncFiles, Files
from .paginator import AsyncPaginator, Paginator
from .errors import check_choice
from .languages import RunResult, argv_for, language_of
from .types import Event, SandboxInfo, SandboxSummary, SnapshotInfo

_KEEP = object()  # a timeout setting left as it is
STATES = ("creating", "running", "pausing", "paused", "resuming", "deleting", "deleted",
          "failed")


def _set_timeouts(t: Any, timeout: Any = _KEEP, idle_timeout: Any = _KEEP, lifetime: Any = _KEEP,
                  paused_retention: Any = _KEEP, on_timeout: Any = _KEEP) -> None:
    """Fills a TimeoutSettings builder: seconds, 0 to turn one off, _KEEP to leave it."""
    for name, value in (("timeout", timeout), ("idleTimeout", idle_timeout),
                        ("lifetime", lifetime), ("pausedRetention", paused_retention)):
        if value is not _KEEP:
            getattr(t, name).ns = int((value or 0) * 1e9)
    if on_timeout is _KEEP:
        return
    check_choice("on_timeout", on_timeout, ("delete", "pause", "pause:filesystem", "pause:memory"))
    if on_timeout == "delete":
        t.onTimeout.delete = None
    else:
        t.onTimeout.pause = "memory" if on_timeout == "pause:memory" else "filesystem"


def _network_policy(network: Union[str, Iterable[str]],
                    allowed_hosts: Iterable[str]) -> Tuple[str, List[str]]:
    """The schema's mode and rules for ``create(network=..., allowed_hosts=...)``."""
    hosts = list(allowed_hosts)
    if not isinstance(network, str):
        return "allowList", list(network) + hosts
    mode = {"all": "full", "allowlist": "allowList"}.get(network, network)
    return check_choice("network", mode, ("none", "full", "allowList")), hosts


def _given(**settings: Any) -> Mapping[str, Any]:
    """The timeout settings that were given (None means "not given" here)."""
    return {k: v for k, v in settings.items() if v is not None}


def _states(state: Union[None, str, Iterable[str]]) -> List[str]:
    if state is None:
        return []
    return [state] if isinstance(state, str) else list(state)


class AsyncSandbox(LoopBound):
    """A sandbox, for asyncio code: the same calls as :class:`Sandbox`, awaited.

    Attributes:
        sandbox_id: the sandbox's id (``sb-...``).
    """

    def __init__(self, client: AsyncClient, cap: Any, sandbox_id: str) -> None:
        self._bind_loop()
        self._client = client
        self._opened = cap
        self._generation = client._generation
        self.sandbox_id = sandbox_id

    @property
    def _cap(self) -> Any:
        """The sandbox's capability on the client's current connection (opened again,
        pipelined, after the client reconnected)."""
        if self._generation != self._client._generation:
            self._opened = self._client._live_session.open(self.sandbox_id).sandbox
            self._generation = self._client._generation
        return self._opened

    @property
    def commands(self) -> AsyncCommands:
        """Run commands in the sandbox."""
        return AsyncCommands(self)

    @property
    def files(self) -> AsyncFiles:
        """Read and write the sandbox's files."""
        return AsyncFiles(self)

    @property
    def client(self) -> AsyncClient:
        """The connection this sandbox is reached through."""
        return self._client

    @classmethod
    async def create(
        cls,
        template: str = "base",
        *,
        timeout: Optional[float] = None,
        envs: Optional[Mapping[str, str]] = None,
        secret_envs: Optional[Mapping[str, str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
        runtime: Optional[str] = None,
        memory_mib: int = 0,
        cpu_millicores: int = 0,
        pids: int = 0,
        disk_mib: int = 0,
        idle_timeout: Optional[float] = None,
        lifetime: Optional[float] = None,
        paused_retention: Optional[float] = None,
        on_timeout: Optional[str] = None,
        network: Union[str, Iterable[str]] = "none",
        allowed_hosts: Iterable[str] = (),
        request_id: Optional[str] = None,
        addr: Optional[str] = None,
        token: Optional[str] = None,
        client: Optional[AsyncClient] = None,
        request_timeout: Optional[float] = None,
        snapshot: Optional[str] = None,
    ) -> "AsyncSandbox":
        """Creates a sandbox and returns once it runs (arguments as :meth:`Sandbox.create`)."""
        c = await resolve_client(client, addr, token)
        req = c._live_session.create_request()
        r = req.request
        # A fork takes its snapshot's template and runtime.
        r.template = "" if snapshot and template == "base" else template
        r.fromSnapshot = snapshot or ""
        r.runtime = runtime or ""
        r.limits.memoryMib, r.limits.cpuMillicores = memory_mib, cpu_millicores
        r.limits.pids, r.limits.diskMib = pids, disk_mib
        _set_timeouts(r.timeouts, **_given(timeout=timeout, idle_timeout=idle_timeout,
                                           lifetime=lifetime, paused_retention=paused_retention,
                                           on_timeout=on_timeout))
        variables = [(k, v, False) for k, v in (envs or {}).items()]
        variables += [(k, v, True) for k, v in (secret_envs or {}).items()]
        if variables:
            env = r.init("env", len(variables))
            for i, (k, v, secret) in enumerate(variables):
                env[i].name, env[i].value, env[i].secret = k, v, secret
        mode, hosts = _network_policy(network, allowed_hosts)
        r.network.mode = mode
        r.network.allowedHosts = hosts
        labels = r.init("labels", len(metadata or {}))
        for i, (k, v) in enumerate((metadata or {}).items()):
            labels[i].key, labels[i].value = k, v
        r.clientRequestId = request_id or ""
        timeout_s = request_timeout if request_timeout is not None else c.request_timeout
        created = await c._call("create", req.send(), timeout_s)
        return cls(c, created.sandbox, created.info.id)

    @classmethod
    async def connect(cls, sandbox_id: str, *, addr: Optional[str] = None,
                      token: Optional[str] = None, client: Optional[AsyncClient] = None,
                      resume: bool = False) -> "AsyncSandbox":
        """An existing sandbox of the token's tenant (NotFoundError otherwise); with
        ``resume=True`` a paused one is resumed first, as E2B's ``connect`` does."""
        c = await resolve_client(client, addr, token)
        r = await c._call(f"open {sandbox_id}", c._live_session.open(sandbox_id))
        sbx = cls(c, r.sandbox, sandbox_id)
        if resume and (await sbx.get_info()).state == "paused":
            await sbx.resume()
        return sbx

    @classmethod
    def list(
        cls,
        *,
        state: Union[None, str, Iterable[str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
        include_deleted: bool = False,
        limit: int = 100,
        addr: Optional[str] = None,
        token: Optional[str] = None,
        client: Optional[AsyncClient] = None,
    ) -> "AsyncPaginator[SandboxSummary]":
        """Pages of the tenant's sandboxes, newest first (arguments as :meth:`Sandbox.list`)."""
        states = [check_choice("state", s, STATES) for s in _states(state)]
        labels = dict(metadata or {})

        async def fetch(page_token: str) -> Any:
            c = await resolve_client(client, addr, token)
            req = c._live_session.list_request()
            req.filter.states = states
            items = req.filter.init("labels", len(labels))
            for i, (k, v) in enumerate(labels.items()):
                items[i].key, items[i].value = k, v
            req.filter.includeDeleted = include_deleted
            req.pageToken = page_token
            req.limit = limit
            r = await c._call("list", req.send())
            return [SandboxSummary._from(s) for s in r.sandboxes], r.nextPageToken

        return AsyncPaginator(fetch)

    @staticmethod
    async def get_info_of(sandbox_id: str, *, addr: Optional[str] = None,
                          token: Optional[str] = None,
                          client: Optional[AsyncClient] = None) -> SandboxInfo:
        """A sandbox's info by id, from its actor (NotFoundError when deleted or unknown)."""
        c = await resolve_client(client, addr, token)
        r = await c._call(f"get {sandbox_id}", c._live_session.get(sandbox_id))
        return SandboxInfo._from(r.info)

    @staticmethod
    async def redact(sandbox_id: str, reason: str = "", *, addr: Optional[str] = None,
                     token: Optional[str] = None, client: Optional[AsyncClient] = None) -> None:
        """Removes a deleted sandbox's labels, command lines, paths and operation messages
        from sandboxd's read models (the audit chain still verifies); ConflictError until it
        is deleted, NotFoundError for one this tenant does not have. A repeat does nothing."""
        c = await resolve_client(client, addr, token)
        await c._call(f"redact {sandbox_id}", c._live_session.redact(sandbox_id, reason))

    async def get_info(self) -> SandboxInfo:
        """The sandbox as its actor knows it now (state, limits, timeouts, ...)."""
        r = await self._client._call(f"info of {self.sandbox_id}", self._cap.info())
        return SandboxInfo._from(r.info)

    async def is_running(self) -> bool:
        """Whether the sandbox is running."""
        return (await self.get_info()).state == "running"

    async def run(self, language: str, code: str, *, timeout: Optional[float] = None,
                  envs: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
                  on_stdout: Optional[OutputCallback] = None,
                  on_stderr: Optional[OutputCallback] = None) -> RunResult:
        """Runs `code` with `language`'s interpreter (see :meth:`Sandbox.run`)."""
        argv = argv_for(language)
        both: List[str] = []

        def tee(callback: Optional[OutputCallback]) -> OutputCallback:
            async def deliver(text: str) -> None:
                both.append(text)
                if callback is not None:
                    r = callback(text)
                    if inspect.isawaitable(r):
                        await r
            return deliver

        r = await self.commands.run(argv, stdin=code, timeout=timeout, envs=envs, cwd=cwd,
                                    on_stdout=tee(on_stdout), on_stderr=tee(on_stderr))
        return RunResult(language=language_of(language), exit_code=r.exit_code,
                         stdout=r.stdout, stderr=r.stderr, output="".join(both), command=r)

    async def snapshot(self, name: str = "") -> SnapshotInfo:
        """A read-only snapshot of the sandbox's files (see :meth:`Sandbox.snapshot`)."""
        r = await self._client._call(f"snapshot {self.sandbox_id}", self._cap.snapshot(name))
        return SnapshotInfo._from(r.snapshot)

    async def fork(self, **create_args: Any) -> "AsyncSandbox":
        """A snapshot, then a new sandbox from it (see :meth:`Sandbox.fork`)."""
        s = await self.snapshot(f"fork of {self.sandbox_id}")
        create_args.setdefault("client", self._client)
        return await AsyncSandbox.create(snapshot=s.snapshot_id, **create_args)

    async def pause(self, mode: str = "filesystem") -> SandboxInfo:
        """Pauses the sandbox (``"filesystem"`` or ``"memory"``); answers once paused."""
        r = await self._client._call(f"pause {self.sandbox_id}", self._cap.pause(
            check_choice("pause mode", mode, ("filesystem", "memory"))))
        return SandboxInfo._from(r.info)

    async def resume(self) -> SandboxInfo:
        """Resumes a paused sandbox; answers once it runs."""
        r = await self._client._call(f"resume {self.sandbox_id}", self._cap.resume())
        return SandboxInfo._from(r.info)

    async def set_timeout(self, timeout: float) -> SandboxInfo:
        """The sandbox ends `timeout` seconds from now (0: no end time)."""
        return await self.set_timeouts(timeout=timeout)

    async def set_timeouts(self, *, timeout: Optional[float] = None,
                           idle_timeout: Optional[float] = None,
                           lifetime: Optional[float] = None,
                           paused_retention: Optional[float] = None,
                           on_timeout: Optional[str] = None) -> SandboxInfo:
        """Changes the given timeout settings (seconds; 0 turns one off); see
        :meth:`Sandbox.set_timeouts`."""
        req = self._cap.setTimeouts_request()
        _set_timeouts(req.timeouts, **_given(timeout=timeout, idle_timeout=idle_timeout,
                                             lifetime=lifetime, paused_retention=paused_retention,
                                             on_timeout=on_timeout))
        r = await self._client._call(f"setTimeouts {self.sandbox_id}", req.send())
        return SandboxInfo._from(r.info)

    async def delete(self) -> None:
        """Deletes the sandbox: its processes and files are gone when this returns."""
        await self._client._call(f"delete {self.sandbox_id}", self._cap.delete())

    async def kill(self) -> None:
        """Deletes the sandbox (:meth:`delete`, by the name E2B's SDK gives it)."""
        await self.delete()

    def watch(self, from_sequence: int = 1) -> AsyncIterator[Event]:
        """The sandbox's events from `from_sequence` (1: its creation), then live ones, until
        it is deleted (the iteration then ends) or the iterator is closed."""

        async def start(sink: Any) -> Any:
            r = await self._client._call(f"watch {self.sandbox_id}",
                                         self._cap.watch(from_sequence, sink))
            return r.handle

        return _event_stream.events(start)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await _delete_if_there(self.delete())

    def __repr__(self) -> str:
        return f"AsyncSandbox({self.sandbox_id!r})"


async def _delete_if_there(deleting: Any) -> None:
    from .errors import NotFoundError

    try:
        await deleting
    except NotFoundError:
        pass


class Sandbox:
    """A sandbox: a shell, a filesystem and a lifecycle, isolated (gVisor or crun).

    Attributes:
        sandbox_id: the sandbox's id (``sb-...``).
        commands: run commands (:class:`~sandboxd.commands.Commands`).
        files: read and write files (:class:`~sandboxd.files.Files`).

    Used as a context manager, the sandbox is deleted on exit.
    """

    def __init__(self, inner: AsyncSandbox) -> None:
        self._async = inner
        self.sandbox_id = inner.sandbox_id
        self.commands = Commands(inner.commands)
        self.files = Files(inner.files)

    @property
    def client(self) -> Client:
        """The connection this sandbox is reached through."""
        return Client(self._async.client)

    @classmethod
    def create(
        cls,
        template: str = "base",
        *,
        timeout: Optional[float] = None,
        envs: Optional[Mapping[str, str]] = None,
        secret_envs: Optional[Mapping[str, str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
        runtime: Optional[str] = None,
        memory_mib: int = 0,
        cpu_millicores: int = 0,
        pids: int = 0,
        disk_mib: int = 0,
        idle_timeout: Optional[float] = None,
        lifetime: Optional[float] = None,
        paused_retention: Optional[float] = None,
        on_timeout: Optional[str] = None,
        network: Union[str, Iterable[str]] = "none",
        allowed_hosts: Iterable[str] = (),
        request_id: Optional[str] = None,
        addr: Optional[str] = None,
        token: Optional[str] = None,
        client: Optional[Client] = None,
        request_timeout: Optional[float] = None,
        snapshot: Optional[str] = None,
    ) -> "Sandbox":
        """Creates a sandbox and returns once it runs.

        Args:
            template: the root filesystem (``"base"``).
            timeout: seconds until the sandbox ends (then ``on_timeout`` applies; None: never).
            envs: variables every command sees, kept across pauses.
            secret_envs: the same, but only their names reach the event log.
            metadata: labels (key → value) to find it by (``Sandbox.list(metadata=...)``).
            runtime: ``"runsc"`` (gVisor) or ``"crun"``; default the daemon's.
            memory_mib, cpu_millicores, pids, disk_mib: limits (0: the daemon's defaults).
            idle_timeout: seconds without activity before ``on_timeout`` applies.
            lifetime: a hard limit in seconds from creation (not with ``timeout``).
            paused_retention: seconds a paused sandbox is kept before it is deleted.
            on_timeout: ``"delete"`` (default), ``"pause"`` / ``"pause:filesystem"`` or
                ``"pause:memory"``.
            network: ``"none"`` (loopback only, the default), a list of destinations the
                sandbox may reach (an allow list: ``["pypi.org", "*.pythonhosted.org:443",
                "10.20.0.0/16:5432"]``, docs/network.md), ``"allowlist"`` with
                ``allowed_hosts``, or ``"all"`` (public addresses; never the node,
                link-local or private ones unless listed in ``allowed_hosts``).
            request_id: makes the create idempotent: repeating it returns the same sandbox.
            addr, token: where sandboxd is and the token (default SANDBOXD_ADDR and
                SANDBOXD_TOKEN, else ``./var``); or ``client``, a connection of your own.
            request_timeout: seconds before TimeoutError (default the client's, 60 s).
            snapshot: a fork: the sandbox's files start as this snapshot (``sbx.snapshot()``);
                its template and runtime are the snapshot's.

        Raises:
            InvalidArgumentError: a runtime the daemon lacks, a bad setting.
            ResourceExhaustedError: past the tenant's quota.
            UnavailableError: the daemon cannot be reached.
        """
        return cls(portal().run(AsyncSandbox.create(
            template, timeout=timeout, envs=envs, secret_envs=secret_envs, metadata=metadata,
            runtime=runtime, memory_mib=memory_mib, cpu_millicores=cpu_millicores, pids=pids,
            disk_mib=disk_mib, idle_timeout=idle_timeout, lifetime=lifetime,
            paused_retention=paused_retention, on_timeout=on_timeout, network=network,
            allowed_hosts=allowed_hosts, request_id=request_id, addr=addr, token=token,
            client=async_of(client), request_timeout=request_timeout, snapshot=snapshot)))

    @classmethod
    def connect(cls, sandbox_id: str, *, addr: Optional[str] = None,
                token: Optional[str] = None, client: Optional[Client] = None,
                resume: bool = False) -> "Sandbox":
        """An existing sandbox of the token's tenant by its id (NotFoundError otherwise,
        another tenant's included); with ``resume=True`` a paused one is resumed first, as
        E2B's ``connect`` does."""
        return cls(portal().run(AsyncSandbox.connect(sandbox_id, addr=addr, token=token,
                                                     client=async_of(client), resume=resume)))

    @classmethod
    def list(
        cls,
        *,
        state: Union[None, str, Iterable[str]] = None,
        metadata: Optional[Mapping[str, str]] = None,
        include_deleted: bool = False,
        limit: int = 100,
        addr: Optional[str] = None,
        token: Optional[str] = None,
        client: Optional[Client] = None,
    ) -> "Paginator[SandboxSummary]":
        """The tenant's sandboxes, newest first, as an iterator over pages (lists of
        :class:`SandboxSummary`). This reads the ``sandboxes`` read model, which lags the
        daemon by some milliseconds.

        Args:
            state: only these states (a name or a list: ``"running"``, ``"paused"``, ...);
                default every state but deleted.
            metadata: labels that must all match.
            include_deleted: keep deleted sandboxes.
            limit: sandboxes per page (at most 1000).
        """
        return Paginator(AsyncSandbox.list(state=state, metadata=metadata,
                                           include_deleted=include_deleted, limit=limit,
                                           addr=addr, token=token, client=async_of(client)))

    @staticmethod
    def get_info_of(sandbox_id: str, *, addr: Optional[str] = None,
                    token: Optional[str] = None, client: Optional[Client] = None) -> SandboxInfo:
        """A sandbox's info by id, from its actor (NotFoundError when deleted or unknown)."""
        return portal().run(AsyncSandbox.get_info_of(sandbox_id, addr=addr, token=token,
                                                     client=async_of(client)))

    @staticmethod
    def redact(sandbox_id: str, reason: str = "", *, addr: Optional[str] = None,
               token: Optional[str] = None, client: Optional[Client] = None) -> None:
        """Removes a deleted sandbox's labels, command lines, paths and operation messages
        from sandboxd's read models (the audit chain still verifies); ConflictError until it
        is deleted, NotFoundError for one this tenant does not have. A repeat does nothing."""
        portal().run(AsyncSandbox.redact(sandbox_id, reason, addr=addr, token=token,
                                         client=async_of(client)))

    def get_info(self) -> SandboxInfo:
        """The sandbox as its actor knows it now (state, limits, timeouts, metadata, ...)."""
        return portal().run(self._async.get_info())

    def is_running(self) -> bool:
        """Whether the sandbox is running."""
        return portal().run(self._async.is_running())

    def run(self, language: str, code: str, *, timeout: Optional[float] = None,
            envs: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None,
            on_stdout: Optional[Callable[[str], None]] = None,
            on_stderr: Optional[Callable[[str], None]] = None) -> RunResult:
        """Runs `code` with the interpreter of `language` and returns its outcome.

        The languages are ``python`` (``python3 -``), ``node`` (``node -``), ``bash`` and
        ``sh``; the code is the interpreter's stdin. ``sbx.run("python",
        "print(sum([2, 3, 5]))").stdout`` is ``"10\\n"`` in a sandbox of the ``python``
        template. The result has ``stdout``, ``stderr``, ``output`` (both, in the order they
        came), ``exit_code`` and ``command`` (the whole CommandResult); a template without
        the interpreter answers exit code 127 and a line on stderr naming the template that
        has it. InvalidArgumentError for an unknown language. ``timeout`` (seconds) ends
        the interpreter and everything it started."""
        return portal().run(self._async.run(language, code, timeout=timeout, envs=envs,
                                            cwd=cwd, on_stdout=on_stdout, on_stderr=on_stderr))

    def snapshot(self, name: str = "") -> SnapshotInfo:
        """A read-only, copy-on-write snapshot of the sandbox's files, taken in constant time
        (running: its processes are frozen for the instant; or paused). It outlives the
        sandbox; ``Sandbox.create(snapshot=s.snapshot_id)`` starts a new sandbox from it.
        ResourceExhaustedError past the tenant's snapshot quota."""
        return portal().run(self._async.snapshot(name))

    def fork(self, **create_args: Any) -> "Sandbox":
        """A snapshot, then a new sandbox from it: the files as they are now, fresh
        processes. Keyword arguments go to :meth:`create`."""
        if "client" in create_args:
            create_args["client"] = async_of(create_args["client"])
        return Sandbox(portal().run(self._async.fork(**create_args)))

    def pause(self, mode: str = "filesystem") -> SandboxInfo:
        """Pauses the sandbox and returns once it is paused.

        ``"filesystem"``: its processes end, its files are kept (and can be read and written
        while paused); resume starts it afresh. ``"memory"``: its processes are kept as they
        are (checkpoint, or the freezer); files can be read but not written while paused.
        """
        return portal().run(self._async.pause(mode))

    def resume(self) -> SandboxInfo:
        """Resumes a paused sandbox and returns once it runs (ConflictError if not paused)."""
        return portal().run(self._async.resume())

    def set_timeout(self, timeout: float) -> SandboxInfo:
        """The sandbox ends `timeout` seconds from now (0: no end time)."""
        return portal().run(self._async.set_timeout(timeout))

    def set_timeouts(self, *, timeout: Optional[float] = None,
                     idle_timeout: Optional[float] = None, lifetime: Optional[float] = None,
                     paused_retention: Optional[float] = None,
                     on_timeout: Optional[str] = None) -> SandboxInfo:
        """Changes the timeout settings given (seconds; 0 turns one off), keeps the others:
        ``timeout`` (from now) or ``lifetime`` (from creation), ``idle_timeout``,
        ``paused_retention``, ``on_timeout`` (as for :meth:`create`)."""
        return portal().run(self._async.set_timeouts(
            timeout=timeout, idle_timeout=idle_timeout, lifetime=lifetime,
            paused_retention=paused_retention, on_timeout=on_timeout))

    def delete(self) -> None:
        """Deletes the sandbox: its processes and files are gone when this returns."""
        portal().run(self._async.delete())

    def kill(self) -> None:
        """Deletes the sandbox (:meth:`delete`, by the name E2B's SDK gives it)."""
        portal().run(self._async.delete())

    def watch(self, from_sequence: int = 1) -> Iterator[Event]:
        """The sandbox's events from `from_sequence` (1: its creation), then live ones as they
        happen, until it is deleted (the iteration then ends). Close the iterator (or break
        out of the loop) to stop."""
        return portal().iterate(self._async.watch(from_sequence))

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        portal().run(_delete_if_there(self._async.delete()))

    def __repr__(self) -> str:
        return f"Sandbox({self.sandbox_id!r})"
