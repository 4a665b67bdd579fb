"""An agent's session written for E2B, as E2B's own documentation shows it: nothing in it
names sandboxd. It runs with the stock `e2b` SDK from PyPI, configured only by the environment
(scripts/e2b-env prints E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY).

    python e2b_session.py RUN_ID     # RUN_ID goes into the sandbox's metadata

Each step is checked as the SDK's user would check it; the last line printed is a JSON report
({"sandbox_id", "steps": {name: seconds}}) for the test that runs this file (run_e2b_sdk.py).
A failed check raises (exit 1) with what was seen."""

import io
import json
import sys
import time

from e2b import (
    CommandExitException,
    FileType,
    Sandbox,
    SandboxQuery,
    SandboxState,
    TimeoutException,
)
from e2b.exceptions import NotFoundException

run_id = sys.argv[1]
steps = {}


def step(name):
    def wrap(f):
        t = time.monotonic()
        f()
        steps[name] = round(time.monotonic() - t, 3)
        print(f"ok {name} {steps[name]:.3f}s", flush=True)

    return wrap


def expect(what, seen, wanted):
    if seen != wanted:
        raise AssertionError(f"{what}: got {seen!r}, wanted {wanted!r}")


sbx = Sandbox.create(
    template="python", timeout=300, metadata={"suite": "e2b", "run": run_id},
    envs={"GREETING": "hello from e2b"})


@step("run")
def _():
    r = sbx.commands.run("python3 -c 'print(sum([2, 3, 5]))'")
    expect("stdout", r.stdout, "10\n")
    expect("exit code", r.exit_code, 0)
    expect("envs", sbx.commands.run("echo $GREETING").stdout, "hello from e2b\n")


@step("on_stdout")
def _():
    seen = []
    r = sbx.commands.run(
        "for i in 1 2 3; do echo line$i; echo oops >&2; sleep 0.4; done",
        on_stdout=lambda s: seen.append((time.monotonic(), s)),
        on_stderr=lambda s: None)
    expect("joined callbacks", "".join(s for _, s in seen), "line1\nline2\nline3\n")
    expect("stdout", r.stdout, "line1\nline2\nline3\n")
    expect("stderr", r.stderr, "oops\noops\noops\n")
    big = sbx.commands.run("python3 -c 'print(\"x\" * 3000000)'").stdout
    expect("3 MB of output", len(big), 3000001)
    # Streamed: the lines arrive as they are printed, not all at the end.
    if len(seen) < 3 or seen[-1][0] - seen[0][0] < 0.6:
        raise AssertionError(f"on_stdout was not streamed: {seen}")
    try:
        sbx.commands.run("echo out; echo err >&2; exit 3")
        raise AssertionError("exit 3 did not raise CommandExitException")
    except CommandExitException as e:
        expect("exit code", e.exit_code, 3)
        expect("stderr", e.stderr, "err\n")


@step("background_kill")
def _():
    h = sbx.commands.run("sleep 600", background=True)
    listed = [p.pid for p in sbx.commands.list()]
    if h.pid not in listed:
        raise AssertionError(f"pid {h.pid} not in commands.list() {listed}")
    expect("kill", h.kill(), True)
    try:
        h.wait()
        raise AssertionError("a killed command ended without CommandExitException")
    except CommandExitException as e:
        expect("killed exit code", e.exit_code, -1)
    expect("kill of a process that ended", sbx.commands.kill(h.pid), False)


@step("stdin")
def _():
    h = sbx.commands.run("cat", background=True, stdin=True)
    h.send_stdin("first line\n")
    sbx.commands.send_stdin(h.pid, b"second line\n")
    sbx.commands.stream_input(h.pid, ["third ", "line\n"])
    h.close_stdin()
    expect("cat's output", h.wait().stdout, "first line\nsecond line\nthird line\n")


@step("command_timeout")
def _():
    t = time.monotonic()
    try:
        sbx.commands.run("sleep 30", timeout=1)
        raise AssertionError("a 30 s command with timeout=1 returned")
    except TimeoutException:
        pass
    if time.monotonic() - t > 10:
        raise AssertionError("the timeout took more than 10 s")
    # As in E2B, the command's timeout ends the command too, not only the wait.
    deadline = time.monotonic() + 5
    while any("sleep 30" in " ".join(p.args) for p in sbx.commands.list()):
        if time.monotonic() > deadline:
            raise AssertionError("the command outlived its timeout")
        time.sleep(0.1)


