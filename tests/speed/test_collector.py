"""The garbage collector while a run's calls are in flight (:mod:`mmjudge.speed.collector`):
what exists at the start is frozen, young collections wait longer, and both are undone at the
end, nested runs included."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from mmjudge.engine.sync import Runner
from mmjudge.speed import FAST
from mmjudge.speed.collector import YOUNG_THRESHOLD, quiet_collector
from tests.engine.test_sync import MODEL, FakeJudge, items, settings


@pytest.fixture(autouse=True)
def _collector_as_found() -> Iterator[None]:
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()
    if enabled:
        gc.enable()


@pytest.mark.slow  # over half a second
def test_a_run_freezes_what_exists_and_collects_young_objects_less_often() -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, tuple[int, int, int]]] = []

    async def go() -> None:
        runner = Runner(FakeJudge(delay=0.001), MODEL, settings(concurrency=4))
        async for _ in runner.run(items(6)):
            seen.append((gc.get_freeze_count(), gc.get_threshold()))

    asyncio.run(go())
    assert len(seen) == 6
    assert all(frozen > 0 for frozen, _ in seen)
    assert all(threshold[0] == YOUNG_THRESHOLD for _, threshold in seen)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_run_that_fails_gives_the_collector_back() -> None:
    before = gc.get_threshold()

    async def go() -> None:
        runner = Runner(FakeJudge(), MODEL, settings())
        async for _ in runner.run(items(3)):
            raise RuntimeError("the caller stops")

    with pytest.raises(RuntimeError):
        asyncio.run(go())
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_nested_runs_restore_only_at_the_outermost_end() -> None:
    before = gc.get_threshold()
    outer = quiet_collector(FAST)
    inner = quiet_collector(FAST)
    inner()
    inner()  # a second call does nothing
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD and gc.get_freeze_count() > 0
    outer()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_collection_switched_off_stays_off() -> None:
    gc.set_threshold(0)
    restore = quiet_collector(FAST)
    assert gc.get_threshold()[0] == 0
    restore()
    assert gc.get_threshold()[0] == 0


def test_cyclic_garbage_made_during_a_run_is_still_collected() -> None:
    restore = quiet_collector(FAST)
    try:

        class Node:
            pass

        a, b = Node(), Node()
        a.other, b.other = b, a  # type: ignore[attr-defined]
        del a, b
        assert gc.collect() >= 2
    finally:
        restore()
