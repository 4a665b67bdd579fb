"""Commands in a sandbox: `sbx.commands.run(...)` in the foreground or the background, the
commands in flight, and handles to wait for, feed or kill a background command.

Output streams through an OutputSink capability served here: the daemon calls it as the
process writes (with Cap'n Proto's flow control, so a slow callback slows the process's pipe,
never the daemon's memory), and each chunk reaches `on_stdout` / `on_stderr` before `run`
returns."""

from __future__ import annotations

import codecs
import inspect
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, List, Mapping, Optional, Sequence,
                    Union)

from ._call import call
from ._kj import LoopBound
from ._portal import portal
from ._schema import api
from .errors import (CommandExitError, CommandTimeoutError, InvalidArgumentError,
                     UnavailableError)
from .types import CommandResult, ProcessInfo

if TYPE_CHECKING:
    from .sandbox import AsyncSandbox

OutputCallback = Callable[[str], Union[None, Awaitable[None]]]
Command = Union[str, Sequence[str]]

# A command's own deadline gets this much more on the client side before TimeoutError: the
# daemon ends the command at its timeout and answers with timed_out.
DEADLINE_GRACE = 30.0


def argv_of(cmd: Command) -> List[str]:
    """A string runs through ``/bin/sh -c``; a sequence is the argv itself."""
    if isinstance(cmd, str):
        return ["/bin/sh", "-c", cmd]
    return [str(a) for a in cmd]


def _bytes_of(data: Union[str, bytes, bytearray, memoryview]) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


class _Output(api.OutputSink.Server):  # type: ignore[misc,name-defined]
    """Collects a command's output and hands each chunk, decoded, to its callbacks. A callback
    that raises is not called again; its exception is raised when the command's result is
    taken."""

    def __init__(self, on_stdout: Optional[OutputCallback],
                 on_stderr: Optional[OutputCallback]) -> None:
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._callbacks = {"stdout": on_stdout, "stderr": on_stderr}
        self._decoders = {name: codecs.getincrementaldecoder("utf-8")(errors="replace")
                          for name in self._callbacks}
        self.callback_error: Optional[BaseException] = None

    async def write(self, stream: Any, data: bytes, **_: Any) -> None:
        name = str(stream)
        (self.stdout if name == "stdout" else self.stderr).extend(data)
        await self._deliver(name, self._decoders[name].decode(data))

    async def done(self, **_: Any) -> None:
        """The daemon's last call before the command's result: every write came before it."""

    async def _deliver(self, name: str, text: str) -> None:
        callback = self._callbacks[name]
        if not text or callback is None or self.callback_error is not None:
            return
        try:
            r = callback(text)
            if inspect.isawaitable(r):
                await r
        except Exception as e:
            self.callback_error = e

    async def finish(self, r: Any, check: bool) -> CommandResult:
        for name, decoder in self._decoders.items():
            await self._deliver(name, decoder.decode(b"", final=True))
        if self.callback_error is not None:
            raise self.callback_error
        result = CommandResult._from(r, bytes(self.stdout), bytes(self.stderr))
        if result.timed_out:
            raise CommandTimeoutError(result)
        if check and not result.ok:
            raise CommandExitError(result)
        return result


# What sandboxd reads in one request by default (its message limit); a larger request would
# make it close the connection, so the SDK refuses one first (a call's envelope is a few words
# more than its parameters: 4 KiB covers it).
DAEMON_REQUEST_BYTES = 16 << 20
MAX_REQUEST_BYTES = DAEMON_REQUEST_BYTES
_ADVICE = ("send large content as a file (files.write streams it in pieces) or as streamed "
           "stdin (send_stdin)")


def _check_request_size(req: Any) -> int:
    size = req.total_size.word_count * 8
    if size + 4096 > MAX_REQUEST_BYTES:
        raise InvalidArgumentError(
            f"request too large: {size} bytes, and sandboxd reads at most {MAX_REQUEST_BYTES} "
            f"bytes in one request; {_ADVICE}")
    return size


def _said_too_large(e: UnavailableError, size: int) -> UnavailableError:
    """The error of a request whose connection went while it was sent: when the request was
    over the daemon's limit, that is why (the daemon closed the connection on it)."""
    if not e.connection_lost or size + 4096 <= DAEMON_REQUEST_BYTES:
        return e
    return UnavailableError(
        f"request too large: {size} bytes; sandboxd closed the connection on it (it reads at "
        f"most {DAEMON_REQUEST_BYTES} bytes in one request unless configured otherwise); "
        f"{_ADVICE}. The client connected again for its next call", connection_lost=True)


