"""Attacks on sandboxd's E2B endpoint that must fail, each with the answer E2B's API gives, on
the daemon run_e2b_sdk.py started (its environment: E2B_API_URL, E2B_API_KEY of tenant "dev",
OTHER_API_KEY of tenant "other", MANY_API_KEYS of 300 tenants more, SANDBOXD_PID). Prints one JSON report as its last line:
the daemon's VmRSS before and after, and what each attack got.

- no API key, a wrong one (raw and through the SDK): 401 / AuthenticationException; 300 keys
  (of 300 tenants), more than the endpoint keeps connections for: each served;
- another tenant's sandbox id: every sandbox-API call answers as for a missing id (404,
  SandboxNotFoundException, kill False, the same message shape), and its envd access token
  does not open for another sandbox (401); the owner's sandbox is untouched after;
- oversized bodies (sandbox API, Connect unary, a Connect frame header, an upload past the
  daemon's file limit): 413 / resource_exhausted / invalid_argument, nothing buffered;
- malformed Connect frames and messages: invalid_argument at Connect's status, the stream
  ended properly;
- slow clients: headers sent a byte at a time (closed after the header timeout), a stream of
  output nobody reads (the process is held back; the daemon's memory does not grow), clients
  gone before their command's first event, more connections than one address may hold (the
  extra ones closed at once)."""

import json
import os
import socket
import struct
import threading
import time

import httpx
from e2b import AuthenticationException, Sandbox
from e2b.exceptions import SandboxNotFoundException

url = os.environ["E2B_API_URL"]
host, port = url.split("//")[1].split(":")
port = int(port)
key = os.environ["E2B_API_KEY"]
other = os.environ["OTHER_API_KEY"]
pid = int(os.environ["SANDBOXD_PID"])
report = {}


def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def expect(what, seen, wanted):
    if seen != wanted:
        raise AssertionError(f"{what}: got {seen!r}, wanted {wanted!r}")


def raw(request: bytes, read_timeout=20.0) -> bytes:
    """One HTTP exchange on a socket of its own; what came back until the server closed."""
    with socket.create_connection((host, port)) as s:
        s.sendall(request)
        s.settimeout(read_timeout)
        got = b""
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            got += b
            if b"\r\n\r\n" in got and b"Content-Length: " in got:
                head, _, body = got.partition(b"\r\n\r\n")
                n = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                if len(body) >= n:
                    break
        return got


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else 0


def envelope(body: bytes, flags=0) -> bytes:
    return struct.pack(">BI", flags, len(body)) + body


rss_before = rss_kib()
# One connection for the raw requests (the SDK keeps a pool of its own besides).
api = httpx.Client(base_url=url, timeout=30, limits=httpx.Limits(max_connections=1))

# --- keys ---------------------------------------------------------------------------------
r = api.get("/v2/sandboxes")
expect("list without a key", (r.status_code, r.json()["code"]), (401, 401))
r = api.get("/v2/sandboxes", headers={"X-API-KEY": "sbd_" + "0" * 64})
expect("list with a wrong key", r.status_code, 401)
r = api.post("/v2/sandboxes", json={"templateID": "base"}, headers={"X-API-KEY": "wrong"})
expect("create with a wrong key", r.status_code, 401)
for call in (lambda: Sandbox.create(template="python", api_key="sbd_wrong"),
             lambda: Sandbox.list(api_key="sbd_wrong").next_items()):
    try:
        call()
        raise AssertionError("a wrong key was accepted")
    except AuthenticationException:
        pass
# More keys than the endpoint keeps daemon connections for (256): each is served; the least
# recently used connections are let go.
many = os.environ["MANY_API_KEYS"].split(",")
statuses = {api.get("/v2/sandboxes", headers={"X-API-KEY": k}).status_code for k in many}
expect(f"a list with each of {len(many)} keys", statuses, {200})
report["keys"] = f"401; {len(many)} keys served"

# --- another tenant's sandbox ----------------------------------------------------------------
mine = Sandbox.create(template="python", timeout=300, metadata={"attack": "owner"})
theirs = Sandbox.create(template="python", timeout=300, api_key=other)
missing = "sb-000000000000"
for sid in (mine.sandbox_id, missing):
    for call in (lambda: Sandbox.get_info(sid, api_key=other),
                 lambda: Sandbox.connect(sid, api_key=other),
                 lambda: Sandbox.set_timeout(sid, 5, api_key=other),
                 lambda: Sandbox.pause(sid, api_key=other)):
        try:
            call()
            raise AssertionError(f"tenant other reached sandbox {sid}")
        except SandboxNotFoundException:
            pass
    expect("kill of " + sid, Sandbox.kill(sid, api_key=other), False)
