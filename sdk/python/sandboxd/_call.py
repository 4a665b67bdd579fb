"""One RPC call as the SDK makes it: awaited under an optional client-side deadline, with
Cap'n Proto exceptions and socket errors turned into the SDK's exceptions (errors.py)."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Optional, TypeVar

import capnp  # type: ignore[import-untyped]

from .errors import SandboxError, TimeoutError, UnavailableError, error_from_description

T = TypeVar("T")


def translate(e: BaseException) -> SandboxError:
    """The SDK exception for an exception raised by pycapnp or the socket."""
    if isinstance(e, SandboxError):
        return e
    if isinstance(e, capnp.KjException):
        return error_from_description(str(e.description), e.type == "DISCONNECTED")
    return UnavailableError(f"the connection to sandboxd failed: {e}; check that the daemon runs")


async def call(what: str, awaitable: Awaitable[T], timeout: Optional[float]) -> T:
    """Awaits `awaitable` (an RPC, or a coroutine of several) within `timeout` seconds (None:
    no deadline). `what` names the call in a TimeoutError's message."""
    try:
        if timeout is None:
            return await awaitable
        return await asyncio.wait_for(_as_coroutine(awaitable), timeout)
    except SandboxError:
        raise
    except asyncio.TimeoutError:
        raise TimeoutError(
            f"{what} did not answer within {timeout:g} s; it may still complete in sandboxd. "
            "Raise request_timeout (or the command's timeout), or check the daemon"
        ) from None
    except (capnp.KjException, OSError, EOFError) as e:
        raise translate(e) from None


async def _as_coroutine(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