@step("files")
def _():
    info = sbx.files.write("/workspace/notes.txt", "first notes\n")
    expect("written path", info.path, "/workspace/notes.txt")
    expect("read", sbx.files.read("/workspace/notes.txt"), "first notes\n")
    sbx.files.write("/workspace/data/blob.bin", bytes(range(256)) * 64)
    expect("read bytes", bytes(sbx.files.read("/workspace/data/blob.bin", format="bytes")),
           bytes(range(256)) * 64)
    # A file-like object goes up as one octet-stream body (envd 0.5.7's upload), streamed.
    blob = bytes(range(251)) * 10000
    sbx.files.write("/workspace/data/stream.bin", io.BytesIO(blob))
    expect("streamed upload", bytes(sbx.files.read("/workspace/data/stream.bin",
                                                   format="bytes")), blob)
    names = {e.name: e for e in sbx.files.list("/workspace")}
    if "notes.txt" not in names or names["data"].type != FileType.DIR:
        raise AssertionError(f"list: {names}")
    expect("size", names["notes.txt"].size, 12)
    expect("exists", sbx.files.exists("/workspace/notes.txt"), True)
    expect("make_dir", sbx.files.make_dir("/workspace/out"), True)
    expect("make_dir again", sbx.files.make_dir("/workspace/out"), False)
    sbx.files.rename("/workspace/notes.txt", "/workspace/out/notes.txt")
    expect("cat after rename", sbx.commands.run("cat /workspace/out/notes.txt").stdout,
           "first notes\n")
    sbx.files.remove("/workspace/out")
    expect("exists after remove", sbx.files.exists("/workspace/out"), False)


@step("list_filters")
def _():
    deadline = time.monotonic() + 10
    while True:  # the list reads what is already recorded: it may lag a create briefly
        found = Sandbox.list(query=SandboxQuery(metadata={"run": run_id})).next_items()
        if found or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    expect("listed by metadata", [s.sandbox_id for s in found], [sbx.sandbox_id])
    expect("its metadata", found[0].metadata, {"suite": "e2b", "run": run_id})
    expect("another run's", Sandbox.list(
        query=SandboxQuery(metadata={"run": run_id + "-other"})).next_items(), [])
    paused_only = Sandbox.list(
        query=SandboxQuery(metadata={"run": run_id}, state=[SandboxState.PAUSED])).next_items()
    expect("paused ones", paused_only, [])


@step("set_timeout")
def _():
    before = sbx.get_info().end_at
    sbx.set_timeout(900)
    after = sbx.get_info().end_at
    grew = (after - before).total_seconds()
    if not 590 <= grew <= 610:
        raise AssertionError(f"set_timeout(900) moved the end by {grew} s, not about 600")


kept = {}


@step("pause")
def _():
    # A process and a file, both to be there after the pause.
    h = sbx.commands.run(
        "python3 -c 'import time\nn = 0\nwhile True:\n n += 1\n open(\"/workspace/n\", \"w\")"
        ".write(str(n))\n time.sleep(0.1)'", background=True, timeout=0)
    kept["pid"] = h.pid
    sbx.files.write("/workspace/kept.txt", "kept across pause\n")
    time.sleep(0.5)
    expect("pause", sbx.pause(), True)
    expect("state", sbx.get_info().state, SandboxState.PAUSED)
    expect("is_running", sbx.is_running(), False)
    kept["count"] = int(sbx.files.read("/workspace/n"))


@step("connect")
def _():
    same = Sandbox.connect(sbx.sandbox_id)
    expect("state", same.get_info().state, SandboxState.RUNNING)
    expect("file", same.files.read("/workspace/kept.txt"), "kept across pause\n")
    if kept["pid"] not in [p.pid for p in same.commands.list()]:
        raise AssertionError("the background process did not survive pause and connect")
    time.sleep(0.5)
    n = int(same.files.read("/workspace/n"))
    if n <= kept["count"]:
        raise AssertionError(f"the process did not go on counting: {kept['count']} -> {n}")
    expect("kill it", same.commands.kill(kept["pid"]), True)


@step("kill")
def _():
    expect("kill", sbx.kill(), True)
    try:
        Sandbox.get_info(sbx.sandbox_id)
        raise AssertionError("a killed sandbox still answers get_info")
    except NotFoundException:
        pass
    expect("kill again", Sandbox.kill(sbx.sandbox_id), False)


print(json.dumps({"sandbox_id": sbx.sandbox_id, "steps": steps}))
