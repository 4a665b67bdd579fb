"""Where sandboxd is and which token to present: arguments first, then SANDBOXD_ADDR and
SANDBOXD_TOKEN, then the defaults of a daemon started in the current directory
(`unix:./var/sandboxd.sock` and the development token in `./var/dev-token`), as sandboxctl
does. Addresses are `unix:PATH` (or a bare path) and `tcp:HOST:PORT`; TCP to a host that is
not loopback speaks TLS, as the daemon does."""

from __future__ import annotations

import ipaddress
import os
import ssl
from dataclasses import dataclass
from typing import Any, Optional

import capnp  # type: ignore[import-untyped]

from .errors import InvalidArgumentError, PermissionDeniedError

DEFAULT_ADDR = "unix:./var/sandboxd.sock"
DEFAULT_TOKEN_FILE = "./var/dev-token"


@dataclass(frozen=True)
class Settings:
    address: str  # "unix:/absolute/path" or "tcp:HOST:PORT"
    token: str
    tls_ca_file: Optional[str] = None


def resolve(
    addr: Optional[str] = None,
    token: Optional[str] = None,
    token_file: Optional[str] = None,
    tls_ca_file: Optional[str] = None,
) -> Settings:
    address = addr or os.environ.get("SANDBOXD_ADDR") or DEFAULT_ADDR
    if address.startswith("unix:"):
        address = "unix:" + os.path.abspath(address[len("unix:"):])
    elif not address.startswith("tcp:"):
        if "/" not in address and ":" in address:
            raise InvalidArgumentError(
                f"address {address!r} is neither unix:PATH nor tcp:HOST:PORT; fix SANDBOXD_ADDR"
            )
        address = "unix:" + os.path.abspath(address)
    secret = token or (None if token_file else os.environ.get("SANDBOXD_TOKEN"))
    if not secret:
        path = token_file or DEFAULT_TOKEN_FILE
        try:
            with open(path, encoding="utf-8") as f:
                secret = f.read().strip()
        except OSError as e:
            raise PermissionDeniedError(
                f"no token: SANDBOXD_TOKEN is not set and {path} cannot be read ({e.strerror}); "
                "set SANDBOXD_TOKEN, or pass token= or token_file="
            ) from None
    return Settings(address, secret, tls_ca_file)


def _split_host_port(rest: str) -> "tuple[str, int]":
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        raise InvalidArgumentError(f"address tcp:{rest} has no port; use tcp:HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def open_stream(settings: Settings) -> Any:
    """A connected pycapnp stream to the daemon (OSError when it cannot be reached)."""
    if settings.address.startswith("unix:"):
        return await capnp.AsyncIoStream.create_unix_connection(settings.address[len("unix:"):])
    host, port = _split_host_port(settings.address[len("tcp:"):])
    if _is_loopback(host) and settings.tls_ca_file is None:
        return await capnp.AsyncIoStream.create_connection(host, port)
    context = ssl.create_default_context(cafile=settings.tls_ca_file)
    return await capnp.AsyncIoStream.create_connection(
        host, port, ssl=context, server_hostname=host
    )
