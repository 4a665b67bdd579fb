"""Sandbox.list over 250 sandboxes, page by page: every sandbox exactly once, newest first,
in pages of the size asked for; the metadata and state filters. The sandboxes run on the
hollow runtime (no processes: this is the control plane's paging, not the runtimes')."""

import asyncio
import os
import time
from typing import List

import pytest

import sandboxd
from sandboxd import AsyncSandbox, Sandbox

COUNT = 250


def _eventually_listed(expected: int, state: str = "running",
                       **filters) -> List[List[sandboxd.SandboxSummary]]:
    """The pages once the read model (which lags the actors) has `expected` rows in `state`."""
    deadline = time.monotonic() + 60
    while True:
        pages = list(Sandbox.list(state=state, **filters))
        rows = [s for p in pages for s in p]
        if (len(rows) >= expected and all(s.state == state for s in rows)) or \
                time.monotonic() > deadline:
            return pages
        time.sleep(0.2)


async def _create_many(label: dict) -> List[str]:
    gate = asyncio.Semaphore(32)

    async def one(i: int) -> str:
        async with gate:
            s = await AsyncSandbox.create(runtime="hollow", metadata={**label, "i": str(i)})
            return s.sandbox_id

    return await asyncio.gather(*[one(i) for i in range(COUNT)])


async def _delete(ids: List[str]) -> None:
    async def one(i: str) -> None:
        await (await AsyncSandbox.connect(i)).delete()

    await asyncio.gather(*[one(i) for i in ids])


@pytest.fixture(scope="module")
def many(daemon):
    label = {"batch": os.urandom(4).hex()}
    ids = asyncio.run(_create_many(label))
    yield label, ids
    asyncio.run(_delete(ids))


def test_paging_over_250_sandboxes_returns_each_once_newest_first(many) -> None:
    label, ids = many
    _eventually_listed(COUNT, metadata=label, limit=1000)
    pages = list(Sandbox.list(metadata=label, limit=100))
    assert [len(p) for p in pages] == [100, 100, 50]
    listed = [s.sandbox_id for p in pages for s in p]
    assert sorted(listed) == sorted(ids)
    rows = [s for p in pages for s in p]
    keys = [(s.created_at, s.sandbox_id) for s in rows]
    assert keys == sorted(keys, reverse=True)
    assert all(s.state == "running" and s.metadata["batch"] == label["batch"] for s in rows)


def test_the_paginator_pages_on_demand(many) -> None:
    label, _ = many
    _eventually_listed(COUNT, metadata=label, limit=1000)
    pages = Sandbox.list(metadata=label, limit=120)
    assert pages.has_next and pages.next_token == ""
    first = pages.next_items()
    assert len(first) == 120 and pages.has_next and pages.next_token != ""
    second = pages.next_items()
    third = pages.next_items()
    assert (len(second), len(third)) == (120, 10)
    assert not pages.has_next and pages.next_items() == []
    assert len({s.sandbox_id for s in first + second + third}) == COUNT


def test_state_and_metadata_filters(many) -> None:
    label, ids = many
    paused = ids[:3]
    for i in paused:
        Sandbox.connect(i).pause()
    try:
        rows = [s for p in _eventually_listed(3, "paused", metadata=label) for s in p]
        assert sorted(s.sandbox_id for s in rows) == sorted(paused)
        assert all(s.pause_mode == "filesystem" for s in rows)
        one = [s for p in Sandbox.list(metadata={**label, "i": "7"}) for s in p]
        assert [s.sandbox_id for s in one] == [ids[7]]
    finally:
        for i in paused:
            Sandbox.connect(i).resume()


def test_deleted_sandboxes_are_listed_only_when_asked(daemon) -> None:
    label = {"gone": os.urandom(4).hex()}
    s = Sandbox.create(runtime="hollow", metadata=label)
    s.delete()
    deadline = time.monotonic() + 60
    while True:
        rows = [x for p in Sandbox.list(metadata=label, include_deleted=True) for x in p]
        if [x.state for x in rows] == ["deleted"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert [(x.sandbox_id, x.state) for x in rows] == [(s.sandbox_id, "deleted")]
    assert [x for p in Sandbox.list(metadata=label) for x in p] == []