def _exec_request(req: Any, cmd: Command, envs: Optional[Mapping[str, str]],
                  secret_envs: Optional[Mapping[str, str]], cwd: Optional[str],
                  timeout: Optional[float], stdin: Union[None, str, bytes],
                  stream_stdin: bool, max_output_bytes: int) -> int:
    r = req.request
    r.argv = argv_of(cmd)
    variables = [(k, v, False) for k, v in (envs or {}).items()]
    variables += [(k, v, True) for k, v in (secret_envs or {}).items()]
    env = r.init("env", len(variables))
    for i, (k, v, secret) in enumerate(variables):
        env[i].name, env[i].value, env[i].secret = k, v, secret
    r.cwd = cwd or ""
    if stdin is not None:
        r.stdin = _bytes_of(stdin)
    r.streamStdin = stream_stdin
    r.timeoutNs = int(timeout * 1e9) if timeout else 0
    r.maxOutputBytes = max_output_bytes
    return _check_request_size(req)


class AsyncCommandHandle(LoopBound):
    """A command running in the background (``run(..., background=True)``), for asyncio code.

    Attributes:
        exec_id: the command's id in its sandbox.
    """

    def __init__(self, sandbox: "AsyncSandbox", cap: Any, exec_id: str,
                 output: Optional[_Output]) -> None:
        self._bind_loop()
        self._sandbox = sandbox
        self._cap = cap
        self.exec_id = exec_id
        self._output = output

    @property
    def stdout(self) -> str:
        """The stdout received so far ("" for a handle from ``commands.connect``)."""
        return bytes(self._output.stdout).decode("utf-8", "replace") if self._output else ""

    @property
    def stderr(self) -> str:
        """The stderr received so far."""
        return bytes(self._output.stderr).decode("utf-8", "replace") if self._output else ""

    async def wait(self, *, check: bool = False,
                   request_timeout: Optional[float] = None) -> CommandResult:
        """Waits until the command ends and returns its result (with the output received, when
        this handle started it). ``check=True`` raises CommandExitError unless it exited 0."""
        r = await call(f"wait for {self.exec_id}", self._cap.wait(), request_timeout)
        output = self._output or _Output(None, None)
        return await output.finish(r.result, check)

    async def kill(self, signal: int = 0) -> None:
        """Sends `signal` to every process the command started (0: SIGKILL)."""
        await self._sandbox._client._call(f"kill {self.exec_id}", self._cap.kill(signal))

    async def send_stdin(self, data: Union[str, bytes]) -> None:
        """Writes to the command's stdin (it was started with ``stream_stdin=True``)."""
        await self._sandbox._client._call(f"stdin of {self.exec_id}",
                                          self._cap.writeStdin(_bytes_of(data)))

    async def close_stdin(self) -> None:
        """Ends the command's stdin (end of file)."""
        await self._sandbox._client._call(f"stdin of {self.exec_id}", self._cap.closeStdin())

    async def info(self) -> ProcessInfo:
        """The command's argv and start time."""
        r = await self._sandbox._client._call(f"info of {self.exec_id}", self._cap.info())
        return ProcessInfo._from(r.info)


class AsyncCommands:
    """The commands of one sandbox (``sbx.commands``), for asyncio code."""

    def __init__(self, sandbox: "AsyncSandbox") -> None:
        self._sandbox = sandbox

    async def run(
        self,
        cmd: Command,
        *,
        background: bool = False,
        envs: Optional[Mapping[str, str]] = None,
        secret_envs: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[float] = None,
        on_stdout: Optional[OutputCallback] = None,
        on_stderr: Optional[OutputCallback] = None,
        stdin: Union[None, str, bytes] = None,
        stream_stdin: bool = False,
        check: bool = False,
        max_output_bytes: int = 0,
        request_timeout: Optional[float] = None,
    ) -> Any:
        """Runs a command (see :meth:`sandboxd.Commands.run`); returns a CommandResult, or an
        AsyncCommandHandle with ``background=True``. Callbacks may be coroutine functions."""
        client = self._sandbox._client
        output = _Output(on_stdout, on_stderr)
        method = "start" if background else "exec"
        req = getattr(self._sandbox._cap, f"{method}_request")()
        size = _exec_request(req, cmd, envs, secret_envs, cwd, timeout, stdin, stream_stdin,
                             max_output_bytes)
        req.output = output
        try:
            if background:
                promise = req.send()
                cap = promise.exec
                info = await client._call(method, _both(promise, cap.info()), request_timeout
                                          or client.request_timeout)
                return AsyncCommandHandle(self._sandbox, cap, info.info.execId, output)
            if request_timeout is None:
                request_timeout = timeout + DEADLINE_GRACE if timeout else None
            r = await client._call(f"command {argv_of(cmd)!r}", req.send(), request_timeout)
        except UnavailableError as e:
            raise _said_too_large(e, size) from None
        return await output.finish(r.result, check)

    async def list(self) -> List[ProcessInfo]:
        """The commands in flight in the sandbox."""
        r = await self._sandbox._client._call("execs", self._sandbox._cap.execs())
        return [ProcessInfo._from(x) for x in r.execs]

    async def connect(self, exec_id: str) -> AsyncCommandHandle:
        """A handle to a command in flight (its output went to whoever started it)."""
        promise = self._sandbox._cap.openExec(exec_id)
        cap = promise.exec  # pipelined: taken before the promise is awaited (and consumed)
        await self._sandbox._client._call(f"openExec {exec_id}", promise)
        return AsyncCommandHandle(self._sandbox, cap, exec_id, None)

    async def kill(self, exec_id: str, signal: int = 0) -> None:
        """Sends `signal` (0: SIGKILL) to every process of the command `exec_id`."""
        promise = self._sandbox._cap.openExec(exec_id)
        await self._sandbox._client._call(f"kill {exec_id}", promise.exec.kill(signal))


