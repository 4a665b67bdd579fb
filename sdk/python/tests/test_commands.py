"""Commands through the SDK on runsc and crun: results, exit codes, streamed output that
arrives while the command still runs, stdin bytes exact, environment and working directory,
background commands (list, kill, wait, stdin), and timeouts (the command's and the
client's)."""

import asyncio
import time

import pytest

import sandboxd
from sandboxd import AsyncSandbox, Sandbox


def test_run_returns_exit_code_and_output(sbx: Sandbox) -> None:
    r = sbx.commands.run("echo hi; echo oops >&2; exit 42")
    assert (r.exit_code, r.stdout, r.stderr) == (42, "hi\n", "oops\n")
    assert not r.ok and r.signal == 0 and not r.timed_out
    assert r.stdout_size == 3 and r.stderr_size == 5
    assert r.exec_id


def test_check_raises_on_a_non_zero_exit(sbx: Sandbox) -> None:
    assert sbx.commands.run("true", check=True).exit_code == 0
    with pytest.raises(sandboxd.CommandExitError) as e:
        sbx.commands.run("echo bad >&2; exit 3", check=True)
    assert e.value.result.exit_code == 3 and "bad" in e.value.message


def test_argv_list_env_and_cwd(sbx: Sandbox) -> None:
    r = sbx.commands.run(["printf", "%s|%s", "a b", "$HOME"])
    assert r.stdout == "a b|$HOME"  # no shell: arguments arrive as given
    r = sbx.commands.run("echo $GREETING-$SECRET; pwd", envs={"GREETING": "hello"},
                         secret_envs={"SECRET": "s3"}, cwd="/usr")
    assert r.stdout == "hello-s3\n/usr\n"


def test_a_missing_program_is_a_result(sbx: Sandbox) -> None:
    r = sbx.commands.run("no-such-program-here")
    assert r.exit_code == 127 and "not found" in r.stderr


def test_stdin_bytes_0_to_255_arrive_exact(sbx: Sandbox) -> None:
    data = bytes(range(256)) * 4
    r = sbx.commands.run(["cat"], stdin=data)
    assert r.raw_stdout == data
    r = sbx.commands.run(["od", "-An", "-tu1", "-v"], stdin=bytes(range(256)))
    assert [int(x) for x in r.stdout.split()] == list(range(256))


def test_callbacks_get_the_output_in_order(sbx: Sandbox) -> None:
    out, err = [], []
    r = sbx.commands.run("for i in 1 2 3; do echo o$i; echo e$i >&2; done",
                         on_stdout=out.append, on_stderr=err.append)
    assert "".join(out) == "o1\no2\no3\n" == r.stdout
    assert "".join(err) == "e1\ne2\ne3\n" == r.stderr


async def test_streamed_output_arrives_while_the_command_runs(runtime: str) -> None:
    # The command prints "ready", then waits until a second command creates a file; the
    # second command is only started when "ready" reached on_stdout. Output held back until
    # the end would leave the first command waiting until its timeout.
    async with await AsyncSandbox.create(runtime=runtime, metadata={"suite": "sdk"}) as sbx:
        started = []

        async def on_stdout(text: str) -> None:
            if "ready" in text and not started:
                started.append(asyncio.ensure_future(sbx.commands.run("touch /workspace/go")))

        r = await sbx.commands.run(
            "echo ready; while [ ! -e /workspace/go ]; do sleep 0.05; done; echo done",
            on_stdout=on_stdout, timeout=60)
        assert not r.timed_out and r.stdout == "ready\ndone\n"
        assert started and (await started[0]).exit_code == 0


def test_the_sync_api_cannot_be_called_from_its_callbacks(sbx: Sandbox) -> None:
    with pytest.raises(RuntimeError) as e:
        sbx.commands.run("echo x", on_stdout=lambda _: sbx.get_info())
    assert "callbacks" in str(e.value)


def test_a_background_command_is_listed_killed_and_waited_for(sbx: Sandbox) -> None:
    h = sbx.commands.run("echo started; sleep 60", background=True)
    assert h.exec_id in [p.exec_id for p in sbx.commands.list()]
    assert h.info().argv == ["/bin/sh", "-c", "echo started; sleep 60"]
    # Killed once it has printed (a kill before the shell ran echo would leave no output).
    deadline = time.monotonic() + 30
    while h.stdout != "started\n" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert h.stdout == "started\n"
    h.kill()
    r = h.wait()
    assert r.exec_id == h.exec_id
    assert (r.exit_code, r.signal) == (-1, 9)
    assert r.stdout == "started\n"
    assert h.exec_id not in [p.exec_id for p in sbx.commands.list()]


def test_a_background_command_by_id_and_streamed_stdin(sbx: Sandbox) -> None:
    h = sbx.commands.run(["cat"], background=True, stream_stdin=True)
    other = sbx.commands.connect(h.exec_id)
    other.send_stdin(b"abc")
    other.send_stdin("\u00e9\n")
    other.close_stdin()
    r = h.wait()
    assert r.exit_code == 0 and r.raw_stdout == "abc\u00e9\n".encode()
    h2 = sbx.commands.run("sleep 60", background=True)
    sbx.commands.kill(h2.exec_id, signal=15)
    assert h2.wait().signal == 15
    with pytest.raises(sandboxd.NotFoundError):
        sbx.commands.connect("ex-no-such-exec")


def test_a_command_timeout_ends_it_and_raises_timeout_error(sbx: Sandbox) -> None:
    # As subprocess.run and E2B's SDK do: a TimeoutError, with the result on it.
    with pytest.raises(TimeoutError) as e:
        sbx.commands.run("echo before; sleep 30", timeout=1)
    assert isinstance(e.value, sandboxd.CommandTimeoutError)
    r = e.value.result
    assert r.timed_out and r.exit_code == -1 and r.signal != 0
    assert r.stdout == "before\n"
    assert "sleep 30" not in " ".join(" ".join(p.argv) for p in sbx.commands.list())
    with pytest.raises(sandboxd.CommandExitError):  # it is one of those too
        sbx.commands.run("sleep 30", timeout=1, check=True)
    h = sbx.commands.run("sleep 30", timeout=1, background=True)
    with pytest.raises(sandboxd.CommandTimeoutError):
        h.wait()


def test_a_client_deadline_raises_timeout_error(sbx: Sandbox) -> None:
    with pytest.raises(sandboxd.TimeoutError) as e:
        sbx.commands.run("sleep 5", request_timeout=0.5)
    assert "did not answer within 0.5 s" in e.value.message


def test_exec_on_a_paused_sandbox_is_conflict(sbx: Sandbox) -> None:
    sbx.pause()
    with pytest.raises(sandboxd.ConflictError) as e:
        sbx.commands.run("true")
    assert "paused" in e.value.message
    sbx.resume()
    assert sbx.commands.run("echo back").stdout == "back\n"


def test_sandbox_envs_reach_every_command_and_secrets_stay_out_of_info(runtime: str) -> None:
    with Sandbox.create(runtime=runtime, envs={"A": "1"}, secret_envs={"TOKEN": "s3cret"},
                        metadata={"suite": "sdk"}) as sbx:
        assert sbx.commands.run("echo $A-$TOKEN").stdout == "1-s3cret\n"
        assert sbx.commands.run("echo $A", envs={"A": "2"}).stdout == "2\n"  # per command wins
        info = sbx.get_info()
        assert sorted(info.env_names) == ["A", "TOKEN"]
        assert "s3cret" not in repr(info)