a = api.get(f"/sandboxes/{mine.sandbox_id}", headers={"X-API-KEY": other}).json()
b = api.get(f"/sandboxes/{missing}", headers={"X-API-KEY": other}).json()
expect("404 of another tenant's id, as a missing one's",
       a["message"].replace(mine.sandbox_id, "ID"), b["message"].replace(missing, "ID"))
listed = [s.sandbox_id for s in Sandbox.list(api_key=other).next_items()]
if mine.sandbox_id in listed:
    raise AssertionError("tenant other lists tenant dev's sandbox")
# Their envd token for my sandbox id, and mine for theirs: refused.
their_token = theirs.connection_config.sandbox_headers["X-Access-Token"]
my_token = mine.connection_config.sandbox_headers["X-Access-Token"]
for token, sid in ((their_token, mine.sandbox_id), (my_token, theirs.sandbox_id),
                   ("sbxat_forged", mine.sandbox_id)):
    r = api.post("/process.Process/List", content=b"{}", headers={
        "Content-Type": "application/json", "X-Access-Token": token, "E2b-Sandbox-Id": sid})
    expect(f"envd List with a token not made for {sid}", (r.status_code, r.json()["code"]),
           (401, "unauthenticated"))
    r = api.get("/files", params={"path": "/etc/hostname"},
                headers={"X-Access-Token": token, "E2b-Sandbox-Id": sid})
    expect("a file read with it", r.status_code, 401)
expect("the owner's sandbox still serves", mine.commands.run("echo fine").stdout, "fine\n")
report["tenancy"] = "404 as missing; envd 401"

# --- oversized bodies ---------------------------------------------------------------------------
big = b"x" * (1 << 20)
r = api.post("/v2/sandboxes", content=b'{"templateID":"' + big + b'"}',
             headers={"X-API-KEY": key, "Content-Type": "application/json"})
expect("a 1 MiB create", r.status_code, 413)
envd = {"X-Access-Token": my_token, "E2b-Sandbox-Id": mine.sandbox_id}
r = api.post("/process.Process/SendInput", content=b'{"a":"' + big * 2 + b'"}',
             headers={**envd, "Content-Type": "application/json"})
expect("a 2 MiB unary message", (r.status_code, r.json()["code"]), (400, "invalid_argument"))
# A Content-Length far past the limit is refused before any of it is read.
reply = raw(b"POST /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: " + key.encode() +
            b"\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\n\r\n{")
expect("a 10 GB Content-Length", status_of(reply), 413)
# A frame header announcing 2 GiB.
r = api.post("/process.Process/Start", content=struct.pack(">BI", 0, 0x7FFFFFFF) + b"{",
             headers={**envd, "Content-Type": "application/connect+json"})
expect("a 2 GiB frame: a stream that ends at once", r.status_code, 200)
end = r.content
expect("its end-of-stream flag", end[0], 2)
code = json.loads(end[5:])["error"]["code"]
if code not in ("invalid_argument", "resource_exhausted"):
    raise AssertionError(f"a 2 GiB frame ended with {code}")
# An upload past the daemon's file limit (64 MiB), streamed: refused, memory not grown by it.
def chunks():
    for _ in range(80):
        yield b"\0" * (1 << 20)
r = api.post("/files", params={"path": "/workspace/huge"}, content=chunks(),
             headers={**envd, "Content-Type": "application/octet-stream"}, timeout=120)
expect("an 80 MiB upload", r.status_code, 413)
report["oversized"] = "413 / invalid_argument"

# --- malformed Connect ----------------------------------------------------------------------
for body, what in ((envelope(b"not json"), "not JSON"), (envelope(b"{}", flags=1), "compressed"),
                   (envelope(b'{"process":{"cmd":"x"}}')[:9], "truncated"),
                   (envelope(b"{}") + envelope(b"{}"), "two messages"),
                   (envelope(b'{"process":{"cmd":7}}'), "a number for a string")):
    r = api.post("/process.Process/Start", content=body,
                 headers={**envd, "Content-Type": "application/connect+json"})
    expect(f"Start with {what}: status", r.status_code, 200)
    expect(f"Start with {what}: end of stream", r.content[0], 2)
    expect(f"Start with {what}: code", json.loads(r.content[5:])["error"]["code"],
           "invalid_argument")
