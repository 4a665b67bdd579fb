"""Templates, the root filesystems sandboxes start from: `Template` (blocking) and
`AsyncTemplate` (asyncio), the same API.

    from sandboxd import Template
    t = Template.build("my-app", dockerfile=open("Dockerfile").read(), context="./my-app")
    sbx = Sandbox.create(template="my-app")

A build runs each RUN step in a build sandbox (no network), takes COPY's files from
`context` (a directory, sent as a tar), and reuses the layers of earlier builds' steps with the
same inputs (docs/templates.md). A template is the tenant's own unless ``scope="global"``
(a token with the admin scope)."""

from __future__ import annotations

import inspect
import io
import os
import tarfile
import tempfile
from dataclasses import dataclass
from typing import IO, Any, Awaitable, Callable, Dict, List, Optional, Union

from ._portal import portal
from ._schema import api
from .client import AsyncClient, Client, async_of, resolve_client
from .errors import InvalidArgumentError, check_choice

CHUNK_BYTES = 1 << 20
# A context tar bigger than this is spooled to a temporary file instead of memory.
SPOOL_BYTES = 16 << 20

ProgressCallback = Callable[[str, float, str], Union[None, Awaitable[None]]]
Context = Union[None, str, os.PathLike, bytes, IO[bytes]]


@dataclass(frozen=True)
class TemplateInfo:
    """A template as the daemon describes it (``sandboxctl template show``)."""

    template_id: str
    name: str
    scope: str  # "global" or "tenant"
    tenant: str
    status: str  # "stock" (not built yet), "building", "ready", "failed"
    source: str  # "stock", "import", "spec"
    description: str
    digest: str  # hex, ready templates
    layers: List[str]  # hex digests, lowest first
    env: Dict[str, Optional[str]]  # a secret's value is None
    working_directory: str
    user: str
    command: List[str]
    total_bytes: int
    failure: str
    used_by: List[str]

    @classmethod
    def _from(cls, r: Any) -> "TemplateInfo":
        return cls(
            template_id=r.id, name=r.name, scope=str(r.scope), tenant=r.tenant, status=r.status,
            source=str(r.source), description=r.description, digest=bytes(r.digest).hex(),
            layers=[bytes(l.sha256).hex() for l in r.layers],
            env={e.name: (None if e.secret else e.value) for e in r.env},
            working_directory=r.workingDirectory, user=r.user, command=list(r.command),
            total_bytes=r.totalBytes, failure=r.failure, used_by=list(r.usedBy))


class _Progress(api.TemplateProgress.Server):  # type: ignore[misc,name-defined]
    """Hands each progress report to the caller's callback; one that raises is not called
    again (the build goes on)."""

    def __init__(self, callback: ProgressCallback) -> None:
        self._callback = callback
        self.failed = False

    async def progress(self, phase: str, fraction: float, output: str, **_: Any) -> None:
        if self.failed:
            return
        try:
            r = self._callback(phase, fraction, output)
            if inspect.isawaitable(r):
                await r
        except Exception:
            self.failed = True


def _context_file(context: Context) -> Optional[IO[bytes]]:
    """The build context as a tar to read from (None: no context)."""
    if context is None:
        return None
    if isinstance(context, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(context))
    if hasattr(context, "read"):
        return context  # type: ignore[return-value]
    path = os.fspath(context)
    if not os.path.isdir(path):
        raise InvalidArgumentError(f"the build context {path} is not a directory")
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)
    with tarfile.open(fileobj=spool, mode="w", format=tarfile.PAX_FORMAT) as t:
        t.add(path, arcname=".", recursive=True)  # symlinks are sent as symlinks
    spool.seek(0)
    return spool  # type: ignore[return-value]