async def _both(first: Any, second: Any) -> Any:
    """Awaits two pipelined calls; answers the second's result (the first's error wins)."""
    await first
    return await second


class CommandHandle:
    """A command running in the background (``run(..., background=True)``).

    Attributes:
        exec_id: the command's id in its sandbox.
    """

    def __init__(self, inner: AsyncCommandHandle) -> None:
        self._async = inner
        self.exec_id = inner.exec_id

    @property
    def stdout(self) -> str:
        """The stdout received so far ("" for a handle from ``commands.connect``)."""
        return self._async.stdout

    @property
    def stderr(self) -> str:
        """The stderr received so far."""
        return self._async.stderr

    def wait(self, *, check: bool = False,
             request_timeout: Optional[float] = None) -> CommandResult:
        """Blocks until the command ends; returns its result (and the output received, when
        this handle started it). ``check=True`` raises CommandExitError unless it exited 0;
        ``request_timeout`` raises TimeoutError past that many seconds."""
        return portal().run(self._async.wait(check=check, request_timeout=request_timeout))

    def kill(self, signal: int = 0) -> None:
        """Sends `signal` to every process the command started (0: SIGKILL)."""
        portal().run(self._async.kill(signal))

    def send_stdin(self, data: Union[str, bytes]) -> None:
        """Writes to the command's stdin (started with ``stream_stdin=True``)."""
        portal().run(self._async.send_stdin(data))

    def close_stdin(self) -> None:
        """Ends the command's stdin (end of file)."""
        portal().run(self._async.close_stdin())

    def info(self) -> ProcessInfo:
        """The command's argv and start time."""
        return portal().run(self._async.info())


class Commands:
    """The commands of one sandbox (``sbx.commands``)."""

    def __init__(self, inner: AsyncCommands) -> None:
        self._async = inner

    def run(
        self,
        cmd: Command,
        *,
        background: bool = False,
        envs: Optional[Mapping[str, str]] = None,
        secret_envs: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        timeout: Optional[float] = None,
        on_stdout: Optional[Callable[[str], None]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        stdin: Union[None, str, bytes] = None,
        stream_stdin: bool = False,
        check: bool = False,
        max_output_bytes: int = 0,
        request_timeout: Optional[float] = None,
    ) -> Any:
        """Runs a command in the sandbox.

        Args:
            cmd: a string, run by ``/bin/sh -c``, or an argv list (argv[0] is looked up in
                PATH when it has no ``/``).
            background: return a :class:`CommandHandle` at once instead of waiting.
            envs: variables added to the sandbox's environment for this command.
            secret_envs: the same, but their values never reach the event log (nor any hash of them).
            cwd: the working directory (default: the template's, else ``/``).
            timeout: seconds the command may run (None: no limit); then the daemon kills it
                and ``run`` (or ``wait``) raises :class:`CommandTimeoutError`, a
                ``TimeoutError`` whose ``result`` has the output so far.
            on_stdout, on_stderr: called with each chunk of output (str) as it arrives,
                before ``run`` returns — on the SDK's I/O thread, so they must not call the
                sync API.
            stdin: bytes (or str, as UTF-8) written to the command's stdin, then end of file.
            stream_stdin: (background) stdin comes later through ``handle.send_stdin``.
            check: raise :class:`CommandExitError` unless the command exits 0.
            max_output_bytes: output kept per stream (0: the daemon's cap); more is counted
                and dropped (``output_truncated``).
            request_timeout: the client-side deadline in seconds (default: ``timeout`` plus
                30 s, or none) before :class:`TimeoutError`.

        Returns:
            A :class:`CommandResult` (``exit_code``, ``stdout``, ``stderr``, ...); a non-zero
            exit is a result, not an exception, unless ``check=True``. With
            ``background=True``, a :class:`CommandHandle`.
        """
        r = portal().run(self._async.run(
            cmd, background=background, envs=envs, secret_envs=secret_envs, cwd=cwd,
            timeout=timeout, on_stdout=on_stdout, on_stderr=on_stderr, stdin=stdin,
            stream_stdin=stream_stdin, check=check, max_output_bytes=max_output_bytes,
            request_timeout=request_timeout))
        return CommandHandle(r) if background else r

    def list(self) -> List[ProcessInfo]:
        """The commands in flight in the sandbox."""
        return portal().run(self._async.list())

    def connect(self, exec_id: str) -> CommandHandle:
        """A handle to a command in flight (to wait for, feed or kill it)."""
        return CommandHandle(portal().run(self._async.connect(exec_id)))

    def kill(self, exec_id: str, signal: int = 0) -> None:
        """Sends `signal` (0: SIGKILL) to every process of the command `exec_id`."""
        portal().run(self._async.kill(exec_id, signal))
