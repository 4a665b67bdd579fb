#!/usr/bin/env python3
"""test_e2b_sdk and test_e2b_sdk_js (ctest, label runtime): E2B's own SDK — Python's from PyPI
into BUILD_DIR/e2b-venv, or JavaScript's from npm into BUILD_DIR/e2b-js, at the pinned versions
below — runs its session (e2b_session.py, e2b_session.mjs) unchanged against a fresh sandboxd
started with --e2b-addr, configured only by what scripts/e2b-env prints. Then sandboxd's own
records must hold the session: its events in the log (sandboxctl events), its line of the bill
and its audit rows in the read models (one row per event), and `sandboxctl audit verify`
passes. The Python run then makes the attacks of e2b_attacks.py on the same daemon; the JS
run is served over TLS on an address of the machine that is not loopback (with a certificate
made for it), when it has one.

    run_e2b_sdk.py SOURCE_DIR BUILD_DIR SANDBOXD SANDBOXCTL [python|js]

Exit 77 (skipped, with the reason) when sandboxd cannot run here (not root, no runtime) or the
SDK cannot be installed (no node and npm, the registry unreachable)."""

import hashlib
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import sys
import time

E2B_VERSION = "2.63.0"  # `e2b` on PyPI; what the session is checked against
E2B_JS_VERSION = "2.51.0"  # `e2b` on npm

src, build, sandboxd_bin, sandboxctl_bin = sys.argv[1:5]
sdk = sys.argv[5] if len(sys.argv) > 5 else "python"
test_name = "test_e2b_sdk" if sdk == "python" else "test_e2b_sdk_js"


def skip(why):
    print(f"sandboxd-test: skipped {test_name}: {why}")
    print("sandboxd-test: all 1 test cases skipped")
    sys.exit(77)


