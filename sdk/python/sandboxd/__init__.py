"""sandboxd — the Python SDK of sandboxd: isolated sandboxes for AI agents.

    from sandboxd import Sandbox
    with Sandbox.create() as sbx:
        r = sbx.commands.run("echo hi")
        print(r.exit_code, r.stdout)

`Sandbox` blocks; `AsyncSandbox` is the same API for asyncio. Both speak Cap'n Proto RPC to
the daemon (SANDBOXD_ADDR, SANDBOXD_TOKEN; default ./var/sandboxd.sock and ./var/dev-token).
Errors are exceptions of one hierarchy under SandboxError (sandboxd.errors)."""

from . import admin, events, languages
from .client import AsyncClient, Client
from .commands import AsyncCommandHandle, AsyncCommands, CommandHandle, Commands
from .errors import (CommandExitError, CommandTimeoutError, ConflictError, InternalError,
                     InvalidArgumentError,
                     IsADirectoryError, NotADirectoryError, NotFoundError, PermissionDeniedError,
                     ResourceExhaustedError, SandboxError, TimeoutError, TooLargeError,
                     UnavailableError)
from .files import AsyncFiles, EntryList, Files
from .languages import LANGUAGES, RunResult
from .paginator import AsyncPaginator, Paginator
from .sandbox import AsyncSandbox, Sandbox
from .templates import AsyncTemplate, Template, TemplateInfo
from .types import (AuditCheck, AuditProblem, AuditRow, BillLine, BillReport, CommandResult,
                    EntryInfo, Event, Identity, Limits, ProcessInfo, SandboxInfo, SandboxSummary,
                    SnapshotInfo)

__version__ = "0.1.0"

__all__ = [
    "Sandbox", "AsyncSandbox", "Template", "AsyncTemplate", "TemplateInfo", "Client", "AsyncClient", "Commands", "AsyncCommands",
    "CommandHandle", "AsyncCommandHandle", "Files", "AsyncFiles", "EntryList", "Paginator",
    "AsyncPaginator", "admin", "events", "languages",
    "SandboxError", "NotFoundError", "ConflictError", "InvalidArgumentError",
    "PermissionDeniedError", "ResourceExhaustedError", "UnavailableError", "TimeoutError",
    "NotADirectoryError", "IsADirectoryError", "TooLargeError", "InternalError",
    "CommandExitError", "CommandTimeoutError",
    "LANGUAGES", "RunResult", "CommandResult", "EntryInfo", "Event", "Identity", "Limits", "ProcessInfo", "SandboxInfo",
    "SandboxSummary", "SnapshotInfo", "BillLine", "BillReport", "AuditRow", "AuditProblem", "AuditCheck",
]
