#!/usr/bin/env python3
"""e2b_bench — E2B's own Python SDK through sandboxd's E2B endpoint against sandboxd's own
Python SDK over Cap'n Proto, on one sandboxd, in one run.

It starts a sandboxd of its own (LocalDaemon: a fresh data directory, the embedded log and
PostgreSQL, the node's default runtime, --e2b-addr) and two workers, each holding one sandbox
of the `python` template: one in BUILD/e2b-venv running `e2b` (tests/e2b/run_e2b_sdk.py makes
it), one in BUILD/venv running sandboxd's SDK (scripts/python-env makes it). In alternating
rounds, so both see the same machine, each times `commands.run("true")`:

  e2b_sdk_run_p50_ms       the E2B SDK's sbx.commands.run("true") (envd's Start over HTTP,
                           /bin/bash -l -c true in the sandbox), p50
  native_sdk_run_p50_ms    sandboxd's SDK's sbx.commands.run("true") (/bin/sh -c true), p50:
                           the reference
  e2b_vs_native            their ratio (target: at most 1.5)
  native_sdk_bash_login_run_p50_ms
                           sandboxd's SDK running what E2B's runs, ["/bin/bash", "-l", "-c",
                           "true"], p50: the endpoint's own cost is e2b_sdk_run_p50_ms less it
  e2b_vs_native_same_command  e2b_sdk_run_p50_ms / native_sdk_bash_login_run_p50_ms

The last line is one JSON object with these figures (and p90s).

Usage: e2b_bench.py [--json] [--sandboxd BIN] [--sandboxctl BIN] [--runtime KINDS]
                    [--rounds N] [--per-round N]
(--runtime: what the daemon holds, comma list; its default runtime is what E2B's creates get.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..")
BUILD = os.path.join(SRC, "build")

# One worker: makes its sandbox, then answers each "N" line with the N run times (ms), as JSON.
E2B_WORKER = """
import json, sys, time
from e2b import Sandbox
sbx = Sandbox.create(template="python", timeout=3600)
sbx.commands.run("true")
print("ready", flush=True)
for line in sys.stdin:
    times = []
    for _ in range(int(line)):
        t = time.perf_counter()
        sbx.commands.run("true")
        times.append((time.perf_counter() - t) * 1000)
    print(json.dumps(times), flush=True)
sbx.kill()
"""
NATIVE_WORKER = """
import json, sys, time
import sandboxd
sbx = sandboxd.Sandbox.create(template="python", timeout=3600)
cmd = json.loads(sys.argv[1])
sbx.commands.run(cmd)
print("ready", flush=True)
for line in sys.stdin:
    times = []
    for _ in range(int(line)):
        t = time.perf_counter()
        sbx.commands.run(cmd)
        times.append((time.perf_counter() - t) * 1000)
    print(json.dumps(times), flush=True)
sbx.delete()
"""


def local_daemon_class():
    path = os.path.join(SRC, "sdk", "python", "sandboxd", "testing.py")
    spec = importlib.util.spec_from_file_location("sandboxd_testing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LocalDaemon


def worker(python: str, code: str, env: dict, *args: str) -> subprocess.Popen:
    p = subprocess.Popen([python, "-c", code, *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    if line.strip() != "ready":
        raise SystemExit(f"e2b_bench: a worker did not start ({line!r})")
    return p


def timed(p: subprocess.Popen, n: int) -> list:
    p.stdin.write(f"{n}\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())


def p90(xs: list) -> float:
    return sorted(xs)[int(len(xs) * 0.9) - 1]


def main() -> int:
    a = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    a.add_argument("--json", action="store_true", help="(the last line is JSON either way)")
    a.add_argument("--sandboxd", default=os.path.join(BUILD, "apps", "sandboxd"))
    a.add_argument("--sandboxctl", default=os.path.join(BUILD, "apps", "sandboxctl"))
    a.add_argument("--runtime", default="runsc,crun")
    a.add_argument("--rounds", type=int, default=10)
    a.add_argument("--per-round", type=int, default=20)
    args = a.parse_args()
    e2b_python = os.path.join(BUILD, "e2b-venv", "bin", "python")
    native_python = os.path.join(BUILD, "venv", "bin", "python")
    for p, how in ((e2b_python, "ctest -R test_e2b_sdk makes it"),
                   (native_python, "scripts/python-env build makes it")):
        if not os.path.exists(p):
            raise SystemExit(f"e2b_bench: no {p} ({how})")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    LocalDaemon = local_daemon_class()
    with LocalDaemon(args.sandboxd, runtimes=args.runtime.split(","),
                     args=["--e2b-addr", str(port)],
                     prefix="sandboxd-test-e2bbench-") as d:
        subprocess.run([args.sandboxctl, "--addr", d.address, "--token", d.dev_token, "template",
                        "build", "python"], check=True, capture_output=True)
        env_lines = subprocess.run([os.path.join(SRC, "scripts", "e2b-env"), d.data_dir],
                                   check=True, capture_output=True, text=True).stdout
        base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")}
        e2b_env = dict(base)
        for line in env_lines.splitlines():
            k, v = line[len("export "):].split("=", 1)
            e2b_env[k] = v.strip("'")
        native_env = {**base, "SANDBOXD_ADDR": d.address, "SANDBOXD_TOKEN": d.dev_token}
        e2b = worker(e2b_python, E2B_WORKER, e2b_env)
        native = worker(native_python, NATIVE_WORKER, native_env, json.dumps("true"))
        login = worker(native_python, NATIVE_WORKER, native_env,
                       json.dumps(["/bin/bash", "-l", "-c", "true"]))
        e2b_ms, native_ms, login_ms = [], [], []
        for _ in range(args.rounds):
            e2b_ms += timed(e2b, args.per_round)
            native_ms += timed(native, args.per_round)
            login_ms += timed(login, args.per_round)
        for w in (e2b, native, login):
            w.stdin.close()
            w.wait(timeout=120)
    e50, n50 = statistics.median(e2b_ms), statistics.median(native_ms)
    l50 = statistics.median(login_ms)
    held = [k for k in args.runtime.split(",") if k not in d.unavailable]
    figures = {"runtime": "runsc" if "runsc" in held else held[0],
               "e2b_sdk_run_p50_ms": round(e50, 2), "native_sdk_run_p50_ms": round(n50, 2),
               "e2b_vs_native": round(e50 / n50, 3), "e2b_vs_native_target": 1.5,
               "native_sdk_bash_login_run_p50_ms": round(l50, 2),
               "e2b_vs_native_same_command": round(e50 / l50, 3),
               "e2b_sdk_run_p90_ms": round(p90(e2b_ms), 2),
               "native_sdk_run_p90_ms": round(p90(native_ms), 2), "runs": len(e2b_ms)}
    print(f"commands.run('true') on one python sandbox, p50 of {len(e2b_ms)} each, alternating "
          f"rounds: E2B SDK {e50:.1f} ms (p90 {figures['e2b_sdk_run_p90_ms']}), sandboxd SDK "
          f"{n50:.1f} ms (p90 {figures['native_sdk_run_p90_ms']}): {e50 / n50:.2f}x "
          f"(target <= 1.5); sandboxd SDK running E2B's command line, bash -l -c true: "
          f"{l50:.1f} ms, so {e50 / l50:.2f}x for the same command")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
