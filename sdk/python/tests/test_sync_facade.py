"""The sync API runs the async one on a private event loop thread. Cap'n Proto objects must be
released on that thread while their connection is open (KJ aborts the process otherwise), so
objects the caller's thread drops — a client never closed, sandboxes, handles, abandoned
iterators, exceptions — are handed back to it. Checked in a child process: a mistake here
kills the process, not a test."""

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import gc, sandboxd
    from sandboxd import Client, Sandbox
    for _ in range(3):
        c = Client.connect()                       # never closed: dropped here
        s = Sandbox.create(runtime="hollow", client=c)
        Sandbox.connect(s.sandbox_id, client=c).get_info()
        events = s.watch()
        next(events)                               # an open stream, abandoned
        try:
            Sandbox.connect("sb-000000000000", client=c)
        except sandboxd.NotFoundError as e:
            err = e                                # an exception kept on this thread
        pages = Sandbox.list(client=c)
        s.delete()
        del c, s, events, err, pages
        gc.collect()
    print("survived")
""")


def test_objects_dropped_on_the_callers_thread_do_not_abort_the_process(daemon) -> None:
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "survived"
