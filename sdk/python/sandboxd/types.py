"""The values the SDK returns: plain dataclasses copied out of Cap'n Proto messages (so they
outlive the call that brought them). Instants are timezone-aware UTC datetimes, durations
seconds (float), sizes bytes."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

_UTC = _dt.timezone.utc
_FILE_TYPES = {"regular": "file", "directory": "dir", "symlink": "symlink", "other": "other"}


def time_of(ns: int) -> Optional[_dt.datetime]:
    """An instant in nanoseconds since the epoch as a UTC datetime (None for 0)."""
    if ns == 0:
        return None
    return _dt.datetime.fromtimestamp(ns / 1e9, tz=_UTC)


def seconds_of(ns: int) -> Optional[float]:
    """A duration in nanoseconds as seconds (None for 0: "none")."""
    return ns / 1e9 if ns else None


def ns_of_time(t: "_dt.datetime | int | float") -> int:
    """Nanoseconds since the epoch of a datetime (naive means UTC), or of an int (already
    nanoseconds)."""
    if isinstance(t, _dt.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=_UTC)
        delta = t - _dt.datetime(1970, 1, 1, tzinfo=_UTC)
        return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    return int(t)


@dataclass(frozen=True)
class Identity:
    """Who a token stands for."""

    tenant: str
    principal: str
    scopes: List[str]

    @classmethod
    def _from(cls, r: Any) -> "Identity":
        return cls(r.tenant, r.principal, list(r.scopes))


@dataclass(frozen=True)
class Limits:
    """A sandbox's resource limits (0: the node's default; disk 0: no limit)."""

    memory_mib: int
    cpu_millicores: int
    pids: int
    disk_mib: int

    @classmethod
    def _from(cls, r: Any) -> "Limits":
        return cls(r.memoryMib, r.cpuMillicores, r.pids, r.diskMib)


def _labels(r: Any) -> Dict[str, str]:
    return {label.key: label.value for label in r}


@dataclass(frozen=True)
class SandboxInfo:
    """A sandbox as its actor (the source of truth) knows it."""

    sandbox_id: str
    state: str  # creating, running, pausing, paused, resuming, deleting, deleted, failed
    template: str
    runtime: str
    limits: Limits
    metadata: Dict[str, str]
    created_at: Optional[_dt.datetime]
    end_at: Optional[_dt.datetime]  # when it ends (its timeout or lifetime); None: never
    pause_mode: Optional[str]  # "filesystem" | "memory" while pausing, paused or resuming
    idle_timeout: Optional[float]
    lifetime: Optional[float]
    paused_retention: Optional[float]
    on_timeout: str  # "delete" | "pause:filesystem" | "pause:memory"
    network: str
    env_names: List[str]
    writable_bytes: int
    failure: str
    sequence: int
    tenant: str

    @classmethod
    def _from(cls, r: Any) -> "SandboxInfo":
        state = str(r.state)
        return cls(
            sandbox_id=r.id,
            state=state,
            template=r.template,
            runtime=r.runtime,
            limits=Limits._from(r.limits),
            metadata=_labels(r.labels),
            created_at=time_of(r.createdAtNs),
            end_at=time_of(r.endTimeNs),
            pause_mode=str(r.pauseMode) if state in ("pausing", "paused", "resuming") else None,
            idle_timeout=seconds_of(r.idleTimeoutNs),
            lifetime=seconds_of(r.lifetimeNs),
            paused_retention=seconds_of(r.pausedRetentionNs),
            on_timeout=r.onTimeout,
            network=str(r.network.mode),
            env_names=list(r.envNames),
            writable_bytes=r.writableBytes,
            failure=r.failure,
            sequence=r.sequence,
            tenant=r.tenant,
        )


@dataclass(frozen=True)
class SnapshotInfo:
    """A read-only snapshot of a sandbox's writable layer (docs/snapshots.md)."""

    snapshot_id: str  # snap-<16 hex digits>
    name: str
    sandbox_id: str  # the sandbox it was taken of
    taken_at: Optional[_dt.datetime]
    template: str
    runtime: str
    layer_bytes: int  # the sandbox's writable layer when it was taken
    referenced_bytes: int
    exclusive_bytes: int  # what deleting it frees
    sequence: int  # of its snapshot_taken event

    @classmethod
    def _from(cls, r: Any) -> "SnapshotInfo":
        return cls(snapshot_id=r.id, name=r.name, sandbox_id=r.sandboxId,
                   taken_at=time_of(r.takenAtNs), template=r.template, runtime=r.runtime,
                   layer_bytes=r.layerBytes, referenced_bytes=r.referencedBytes,
                   exclusive_bytes=r.exclusiveBytes, sequence=r.sequence)


