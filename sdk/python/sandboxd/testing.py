"""A throwaway sandboxd for tests and benchmarks: `LocalDaemon` starts the daemon binary on a
fresh data directory under /tmp (the embedded event log and PostgreSQL, the runtimes asked
for that can run here, the development token, and optionally a tokens file), and stops it
with SIGTERM, checking that it exits 0 and leaves no mount behind. It needs root, like the
daemon.

    with LocalDaemon("/path/to/sandboxd", runtimes=["crun", "hollow"]) as d:
        client = Client.connect(d.address, d.dev_token)
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Sequence

__all__ = ["LocalDaemon", "DaemonError"]


def _stop_with_parent() -> None:
    """In the daemon's process before exec: SIGTERM it when the process that started it dies
    (a crashed test run must not leave a daemon and its sandboxes running)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class DaemonError(Exception):
    """The daemon did not start, or did not stop cleanly (the message has its log's end)."""


class LocalDaemon:
    """A sandboxd process on a fresh data directory.

    Attributes (once started):
        address: its RPC address (``unix:.../sandboxd.sock``).
        data_dir: its data directory.
        dev_token: the development token (tenant "dev", scopes sandboxes and admin).
        unavailable: runtime → why it cannot run here (left out of the daemon).
    """

    def __init__(self, binary: str, runtimes: Sequence[str] = ("runsc", "crun", "hollow"),
                 tokens_toml: str = "", args: Sequence[str] = (),
                 prefix: str = "sandboxd-test-local-") -> None:
        self.binary = binary
        self.runtimes = list(runtimes)
        self.tokens_toml = tokens_toml
        self.args = list(args)
        self.prefix = prefix
        self.address = ""
        self.data_dir = ""
        self.dev_token = ""
        self.unavailable: Dict[str, str] = {}
        self._root = ""
        self._proc: Optional["subprocess.Popen[bytes]"] = None

    @property
    def log(self) -> str:
        """The daemon's output so far."""
        try:
            with open(os.path.join(self._root, "sandboxd.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def start(self, limit: float = 180) -> "LocalDaemon":
        """Starts it and waits until it is ready. A runtime the daemon refuses (it cannot run
        here) is left out, with the reason in `unavailable`."""
        self._root = tempfile.mkdtemp(prefix=self.prefix)
        os.chmod(self._root, 0o711)  # the embedded PostgreSQL runs as its own user below it
        self.data_dir = os.path.join(self._root, "data")
        extra: List[str] = []
        if self.tokens_toml:
            path = os.path.join(self._root, "tokens.toml")
            with open(path, "w") as f:
                f.write(self.tokens_toml)
            extra = ["--tokens-file", path]
        while True:
            kinds = [k for k in self.runtimes if k not in self.unavailable]
            if not kinds:
                raise DaemonError(f"no runtime can run here: {self.unavailable}")
            with open(os.path.join(self._root, "sandboxd.log"), "wb") as out:
                self._proc = subprocess.Popen(
                    [self.binary, "--data-dir", self.data_dir, "--runtime", ",".join(kinds),
                     *extra, *self.args],
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_stop_with_parent)
            if self._wait_ready(limit):
                break
            self._proc.kill()
            self._proc.wait()
            refused = re.search(r"runtime (\w+) cannot run sandboxes here: (.*?); fix it", self.log)
            if not refused or refused.group(1) not in kinds:
                raise DaemonError(f"sandboxd did not start:\n{self.log[-3000:]}")
            self.unavailable[refused.group(1)] = refused.group(2)
            shutil.rmtree(self.data_dir, ignore_errors=True)
        self.address = "unix:" + os.path.join(self.data_dir, "sandboxd.sock")
        with open(os.path.join(self.data_dir, "dev-token")) as f:
            self.dev_token = f.read().strip()
        return self

    def _wait_ready(self, limit: float) -> bool:
        assert self._proc is not None
        end = time.monotonic() + limit
        while time.monotonic() < end:
            if "sandboxd ready" in self.log:
                return True
            if self._proc.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def stop(self) -> None:
        """Stops it with SIGTERM (SIGKILL after 120 s) and removes its directory. Raises
        DaemonError when it did not exit 0 or left mounts behind (they are unmounted)."""
        problems = []
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                rc = self._proc.wait(timeout=120)
                if rc != 0:
                    problems.append(f"sandboxd exited {rc} on SIGTERM")
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
                problems.append("sandboxd did not stop within 120 s of SIGTERM")
        with open("/proc/mounts") as f:
            left = [line.split()[1] for line in f if line.split()[1].startswith(self._root + "/")]
        for m in sorted(left, reverse=True):
            subprocess.run(["umount", "-l", m], check=False)
        if left:
            problems.append(f"mounts left under {self._root}: {left}")
        log = self.log
        if self._root:
            shutil.rmtree(self._root, ignore_errors=True)
        if problems:
            raise DaemonError("\n".join(problems) + "\n" + log[-3000:])

    def __enter__(self) -> "LocalDaemon":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
