"""The asyncio API: 50 sandboxes' commands in flight at once on one connection, and the same
calls as the sync API under the same names."""

import asyncio

import pytest

import sandboxd
from sandboxd import AsyncSandbox

N = 50


async def test_fifty_sandboxes_run_commands_concurrently(daemon) -> None:
    # Each command says "waiting" and then waits for a file that is only written once every
    # one of the 50 has said it: if the commands did not all run at once, the first would
    # wait until its timeout.
    runtime = "crun" if "crun" not in daemon.unavailable else "runsc"
    if runtime in daemon.unavailable:
        pytest.skip("neither crun nor runsc can run here")
    sandboxes = await asyncio.gather(*[
        # 50 creates at once queue behind each other on a 2-core machine: the call deadline
        # is the whole batch's, not one create's.
        AsyncSandbox.create(runtime=runtime, metadata={"suite": "sdk", "n": str(i)},
                            request_timeout=600)
        for i in range(N)])
    try:
        waiting = 0
        all_waiting = asyncio.Event()

        async def on_stdout(text: str) -> None:
            nonlocal waiting
            if "waiting" in text:
                waiting += 1
                if waiting == N:
                    all_waiting.set()

        async def release() -> None:
            await all_waiting.wait()
            await asyncio.gather(*[s.files.write("/workspace/go", "") for s in sandboxes])

        releaser = asyncio.ensure_future(release())
        results = await asyncio.gather(*[
            s.commands.run(f"echo waiting; while [ ! -e /workspace/go ]; do sleep 0.05; done; "
                           f"echo {i}", on_stdout=on_stdout, timeout=120)
            for i, s in enumerate(sandboxes)])
        await releaser
        assert [r.timed_out for r in results] == [False] * N
        assert [r.stdout for r in results] == [f"waiting\n{i}\n" for i in range(N)]
        # One connection carried all of it: the default client of this event loop.
        assert len({id(s.client) for s in sandboxes}) == 1
    finally:
        await asyncio.gather(*[s.delete() for s in sandboxes], return_exceptions=True)


async def test_the_async_api_mirrors_the_sync_one(runtime: str) -> None:
    async with await AsyncSandbox.create(runtime=runtime, metadata={"suite": "sdk"}) as sbx:
        assert (await sbx.get_info()).state == "running"
        assert (await sbx.pause("memory")).pause_mode == "memory"
        assert (await sbx.resume()).state == "running"
        other = await AsyncSandbox.connect(sbx.sandbox_id)
        assert (await other.set_timeout(120)).end_at is not None
        for _ in range(300):  # the read model lags the actors by some milliseconds
            ids = [s.sandbox_id async for page in AsyncSandbox.list(metadata={"suite": "sdk"})
                   for s in page]
            if sbx.sandbox_id in ids:
                break
            await asyncio.sleep(0.1)
        assert sbx.sandbox_id in ids
        first = None
        async for event in sbx.watch():
            first = event
            break
        assert first is not None and first.kind == "created"
        admin = sbx.client.admin
        assert (await admin.audit_verify()).ok
    with pytest.raises(sandboxd.NotFoundError):
        await AsyncSandbox.connect(sbx.sandbox_id)


async def test_an_explicit_async_client(daemon) -> None:
    async with await sandboxd.AsyncClient.connect(daemon.address, daemon.other_token) as c:
        assert c.identity.tenant == "other"
        async with await AsyncSandbox.create(runtime="hollow", client=c) as s:
            assert (await s.get_info()).tenant == "other"


async def test_more_writes_at_once_than_a_connection_may_upload_wait_their_turn(daemon) -> None:
    # sandboxd keeps at most 16 uploads open per connection; 40 writes of 3 MiB at once on one
    # client overlap far past that, and each must still be written (none refused).
    if "hollow" in daemon.unavailable:
        pytest.skip(f"hollow cannot run sandboxes here: {daemon.unavailable['hollow']}")
    async with await sandboxd.AsyncClient.connect(daemon.address, daemon.dev_token) as c:
        async with await AsyncSandbox.create(runtime="hollow", client=c) as s:
            data = b"y" * (3 << 20)
            infos = await asyncio.gather(*[s.files.write(f"/w{i}", data) for i in range(40)])
            assert [i.size for i in infos] == [len(data)] * 40
