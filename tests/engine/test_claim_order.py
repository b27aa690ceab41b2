"""What the claims guarantee about order: a claim is on file, marked on the wire, before its
request is sent; an answer is on file before its row; a failed commit stops the run before
anything is sent without its claim."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from mmjudge.engine.response_cache import ItemClaims, ResponseCache, request_key
from mmjudge.engine.sync import Runner
from mmjudge.errors import CacheError
from mmjudge.records import JudgeRequest, JudgeResponse
from tests.engine.test_claims import ANSWER, ELSEWHERE
from tests.engine.test_sync import MODEL, FakeJudge, Flaky, collect, items, settings


def claim_rows(path: Path) -> dict[str, tuple[int, int]]:
    """The claims on file as another process sees them: key → (pid, in_flight)."""
    with sqlite3.connect(str(path)) as other:
        rows = other.execute("SELECT key, pid, in_flight FROM claims").fetchall()
    return {str(key): (int(pid), int(flag)) for key, pid, flag in rows}


def answered_keys(path: Path) -> set[str]:
    with sqlite3.connect(str(path)) as other:
        return {str(row[0]) for row in other.execute("SELECT key FROM responses")}


class Witness(FakeJudge):
    """Checks, from a connection of its own, that each request's claim is on file and marked
    on the wire at the moment the request is sent.

    Answers come on the next multiple of ``period`` of the loop's clock, so the calls in flight
    answer in the same turn of the loop, however loaded the machine is (a fixed delay from each
    send would spread the answers as the sends spread)."""

    def __init__(self, path: Path, period: float, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.path = path
        self.period = period
        self.unclaimed: list[str] = []

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        row = claim_rows(self.path).get(request_key(MODEL, request))
        if row is None or row[1] != 1:
            self.unclaimed.append(request.item_key)
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[None] = loop.create_future()
        # The same deadline (the same float) for every call of this period: one turn runs all.
        loop.call_at((loop.time() // self.period + 1) * self.period, woken.set_result, None)
        await woken
        return await super().generate(request)


def test_each_claim_is_on_file_before_its_send_and_each_answer_before_its_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    judge = Witness(path, period=0.02, failures={"k3": [Flaky("429")]})
    runner = Runner(judge, MODEL, settings(concurrency=16), cache=cache, claims=cache.claims(30))
    seen_in_cache: list[bool] = []

    async def go() -> None:
        async for outcome in runner.run(items(80)):
            assert outcome.item.request is not None
            key = request_key(MODEL, outcome.item.request)
            seen_in_cache.append(key in answered_keys(path))

    asyncio.run(go())
    assert judge.unclaimed == []  # the retry of k3 too
    assert sorted(judge.calls) == sorted([f"k{i}" for i in range(80)] + ["k3"])
    assert seen_in_cache == [True] * 80  # each answer was committed before it was yielded
    assert claim_rows(path) == {}


def test_a_held_claim_found_at_send_time_sets_the_item_aside_until_answered(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path)
    theirs = ItemClaims(cache, ELSEWHERE, 30.0)
    key = request_key(MODEL, JudgeRequest(item_key="k1", prompt="p1"))
    assert theirs.claim(key, sending=True).state == "claimed"
    judge = FakeJudge(delay=0.01)
    runner = Runner(judge, MODEL, settings(concurrency=4), cache=cache, claims=cache.claims(30))

    async def go() -> list[str]:
        async def answer_later() -> None:
            await asyncio.sleep(0.3)
            theirs.complete(key, ANSWER)

        other = asyncio.create_task(answer_later())
        keys = [o.item.key async for o in runner.run(items(3))]
        await other
        return keys

    keys = asyncio.run(go())
    assert sorted(keys) == ["k0", "k1", "k2"]
    assert sorted(judge.calls) == ["k0", "k2"]  # k1 was paid for by the other owner only
    assert runner.stats.calls.answered_by_another_process == 1


def test_a_commit_that_fails_stops_the_run_with_its_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    cache = ResponseCache(path, lock_wait_s=0.05)
    claims = cache.claims(30.0)
    runner = Runner(FakeJudge(), MODEL, settings(), cache=cache, claims=claims)
    blocker = sqlite3.connect(str(path), timeout=0.0, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another writer holds the file's write lock
    try:
        with pytest.raises(CacheError, match=r"is busy: .* after 0\.05 s of waiting"):
            collect(runner, items(3))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert runner.stats.calls.api_calls == 0  # nothing was sent without its claim on file