@dataclass(frozen=True)
class SandboxSummary:
    """A row of ``Sandbox.list``: the ``sandboxes`` read model, which lags the actors by
    some milliseconds (``get_info`` never lags)."""

    sandbox_id: str
    state: str
    template: str
    limits: Limits
    metadata: Dict[str, str]
    pause_mode: Optional[str]
    writable_bytes: int
    created_at: Optional[_dt.datetime]
    updated_at: Optional[_dt.datetime]
    sequence: int

    @classmethod
    def _from(cls, r: Any) -> "SandboxSummary":
        state = str(r.state)
        return cls(
            sandbox_id=r.id,
            state=state,
            template=r.template,
            limits=Limits._from(r.limits),
            metadata=_labels(r.labels),
            pause_mode=str(r.pauseMode) if state in ("pausing", "paused", "resuming") else None,
            writable_bytes=r.writableBytes,
            created_at=time_of(r.createdAtNs),
            updated_at=time_of(r.updatedAtNs),
            sequence=r.sequence,
        )


@dataclass(frozen=True)
class CommandResult:
    """How a command ended, with its output (as far as ``max_output_bytes`` kept it).

    ``exit_code`` is -1 when a signal ended it (``signal`` says which); ``stdout`` and
    ``stderr`` are the output decoded as UTF-8 (bad bytes replaced), ``raw_stdout`` and
    ``raw_stderr`` the exact bytes."""

    exec_id: str
    exit_code: int
    signal: int
    timed_out: bool
    oom_killed: bool
    output_truncated: bool
    duration: float
    stdout_size: int  # bytes the command wrote to stdout (more than kept when truncated)
    stderr_size: int
    interrupted: bool  # sandboxd restarted while it ran: its outcome is unknown
    raw_stdout: bytes = b""
    raw_stderr: bytes = b""

    @property
    def stdout(self) -> str:
        return self.raw_stdout.decode("utf-8", errors="replace")

    @property
    def stderr(self) -> str:
        return self.raw_stderr.decode("utf-8", errors="replace")

    @property
    def ok(self) -> bool:
        """It exited with 0."""
        return self.exit_code == 0 and not self.signal and not self.timed_out

    @classmethod
    def _from(cls, r: Any, stdout: bytes = b"", stderr: bytes = b"") -> "CommandResult":
        return cls(
            exec_id=r.execId,
            exit_code=r.exitCode,
            signal=r.signal,
            timed_out=r.timedOut,
            oom_killed=r.oomKilled,
            output_truncated=r.outputTruncated,
            duration=r.durationNs / 1e9,
            stdout_size=r.stdoutBytes,
            stderr_size=r.stderrBytes,
            interrupted=r.interrupted,
            raw_stdout=stdout,
            raw_stderr=stderr,
        )


@dataclass(frozen=True)
class ProcessInfo:
    """A command in flight (``commands.list``)."""

    exec_id: str
    argv: List[str]
    started_at: Optional[_dt.datetime]

    @classmethod
    def _from(cls, r: Any) -> "ProcessInfo":
        return cls(r.execId, list(r.argv), time_of(r.startedAtNs))