def local_daemon_class():
    # sdk/python/sandboxd/testing.py is plain Python (no capnp): loaded by its path, so this
    # runner needs nothing but the interpreter.
    path = os.path.join(src, "sdk", "python", "sandboxd", "testing.py")
    spec = importlib.util.spec_from_file_location("sandboxd_testing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LocalDaemon, module.DaemonError


def e2b_venv():
    """BUILD_DIR/e2b-venv with e2b==E2B_VERSION (made once; later runs reuse it)."""
    venv = os.path.join(build, "e2b-venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        r = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"python3 -m venv failed: {r.stderr.strip()[-300:]}")
    have = subprocess.run([python, "-c", "import e2b.api.metadata as m; print(m.package_version)"],
                          capture_output=True, text=True).stdout.strip()
    if have != E2B_VERSION:
        r = subprocess.run([python, "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", f"e2b=={E2B_VERSION}"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"pip could not install e2b=={E2B_VERSION} (is PyPI reachable?): "
                 f"{r.stderr.strip()[-300:]}")
    return python


def e2b_js():
    """BUILD_DIR/e2b-js with e2b@E2B_JS_VERSION from npm and the session beside it (an ES
    module finds `e2b` in the node_modules next to it)."""
    if not shutil.which("node") or not shutil.which("npm"):
        skip("node and npm are not installed")
    where = os.path.join(build, "e2b-js")
    os.makedirs(where, exist_ok=True)
    try:
        with open(os.path.join(where, "node_modules", "e2b", "package.json")) as f:
            have = json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        have = ""
    if have != E2B_JS_VERSION:
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", where,
                            f"e2b@{E2B_JS_VERSION}"], capture_output=True, text=True)
        if r.returncode != 0:
            skip(f"npm could not install e2b@{E2B_JS_VERSION} (is the registry reachable?): "
                 f"{r.stderr.strip()[-300:]}")
    session = os.path.join(where, "e2b_session.mjs")
    shutil.copyfile(os.path.join(src, "tests", "e2b", "e2b_session.mjs"), session)
    return ["node", session]


def tls_setup(root):
    """For the JS run: an address of this machine that is not loopback and a self-signed
    certificate for it (made with openssl), so that the endpoint is served over TLS and the
    SDK trusts it through what scripts/e2b-env prints. None when there is no such address."""
    addresses = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
    ip = next((a for a in addresses if "." in a and not a.startswith("127.")), None)
    if not ip or not shutil.which("openssl"):
        return None
    cert, key = os.path.join(root, "e2b-cert.pem"), os.path.join(root, "e2b-key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-keyout", key, "-out", cert, "-subj", f"/CN={ip}",
                    "-addext", f"subjectAltName=IP:{ip}",
                    "-addext", "basicConstraints=critical,CA:FALSE",
                    "-addext", "extendedKeyUsage=serverAuth"], check=True, capture_output=True)
    return ip, cert, key


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ctl(daemon, *args, check=True):
    r = subprocess.run([sandboxctl_bin, "--addr", daemon.address, "--token", daemon.dev_token,
                        *args], capture_output=True, text=True, timeout=600)
    if check and r.returncode != 0:
        raise AssertionError(f"sandboxctl {' '.join(args)} exited {r.returncode}: "
                             f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r


def e2b_environment(data_dir):
    """What `eval "$(scripts/e2b-env DATA_DIR)"` sets, over a clean environment."""
    r = subprocess.run([os.path.join(src, "scripts", "e2b-env"), data_dir],
                       capture_output=True, text=True, env={"PATH": os.environ["PATH"]})
    if r.returncode != 0:
        raise AssertionError(f"scripts/e2b-env failed: {r.stderr}")
    out = subprocess.run(["bash", "-c", r.stdout + "\nenv -0"], capture_output=True,
                         env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")})
    env = dict(kv.split("=", 1) for kv in out.stdout.decode().split("\0") if "=" in kv)
    for name in ("E2B_API_URL", "E2B_SANDBOX_URL", "E2B_API_KEY"):
        if not env.get(name):
            raise AssertionError(f"scripts/e2b-env set no {name}: {r.stdout}")
    return env


def until(what, check, limit=60):
    """check() until it returns a true value (the read models follow the log)."""
    end = time.monotonic() + limit
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {limit} s")
        time.sleep(0.25)


def main():
    if os.geteuid() != 0:
        skip("sandboxd needs root (namespaces, mounts, cgroups)")
    if sdk == "python":
        python = e2b_venv()
        session_cmd = [python, os.path.join(src, "tests", "e2b", "e2b_session.py")]
        version = f"e2b {E2B_VERSION} (PyPI)"
    else:
        session_cmd = e2b_js()
        version = f"e2b {E2B_JS_VERSION} (npm)"
    LocalDaemon, DaemonError = local_daemon_class()
    port = free_port()
    def token_entry(token, tenant):
        return (f'[[token]]\nsha256 = "{hashlib.sha256(token.encode()).hexdigest()}"\n'
                f'tenant = "{tenant}"\nprincipal = "{tenant}@e2b-tests"\n'
                'scopes = ["sandboxes"]\n')
    other_token = "sbd_" + secrets.token_hex(32)
    # More API keys than the endpoint keeps connections for (256), each of its own tenant.
    many_tokens = ["sbd_" + secrets.token_hex(32) for _ in range(300)]
    other_toml = token_entry(other_token, "other") + "".join(
        token_entry(t, f"many{i}") for i, t in enumerate(many_tokens))
    args = ["--e2b-addr", str(port)]
    tls_dir = tempfile.mkdtemp(prefix="sandboxd-test-e2btls-")
    tls = tls_setup(tls_dir) if sdk == "js" else None
    if tls:  # off loopback, so over TLS only
        args = ["--e2b-addr", f"{tls[0]}:{port}", "--tls-cert", tls[1], "--tls-key", tls[2]]
    daemon = LocalDaemon(sandboxd_bin, runtimes=("runsc", "crun"), tokens_toml=other_toml,
                         args=args, prefix="sandboxd-test-e2b-")
    try:
        daemon.start()
    except DaemonError as e:
        daemon.stop()
        skip(f"sandboxd did not start: {e}")
    started = time.monotonic()
    try:
        # The stock template the session names; built from the cache when a run made it before.
        ctl(daemon, "template", "build", "python")
        env = e2b_environment(daemon.data_dir)
        wanted = f"https://{tls[0]}:{port}" if tls else f"http://127.0.0.1:{port}"
        if env["E2B_API_URL"] != wanted:
            raise AssertionError(f"E2B_API_URL is {env['E2B_API_URL']}, not {wanted}")
        if tls and env.get("NODE_EXTRA_CA_CERTS") != tls[1]:
            raise AssertionError("scripts/e2b-env names no certificate to trust over TLS")
        run_id = f"run-{os.getpid()}"
        t = time.monotonic()
        session = subprocess.run([*session_cmd, run_id], capture_output=True, text=True,
                                 env=env, timeout=900)
        session_s = time.monotonic() - t
        print(session.stdout + session.stderr)
        if session.returncode != 0:
            raise AssertionError(f"the E2B session failed (exit {session.returncode})")
        report = json.loads(session.stdout.strip().splitlines()[-1])
        sandbox = report["sandbox_id"]

        # Its events, from the log itself.
        events = [json.loads(line) for line in
                  ctl(daemon, "--json", "events", sandbox).stdout.splitlines() if line]
        kinds = [e["kind"] for e in events]
        for kind in ("created", "started", "exec_started", "exec_finished", "file_op_finished",
                     "file_read", "exec_kill_requested", "timeout_changed",
                     "paused", "resumed", "deleted"):
            if kind not in kinds:
                raise AssertionError(f"no {kind} event in the session's history: {kinds}")
        principals = {e["principal"] for e in events}
        ids = {e["event_id"] for e in events}

        # One audit row per event, once the projector has them.
        def audited():
            page = json.loads(ctl(daemon, "--json", "audit", "--sandbox", sandbox,
                                  "--limit", "1000").stdout)
            rows = page["rows"]
            return rows if ids <= {r["event_id"] for r in rows} else None
        rows = until("the audit rows of every event", audited)
        if {r["principal"] for r in rows} - principals:
            raise AssertionError("audit rows name principals the events do not")

        # The bill's line for the sandbox, from its events.
        def billed():
            bill = json.loads(ctl(daemon, "--json", "bill", "--from", "-2h", "--to",
                                  "+1h").stdout)
            line = [b for b in bill["lines"] if b["sandbox_id"] == sandbox]
            return line[0] if line and line[0]["compute_gib_seconds"] > 0 else None
        line = until("a bill line for the sandbox", billed)
        if not set(line["events"]) <= ids:
            raise AssertionError("the bill line names events the sandbox does not have")

        verify = ctl(daemon, "audit", "verify", check=False)
        if verify.returncode != 0:
            raise AssertionError(f"audit verify failed: {verify.stdout}{verify.stderr}")

        print(f"{version}{' over TLS' if tls else ''}: the session took {session_s:.1f} s "
              f"({', '.join(f'{k} {v:.2f}s' for k, v in report['steps'].items())}); "
              f"{len(events)} events, {len(rows)} audit rows, bill line "
              f"{line['compute_gib_seconds']:.4f} GiB-s compute")
        if sdk != "python":
            return

        # The attacks, on the same daemon (e2b_attacks.py says which).
        attacks = subprocess.run(
            [python, os.path.join(src, "tests", "e2b", "e2b_attacks.py")], capture_output=True,
            text=True, timeout=600,
            env={**env, "OTHER_API_KEY": other_token, "MANY_API_KEYS": ",".join(many_tokens),
                 "SANDBOXD_PID": str(daemon._proc.pid)})
        print(attacks.stdout + attacks.stderr)
        if attacks.returncode != 0:
            raise AssertionError(f"an attack on the E2B endpoint did not fail as it should")
        attack = json.loads(attacks.stdout.strip().splitlines()[-1])
        growth_mib = (attack["rss_after_kib"] - attack["rss_before_kib"]) / 1024
        unread_mib = attack["unread_stream_rss_growth_kib"] / 1024
        if growth_mib > 64 or unread_mib > 32:
            raise AssertionError(f"the daemon grew by {growth_mib:.1f} MiB over the attacks "
                                 f"({unread_mib:.1f} MiB while a stream was not read)")
        # The unread command was held back by the client: it wrote a flow-control window or
        # so in its 8 s, not the gigabytes it writes when read.
        written = max(e["payload"].get("stdout_bytes", 0) for e in (
            json.loads(line) for line in ctl(daemon, "--json", "events",
                                             attack["owner_sandbox"]).stdout.splitlines())
            if e["kind"] == "exec_finished")
        if written > 64 << 20:
            raise AssertionError(f"the unread command wrote {written} bytes")
        verify = ctl(daemon, "audit", "verify", check=False)
        if verify.returncode != 0:
            raise AssertionError(f"audit verify failed after the attacks: {verify.stdout}")
        print(f"attacks: the daemon grew {growth_mib:.1f} MiB over them, {unread_mib:.1f} MiB "
              f"while a stream was not read (its command wrote {written >> 10} KiB in 8 s); a "
              f"slow client cut off after "
              f"{attack['slowloris_closed_after_s']} s")

        print(f"{time.monotonic() - started:.1f} s with the daemon up")
    finally:
        # What a failed session left running is deleted before the daemon stops (a daemon
        # stopped with runsc sandboxes leaves their runtime's mounts behind).
        for token in (daemon.dev_token, other_token):
            listed = subprocess.run([sandboxctl_bin, "--addr", daemon.address, "--token", token,
                                     "--json", "list", "--limit", "1000"], capture_output=True,
                                    text=True)
            try:
                ids = [r["id"] for r in json.loads(listed.stdout)["sandboxes"]]
            except (ValueError, KeyError):
                ids = []
            for sid in ids:
                subprocess.run([sandboxctl_bin, "--addr", daemon.address, "--token", token,
                                "delete", sid], capture_output=True)
        daemon.stop()
        shutil.rmtree(tls_dir, ignore_errors=True)


main()
