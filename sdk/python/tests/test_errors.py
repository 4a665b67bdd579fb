"""Errors: each daemon code becomes its own exception class carrying the daemon's message; a
lost connection and a refused token are exceptions of the same hierarchy."""

import os

import pytest

import sandboxd
from sandboxd.errors import error_from_description

CODES = {
    "not_found": sandboxd.NotFoundError,
    "conflict": sandboxd.ConflictError,
    "permission_denied": sandboxd.PermissionDeniedError,
    "invalid_argument": sandboxd.InvalidArgumentError,
    "resource_exhausted": sandboxd.ResourceExhaustedError,
    "unavailable": sandboxd.UnavailableError,
    "not_a_directory": sandboxd.NotADirectoryError,
    "is_a_directory": sandboxd.IsADirectoryError,
    "too_large": sandboxd.TooLargeError,
    "internal": sandboxd.InternalError,
}


@pytest.mark.parametrize("code,cls", CODES.items())
def test_every_code_maps_to_its_class_with_the_message(code: str, cls: type) -> None:
    e = error_from_description(f"remote exception: {code}: thing x is wrong; fix it")
    assert type(e) is cls
    assert isinstance(e, sandboxd.SandboxError)
    assert e.code == code
    assert e.message == "thing x is wrong; fix it"
    assert str(e) == f"{code}: thing x is wrong; fix it"


def test_an_unknown_description_or_a_lost_connection_is_unavailable() -> None:
    assert type(error_from_description("remote exception: Peer disconnected")) is sandboxd.UnavailableError
    e = error_from_description("not_found: x", disconnected=True)
    assert type(e) is sandboxd.UnavailableError
    assert "connection to sandboxd was lost" in e.message


def test_directory_and_timeout_errors_are_also_the_builtins() -> None:
    assert issubclass(sandboxd.NotADirectoryError, NotADirectoryError)
    assert issubclass(sandboxd.IsADirectoryError, IsADirectoryError)
    assert issubclass(sandboxd.TimeoutError, TimeoutError)
    e = sandboxd.IsADirectoryError("/workspace is a directory")
    assert e.code == "is_a_directory" and e.message == "/workspace is a directory"


def test_an_unknown_token_is_permission_denied(daemon) -> None:
    with pytest.raises(sandboxd.PermissionDeniedError) as e:
        sandboxd.Client.connect(daemon.address, "sbd_not-a-token")
    assert "token" in e.value.message


def test_a_daemon_that_is_not_there_is_unavailable(tmp_path) -> None:
    address = f"unix:{tmp_path}/nothing.sock"
    with pytest.raises(sandboxd.UnavailableError) as e:
        sandboxd.Sandbox.create(addr=address, token="x")
    assert address in e.value.message


def test_a_missing_token_file_says_what_to_set(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("SANDBOXD_TOKEN", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(sandboxd.PermissionDeniedError) as e:
        sandboxd.Client.connect()
    assert "SANDBOXD_TOKEN" in e.value.message and "./var/dev-token" in e.value.message


def test_a_client_side_deadline_is_timeout_error(daemon) -> None:
    # A runsc or crun create takes tens of milliseconds at least; a microsecond deadline
    # passes first. The sandbox is still made by the daemon; it is found and deleted.
    runtime = next(k for k in ("crun", "runsc") if k not in daemon.unavailable)
    marker = {"deadline": os.urandom(4).hex()}
    with pytest.raises(sandboxd.TimeoutError) as e:
        sandboxd.Sandbox.create(runtime=runtime, metadata=marker, request_timeout=1e-6)
    assert "create did not answer within" in e.value.message
    assert isinstance(e.value, TimeoutError)
    # The daemon may still make it: the session's end deletes every sandbox.