class AsyncTemplate:
    """Template calls for asyncio code: the same as :class:`Template`, awaited."""

    @staticmethod
    async def build(name: str, *, spec: Optional[str] = None, dockerfile: Optional[str] = None,
                    context: Context = None, scope: str = "tenant", description: str = "",
                    on_progress: Optional[ProgressCallback] = None,
                    addr: Optional[str] = None, token: Optional[str] = None,
                    client: Optional[AsyncClient] = None,
                    request_timeout: Optional[float] = None) -> TemplateInfo:
        """Builds template `name` from a spec (see :meth:`Template.build`)."""
        if (spec is None) == (dockerfile is None):
            raise InvalidArgumentError("give exactly one of spec= (TOML) and dockerfile=")
        c = await resolve_client(client, addr, token)
        req = c._live_session.templates().templates.buildSpec_request()
        req.name = name
        req.scope = check_choice("scope", scope, ("tenant", "global"))
        req.format = "toml" if spec is not None else "dockerfile"
        req.spec = spec if spec is not None else dockerfile
        req.description = description
        if on_progress is not None:
            req.progress = _Progress(on_progress)
        upload = req.send().upload  # pipelined: the context goes out at once
        source = _context_file(context)
        try:
            while source is not None:
                chunk = source.read(CHUNK_BYTES)
                if not chunk:
                    break
                await c._call(f"build {name}", upload.write(chunk))
        finally:
            if source is not None and not hasattr(context, "read"):
                source.close()
        # A build takes as long as its steps: no deadline unless the caller sets one.
        r = await c._call(f"build {name}", upload.commit(), request_timeout)
        return TemplateInfo._from(r.template)

    @staticmethod
    async def list(*, addr: Optional[str] = None, token: Optional[str] = None,
                   client: Optional[AsyncClient] = None) -> List[TemplateInfo]:
        """The templates this tenant may use: its own and the global ones."""
        c = await resolve_client(client, addr, token)
        r = await c._call("list templates", c._live_session.templates().templates.list())
        return [TemplateInfo._from(t) for t in r.templates]

    @staticmethod
    async def get(name: str, *, addr: Optional[str] = None, token: Optional[str] = None,
                  client: Optional[AsyncClient] = None) -> TemplateInfo:
        """One template by name (NotFoundError when this tenant has none of that name)."""
        c = await resolve_client(client, addr, token)
        r = await c._call(f"get template {name}",
                          c._live_session.templates().templates.get(name))
        return TemplateInfo._from(r.template)

    @staticmethod
    async def delete(name: str, *, addr: Optional[str] = None, token: Optional[str] = None,
                     client: Optional[AsyncClient] = None) -> None:
        """Deletes a template no sandbox uses (ConflictError naming them otherwise)."""
        c = await resolve_client(client, addr, token)
        await c._call(f"delete template {name}",
                      c._live_session.templates().templates.delete(name))


class Template:
    """Templates: build one from a spec, list, get and delete them. Blocking."""

    @staticmethod
    def build(name: str, *, spec: Optional[str] = None, dockerfile: Optional[str] = None,
              context: Context = None, scope: str = "tenant", description: str = "",
              on_progress: Optional[ProgressCallback] = None, addr: Optional[str] = None,
              token: Optional[str] = None, client: Optional[Client] = None,
              request_timeout: Optional[float] = None) -> TemplateInfo:
        """Builds template `name` and returns it once it is ready.

        Args:
            spec: the TOML spec's text, or
            dockerfile: the text of a Dockerfile of FROM, RUN, COPY, ENV, WORKDIR and USER.
            context: what COPY takes files from: a directory (sent as a tar), a tar's bytes or
                a binary file object of one; None: no context.
            scope: ``"tenant"`` (your own) or ``"global"`` (every tenant's; admin scope).
            description: a word on what it is (shown by ``sandboxctl template list``).
            on_progress: called with (phase, fraction, output) as the build goes: each step,
                and a RUN step's output as it comes. Runs on the SDK's I/O thread.
            request_timeout: seconds the whole build may take (None: no limit).

        Raises:
            InvalidArgumentError: the spec does not parse (the message names the line), a COPY
                source is outside the context, a step failed (its exit status).
            ConflictError: a template of that name exists.
        """
        return portal().run(AsyncTemplate.build(
            name, spec=spec, dockerfile=dockerfile, context=context, scope=scope,
            description=description, on_progress=on_progress, addr=addr, token=token,
            client=async_of(client), request_timeout=request_timeout))

    @staticmethod
    def list(*, addr: Optional[str] = None, token: Optional[str] = None,
             client: Optional[Client] = None) -> List[TemplateInfo]:
        """The templates this tenant may use: its own and the global ones."""
        return portal().run(AsyncTemplate.list(addr=addr, token=token, client=async_of(client)))

    @staticmethod
    def get(name: str, *, addr: Optional[str] = None, token: Optional[str] = None,
            client: Optional[Client] = None) -> TemplateInfo:
        """One template by name (NotFoundError when this tenant has none of that name)."""
        return portal().run(AsyncTemplate.get(name, addr=addr, token=token,
                                              client=async_of(client)))

    @staticmethod
    def delete(name: str, *, addr: Optional[str] = None, token: Optional[str] = None,
               client: Optional[Client] = None) -> None:
        """Deletes a template no sandbox uses (ConflictError naming them otherwise)."""
        portal().run(AsyncTemplate.delete(name, addr=addr, token=token,
                                          client=async_of(client)))
