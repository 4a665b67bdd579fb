"""Connecting: arguments, SANDBOXD_ADDR / SANDBOXD_TOKEN, and the defaults of a daemon started
in the current directory (./var/sandboxd.sock, ./var/dev-token) — all reach the same daemon
as the same identity; a client can be closed and the default one comes back."""

import os

import pytest

import sandboxd


def test_environment_variables_choose_the_daemon_and_the_token(daemon) -> None:
    assert os.environ["SANDBOXD_ADDR"] == daemon.address
    c = sandboxd.Client.connect()
    assert c.identity == sandboxd.Identity("dev", "dev", ["sandboxes", "admin"])
    assert c.address == daemon.address
    version, level = c.version()
    assert version and level == 1
    c.close()


def test_arguments_win_over_the_environment(daemon) -> None:
    c = sandboxd.Client.connect(daemon.address, daemon.other_token)
    assert c.identity.tenant == "other" and c.identity.scopes == ["sandboxes"]
    c.close()


def test_without_settings_it_uses_var_in_the_current_directory(daemon, tmp_path, monkeypatch):
    os.symlink(daemon.data_dir, tmp_path / "var")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SANDBOXD_ADDR")
    monkeypatch.delenv("SANDBOXD_TOKEN")
    c = sandboxd.Client.connect()
    assert c.address == f"unix:{tmp_path}/var/sandboxd.sock"
    assert c.identity.tenant == "dev"
    c.close()


def test_a_closed_client_refuses_calls_and_the_default_reconnects(daemon) -> None:
    c = sandboxd.Client.connect()
    c.close()
    with pytest.raises(sandboxd.UnavailableError) as e:
        sandboxd.Sandbox.create(client=c, runtime="hollow")
    assert "closed" in e.value.message
    with sandboxd.Sandbox.create(runtime="hollow") as s:  # the default client, unaffected
        assert s.get_info().state == "running"


def test_a_token_file_argument(daemon, tmp_path) -> None:
    path = tmp_path / "token"
    path.write_text(daemon.other_token + "\n")
    c = sandboxd.Client.connect(daemon.address, token_file=str(path))
    assert c.identity.tenant == "other"
    c.close()


def test_a_request_too_large_is_refused_and_a_dropped_connection_comes_back(daemon, monkeypatch):
    if "hollow" in daemon.unavailable:
        pytest.skip(f"hollow cannot run sandboxes here: {daemon.unavailable['hollow']}")
    c = sandboxd.Client.connect()
    with sandboxd.Sandbox.create(runtime="hollow", client=c) as s:
        big = b"x" * (64 << 20)
        # The SDK knows what sandboxd reads in one request: refused before it is sent.
        refused = "^invalid_argument: request too large: .* sandboxd reads at most"
        with pytest.raises(sandboxd.InvalidArgumentError, match=refused):
            s.commands.run(["cat"], stdin=big)
        assert s.get_info().state == "running"
        # Sent all the same (the SDK's check lifted), sandboxd closes the connection on it:
        # the call says why, and the same client's next calls are answered on a new one.
        # (32 MiB: over the daemon's 16 MiB, under what pycapnp itself would send.)
        monkeypatch.setattr(sandboxd.commands, "MAX_REQUEST_BYTES", 1 << 30)
        with pytest.raises(sandboxd.UnavailableError, match="request too large: .* closed the "
                           "connection on it") as lost:
            s.commands.run(["cat"], stdin=big[:32 << 20])
        assert lost.value.connection_lost
        assert s.get_info().state == "running"
        assert c.identity.tenant == "dev"
    c.close()