r = api.post("/filesystem.Filesystem/Stat", content=b"[1,", headers={
    **envd, "Content-Type": "application/json"})
expect("Stat with broken JSON", (r.status_code, r.json()["code"]), (400, "invalid_argument"))
r = api.post("/filesystem.Filesystem/Stat", content=b"\x08\x01", headers={
    **envd, "Content-Type": "application/proto"})
expect("Stat in protobuf", (r.status_code, r.json()["code"]), (400, "invalid_argument"))
r = api.post("/filesystem.Filesystem/Stat", content=b"[" * 5000 + b"]" * 5000, headers={
    **envd, "Content-Type": "application/json"})
expect("Stat nested 5000 deep", r.status_code, 400)
report["malformed"] = "invalid_argument"

# --- slow clients ----------------------------------------------------------------------------
def slowloris(out):
    t = time.monotonic()
    with socket.create_connection((host, port)) as s:
        s.settimeout(1)
        head = b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-Slow: "
        closed = False
        for i in range(60):
            try:
                s.sendall(head[i:i + 1] if i < len(head) else b"a")
                if s.recv(1 << 16) == b"":
                    closed = True
                    break
            except socket.timeout:
                continue
            except OSError:
                closed = True
                break
    out["slowloris_closed_after_s"] = round(time.monotonic() - t, 1) if closed else None


slow = {}
slow_thread = threading.Thread(target=slowloris, args=(slow,))
slow_thread.start()

# A process that writes as fast as it can to a client that reads nothing.
rss_stream_before = rss_kib()
conn = socket.create_connection((host, port))
start = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", "yes | head -c 2000000000"]}})
body = envelope(start.encode())
conn.sendall(b"POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nContent-Type: "
             b"application/connect+json\r\nX-Access-Token: " + my_token.encode() +
             b"\r\nE2b-Sandbox-Id: " + mine.sandbox_id.encode() + b"\r\nContent-Length: " +
             str(len(body)).encode() + b"\r\n\r\n" + body)
conn.recv(4096)  # the head and the start event, then nothing more is read
rss_writer = []
for _ in range(8):
    time.sleep(1)
    rss_writer.append(rss_kib())
# The writer is held back: `yes` has produced a window, not the gigabytes it would.
procs = mine.commands.list()
if not any("head -c 2000000000" in " ".join(p.args) for p in procs):
    raise AssertionError("the unread command is not running")
report["unread_stream_rss_growth_kib"] = max(rss_writer) - rss_stream_before
for p in mine.commands.list():  # ended before its client goes, which would let it run free
    if "head -c 2000000000" in " ".join(p.args):
        mine.commands.kill(p.pid)
conn.close()

# Commands whose client goes away before their first event: they run on (as in E2B), writing
# to nobody, and the daemon stays well.
start = json.dumps({"process": {"cmd": "/bin/bash", "args": ["-c", "head -c 5000000 /dev/zero"]}})
body = envelope(start.encode())
for _ in range(20):
    with socket.create_connection((host, port)) as gone:
        gone.sendall(b"POST /process.Process/Start HTTP/1.1\r\nHost: x\r\nContent-Type: "
                     b"application/connect+json\r\nX-Access-Token: " + my_token.encode() +
                     b"\r\nE2b-Sandbox-Id: " + mine.sandbox_id.encode() +
                     b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
expect("a command after 20 abandoned ones", mine.commands.run("echo still").stdout, "still\n")

# More connections than one address may hold: the extra ones are closed before a byte is read.
held = []
for _ in range(256):
    held.append(socket.create_connection((host, port)))
extra = socket.create_connection((host, port))
extra.settimeout(5)
try:
    closed = extra.recv(1) == b""
except (ConnectionResetError, socket.timeout):
    closed = True
extra.close()
# The first of them is served all the same.
first = held[0]
first.sendall(b"GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\n\r\n")
first.settimeout(10)
first_status = status_of(first.recv(4096))
for s in held:
    s.close()
expect("the 257th connection of one address", closed, True)
expect("a connection within the limit", first_status, 401)
report["connections"] = "257th closed"

slow_thread.join()
if slow.get("slowloris_closed_after_s") is None or slow["slowloris_closed_after_s"] > 30:
    raise AssertionError(f"a client sending its headers a byte a second was not cut off: {slow}")
report.update(slow)

mine.kill()
theirs.kill()
report["owner_sandbox"] = mine.sandbox_id
report["rss_before_kib"] = rss_before
report["rss_after_kib"] = rss_kib()
print(json.dumps(report))
