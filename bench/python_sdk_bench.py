#!/usr/bin/env python3
"""python_sdk_bench — the Python SDK against the C++ client on one sandboxd, in one run.

It starts a sandboxd of its own (sandboxd.testing.LocalDaemon: a fresh data directory, the
embedded log and PostgreSQL, crun) and measures, in alternating rounds so both sides see the
same machine:

  create_to_first_output_p50_ms      Sandbox.create(runtime="crun") then
                                     commands.run("echo hi"): from the call to the first
                                     output chunk in on_stdout (the sync API);
  cpp_create_to_first_output_p50_ms  the same through the C++ client (bench/cpp_create_exec,
                                     generated Cap'n Proto classes), the reference;
  sdk_vs_cpp                         their ratio (the SDK's target: at most 1.3);
  run_calls_per_s                    commands.run("true") on one sandbox from asyncio with 32
                                     calls in flight.

The last line is one JSON object with these figures (null where this build of sandboxd does
not serve exec, with the reason in "not_served").

Usage: python_sdk_bench.py [--sandboxd BIN] [--cpp-helper BIN] [--rounds N]
                           [--per-round N] [--run-calls N]
Run it with the SDK's environment (scripts/python-env): build/venv/bin/python bench/...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from typing import List, Optional

import sandboxd
from sandboxd.testing import LocalDaemon

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")


def sdk_create_to_first_output(client: sandboxd.Client, runtime: str) -> float:
    first: List[float] = []
    t0 = time.perf_counter()
    with sandboxd.Sandbox.create(runtime=runtime, client=client) as sbx:
        r = sbx.commands.run("echo hi", on_stdout=lambda _: first.append(time.perf_counter()))
        if r.exit_code != 0 or not first:
            raise SystemExit(f"python_sdk_bench: echo hi gave {r}")
    return (first[0] - t0) * 1000


def cpp_create_to_first_output(helper: str, daemon: LocalDaemon, token_file: str,
                               runtime: str, n: int) -> List[float]:
    out = subprocess.run([helper, "--addr", daemon.address, "--token-file", token_file,
                          "--runtime", runtime, "--iterations", str(n)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["create_to_first_output_ms"]


async def run_calls_per_s(address: str, token: str, runtime: str, calls: int,
                          in_flight: int = 32) -> float:
    async with await sandboxd.AsyncClient.connect(address, token) as client:
        async with await sandboxd.AsyncSandbox.create(runtime=runtime, client=client) as sbx:
            await sbx.commands.run("true")  # warm
            gate = asyncio.Semaphore(in_flight)

            async def one() -> None:
                async with gate:
                    r = await sbx.commands.run("true")
                    if r.exit_code != 0:
                        raise SystemExit(f"python_sdk_bench: true gave {r}")

            t0 = time.perf_counter()
            await asyncio.gather(*[one() for _ in range(calls)])
            return calls / (time.perf_counter() - t0)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sandboxd", default=os.path.join(BUILD, "apps", "sandboxd"))
    p.add_argument("--cpp-helper", default=os.path.join(BUILD, "bench", "cpp_create_exec"))
    p.add_argument("--runtime", default="crun")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--per-round", type=int, default=5)
    p.add_argument("--run-calls", type=int, default=500)
    a = p.parse_args()

    figures: dict = {"runtime": a.runtime, "create_to_first_output_p50_ms": None,
                     "cpp_create_to_first_output_p50_ms": None, "sdk_vs_cpp": None,
                     "sdk_vs_cpp_target": 1.3, "run_calls_per_s": None, "run_in_flight": 32}
    with LocalDaemon(a.sandboxd, runtimes=[a.runtime], prefix="sandboxd-test-sdkbench-") as d:
        token_file = os.path.join(d.data_dir, "dev-token")
        client = sandboxd.Client.connect(d.address, d.dev_token)
        sdk: List[float] = []
        cpp: List[float] = []
        not_served: Optional[str] = None
        try:
            sdk_create_to_first_output(client, a.runtime)  # warm: template, caches
            for _ in range(a.rounds):
                cpp += cpp_create_to_first_output(a.cpp_helper, d, token_file, a.runtime,
                                                  a.per_round)
                sdk += [sdk_create_to_first_output(client, a.runtime)
                        for _ in range(a.per_round)]
            rate = asyncio.run(run_calls_per_s(d.address, d.dev_token, a.runtime, a.run_calls))
        except sandboxd.UnavailableError as e:
            if "not served" not in e.message:
                raise
            not_served = e.message
        finally:
            client.close()
        # The C++ helper stops at the first exec this build does not serve; its sandbox is
        # deleted with the daemon.
        if not_served:
            figures["not_served"] = not_served
            print(not_served)
        else:
            s50, c50 = statistics.median(sdk), statistics.median(cpp)
            figures.update(create_to_first_output_p50_ms=round(s50, 2),
                           cpp_create_to_first_output_p50_ms=round(c50, 2),
                           sdk_vs_cpp=round(s50 / c50, 3), run_calls_per_s=round(rate, 1))
            print(f"create + run('echo hi') to first output, {a.runtime}, p50 of {len(sdk)}: "
                  f"SDK {s50:.1f} ms (min {min(sdk):.1f}, max {max(sdk):.1f}), "
                  f"C++ {c50:.1f} ms (min {min(cpp):.1f}, max {max(cpp):.1f}): "
                  f"SDK/C++ {s50 / c50:.2f} (target <= 1.3)")
            print(f"run('true') on one sandbox, asyncio, 32 in flight: {rate:.0f} calls/s")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