@dataclass(frozen=True)
class EntryInfo:
    """A file or directory in a sandbox. ``type`` is "file", "dir", "symlink" or "other"."""

    name: str
    path: str
    type: str
    size: int
    mode: int
    modified_time: Optional[_dt.datetime]

    @classmethod
    def _from(cls, r: Any, name: Optional[str] = None) -> "EntryInfo":
        path = r.path
        return cls(
            name=name if name is not None else path.rstrip("/").rsplit("/", 1)[-1],
            path=path,
            type=_FILE_TYPES.get(str(r.type), "other"),
            size=r.size,
            mode=r.mode,
            modified_time=time_of(r.mtimeNs),
        )


@dataclass(frozen=True)
class BillLine:
    """One line of a bill: a sandbox's usage, or a period's (by hour or day)."""

    tenant: str
    sandbox_id: str  # "" when grouped by time
    start: Optional[_dt.datetime]
    end: Optional[_dt.datetime]
    compute_gib_seconds: float
    storage_gib_seconds: float
    compute_micros: int  # micro-dollars
    storage_micros: int
    events: List[str]  # the ids of the events the line comes from (by sandbox)

    @classmethod
    def _from(cls, r: Any) -> "BillLine":
        return cls(
            r.tenant,
            r.sandboxId,
            time_of(r.fromNs),
            time_of(r.toNs),
            r.computeGibSeconds,
            r.storageGibSeconds,
            r.computeMicros,
            r.storageMicros,
            list(r.events),
        )


@dataclass(frozen=True)
class BillReport:
    """A tenant's bill for a period, amounts in micro-dollars."""

    lines: List[BillLine]
    total_compute_micros: int
    total_storage_micros: int
    total_micros: int

    @classmethod
    def _from(cls, r: Any) -> "BillReport":
        return cls(
            [BillLine._from(x) for x in r.lines],
            r.totalComputeMicros,
            r.totalStorageMicros,
            r.totalMicros,
        )


@dataclass(frozen=True)
class AuditRow:
    """One accepted or rejected operation of the hash-chained audit log."""

    tenant: str
    partition: int
    position: int
    event_id: str
    sandbox_id: str
    occurred_at: Optional[_dt.datetime]
    principal: str
    action: str
    outcome: str  # "accepted", or the rejecting code
    detail: str
    hash: bytes

    @classmethod
    def _from(cls, r: Any) -> "AuditRow":
        return cls(
            r.tenant,
            r.partition,
            r.position,
            r.eventId,
            r.sandboxId,
            time_of(r.occurredAtNs),
            r.principal,
            r.action,
            r.outcome,
            r.detail,
            bytes(r.hash),
        )


@dataclass(frozen=True)
class AuditProblem:
    """A row of the audit log that does not fit its chain."""

    tenant: str
    partition: int
    position: int
    event_id: str
    kind: str  # "edited", "missing", "out of order", "truncated"
    message: str

    @classmethod
    def _from(cls, r: Any) -> "AuditProblem":
        return cls(r.tenant, r.partition, r.position, r.eventId, r.kind, r.message)


@dataclass(frozen=True)
class AuditCheck:
    """The result of ``audit_verify``: ``ok`` when every chain holds."""

    ok: bool
    checked_rows: int
    problems: List[AuditProblem]


@dataclass(frozen=True)
class Event:
    """One event of the log, decoded: the envelope, the payload's kind ("created",
    "execFinished", ...) and its fields as a dict, and where it is in the log (resume a
    stream from ``offset + 1`` of its ``partition``)."""

    event_id: str
    sandbox_id: str
    sequence: int
    tenant: str
    principal: str
    occurred_at: Optional[_dt.datetime]
    correlation_id: str
    causation_id: str
    kind: str
    payload: Dict[str, Any] = field(default_factory=dict)
    partition: int = 0
    offset: int = 0

    @classmethod
    def _from(cls, r: Any, partition: int, offset: int) -> "Event":
        kind = r.payload.which()
        return cls(
            event_id=r.eventId,
            sandbox_id=r.sandboxId,
            sequence=r.sequence,
            tenant=r.tenant,
            principal=r.principal,
            occurred_at=time_of(r.occurredAtNs),
            correlation_id=r.correlationId,
            causation_id=r.causationId,
            kind=str(kind),
            payload=getattr(r.payload, str(kind)).to_dict(),
            partition=partition,
            offset=offset,
        )
