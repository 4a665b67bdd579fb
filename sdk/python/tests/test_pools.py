"""Warm pools and the SDK (docs/pools.md): Sandbox.create, unchanged, is served from a pool of
its key, and the sandbox it answers works as a cold one does. The pool is the operator's
(sandboxctl pool set, the admin call) and has a key of its own (320 MiB), so no other test's
create is served from it."""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any, Dict, List

from sandboxd import Sandbox

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SANDBOXCTL = os.environ.get("SANDBOXCTL_BIN", os.path.join(REPO, "build", "apps", "sandboxctl"))
MEMORY_MIB = 320


def _ctl(*args: str) -> Dict[str, Any]:
    out = subprocess.run([SANDBOXCTL, "--json", *args], check=True, capture_output=True,
                         text=True, env=os.environ).stdout
    return json.loads(out)


def _pool(key_flags: List[str]) -> Dict[str, Any]:
    prefix = f"base/{key_flags[1]}/m{MEMORY_MIB}/"
    pools = [p for p in _ctl("pool", "list")["pools"] if p["key"].startswith(prefix)]
    assert len(pools) == 1, pools
    return pools[0]


def test_create_is_served_from_a_pool_of_its_key(runtime: str) -> None:
    key = ["--runtime", runtime, "--memory", str(MEMORY_MIB)]
    _ctl("pool", "set", *key, "--size", "1")
    try:
        deadline = time.monotonic() + 120
        while _pool(key)["ready"] < 1:
            assert time.monotonic() < deadline, _pool(key)["last_error"]
            time.sleep(0.1)
        before = _pool(key)
        with Sandbox.create(runtime=runtime, memory_mib=MEMORY_MIB, envs={"GREETING": "hi"},
                            metadata={"suite": "sdk"}) as sbx:
            after = _pool(key)
            assert after["hits"] == before["hits"] + 1, "the create was not served from the pool"
            assert sbx.sandbox_id in before["ready_ids"]
            assert sbx.sandbox_id not in after["ready_ids"]
            r = sbx.commands.run("echo $GREETING")
            assert (r.exit_code, r.stdout) == (0, "hi\n")
            sbx.files.write("/tmp/pooled.txt", "pooled\n")
            assert sbx.files.read("/tmp/pooled.txt") == "pooled\n"
            assert sbx.get_info().metadata == {"suite": "sdk"}
            sbx.pause("memory")
            sbx.resume()
            assert sbx.commands.run("cat /tmp/pooled.txt; echo $GREETING").stdout == "pooled\nhi\n"
    finally:
        _ctl("pool", "rm", *key)
