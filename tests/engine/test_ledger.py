"""The run folder's ledger of sends possibly billed without an answer, the claims a killed run
leaves behind, calls in flight priced at the dearest answer seen, and a response cache that
fails while the run is under way (in process, with fake judges)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import ClassVar

import pytest

from mmjudge.costs.calls import PricedCall
from mmjudge.engine.earlier import earlier_runs
from mmjudge.engine.policy import CallPolicy, RunStats, WorkItem
from mmjudge.engine.response_cache import (
    MAYBE_SENT,
    SENT,
    ItemClaims,
    Owner,
    ResponseCache,
    request_key,
)
from mmjudge.engine.sync import Runner
from mmjudge.errors import BudgetExceeded, CacheError, Interrupted
from mmjudge.records import Forecast, JudgeRequest, JudgeResponse
from mmjudge.store.unanswered import (
    UNANSWERED,
    UnansweredSends,
    append_unanswered,
    read_unanswered,
    unanswered_total,
)
from tests.engine.test_sync import MODEL, FakeJudge, collect, items, settings


def priced_at(usd: float):  # type: ignore[no-untyped-def]
    return lambda _request, response: PricedCall(response.usage, usd, 0.0)


def key_of(n: int) -> str:
    return request_key(MODEL, JudgeRequest(item_key=f"k{n}", prompt=f"p{n}"))


# --- the ledger -------------------------------------------------------------------------------


def test_the_ledger_adds_up_and_skips_a_partial_last_line(tmp_path: Path) -> None:
    assert unanswered_total(tmp_path) is None  # no ledger yet
    append_unanswered(tmp_path, UnansweredSends(sends=3, usd=0.3, why="timed out"))
    append_unanswered(tmp_path, UnansweredSends(sends=-1, usd=-0.1, why="answered", keys=["k"]))
    with (tmp_path / UNANSWERED).open("a") as handle:
        handle.write('{"sends": 5, "us')  # a writer killed mid-line
    assert [e.sends for e in read_unanswered(tmp_path)] == [3, -1]
    total = unanswered_total(tmp_path)
    assert total is not None and total.sends == 2 and total.usd == pytest.approx(0.2)


def test_a_resume_starts_from_the_ledger_and_the_dearest_row(tmp_path: Path) -> None:
    append_unanswered(tmp_path, UnansweredSends(sends=4, usd=0.04, why="given up"))
    rows = [
        {"query_id": "q", "result_id": "a", "cost_usd": 0.002, "cached": False, "resent": 0},
        {"query_id": "q", "result_id": "b", "cost_usd": 0.009, "cached": True, "resent": 0},
    ]
    (tmp_path / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stats = earlier_runs(tmp_path)
    assert (stats.calls.possibly_billed, stats.calls.possibly_billed_usd) == (4, 0.04)
    assert stats.dearest_usd == 0.009 and stats.spent_before_usd == pytest.approx(0.002)
    assert stats.folder == tmp_path


def test_timeouts_and_stops_are_written_as_they_happen(tmp_path: Path) -> None:
    stats = RunStats(folder=tmp_path)
    runner = Runner(
        FakeJudge(delay=5.0),
        MODEL,
        settings(concurrency=2, timeout_s=0.02, max_retries=0, grace_s=0.0),
        stats=stats,
    )
    collect(runner, items(2, forecast=0.1))  # both time out after they may have left
    total = unanswered_total(tmp_path)
    assert total is not None and total.sends == 2 == runner.stats.calls.possibly_billed
    assert total.usd == pytest.approx(0.2) == pytest.approx(runner.stats.calls.possibly_billed_usd)


# --- the budget -------------------------------------------------------------------------------


def test_calls_in_flight_are_priced_at_the_dearest_answer_seen() -> None:
    policy = CallPolicy(settings(max_cost_usd=1.0), RunStats())
    item = WorkItem("k", JudgeRequest(item_key="k", prompt="p"), forecast=Forecast(usd=0.01))
    assert policy.in_flight_usd([0.01, 0.01, 0.05]) == pytest.approx(0.07)
    assert policy.send_usd(item) == 0.01
    policy.stats.dearest_usd = 0.2  # an answer cost 20 times its forecast
    assert policy.in_flight_usd([0.01, 0.01, 0.3]) == pytest.approx(0.7)
    assert policy.send_usd(item) == 0.2
    assert policy.possibly_billed(item, 2) == pytest.approx(0.4)


def test_dear_answers_stop_the_sends_their_calls_in_flight_would_pass_the_cap() -> None:
    # Forecast 0.01 a call; every answer costs 0.2. Four calls in flight at once.
    cap, dear = 1.0, 0.2
    judge = FakeJudge(delay=0.01)
    runner = Runner(judge, MODEL, settings(concurrency=4, max_cost_usd=cap), price=priced_at(dear))
    with pytest.raises(BudgetExceeded):
        collect(runner, items(100, forecast=0.01))
    paid = len(judge.calls) * dear
    assert paid <= cap + 4 * dear
    # Once the first answers showed the price, at most the cap's worth was sent.
    assert runner.stats.calls.spent_usd <= cap + 4 * dear


# --- claims left behind -----------------------------------------------------------------------


def test_sends_a_killed_run_left_in_its_folder_are_counted_before_anything_is_sent(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    folder = tmp_path / "run"
    folder.mkdir()
    killed = ItemClaims(cache, Owner("elsewhere", 1, "1"), 0.001, folder)
    for n, state in ((0, SENT), (1, MAYBE_SENT)):
        killed.claim(key_of(n), sending=state, usd=0.25)
    ItemClaims(cache, Owner("elsewhere", 2, "2"), 0.001, tmp_path / "other").claim(
        key_of(2), sending=SENT, usd=0.25
    )  # another folder's: not this run's
    time.sleep(0.01)
    judge = FakeJudge()
    runner = Runner(
        judge,
        MODEL,
        settings(concurrency=1, max_cost_usd=0.6),
        cache=cache,
        claims=cache.claims(30.0, folder=folder),
        stats=RunStats(folder=folder),
        price=priced_at(0.1),
    )
    with pytest.raises(BudgetExceeded):
        collect(runner, items(5, forecast=0.1))
    # 0.5 possibly billed from the start: one call (0.1) fits. k0 is sent again and
    # answered, proving its lost send was received: priced as resent at 0.1 from then on
    # (0.2 spent, 0.25 possibly billed), so k1 fits too; its maybe lost send stays possibly
    # billed; then k2 would pass the cap.
    assert judge.calls == ["k0", "k1"]
    calls = runner.stats.calls
    assert (calls.resent, calls.maybe_resent, calls.possibly_billed) == (1, 1, 1)
    assert calls.possibly_billed_usd == pytest.approx(0.25)
    assert calls.spent_usd == pytest.approx(0.3)
    total = unanswered_total(folder)
    assert total is not None and (total.sends, total.usd) == (1, pytest.approx(0.25))
    assert runner.claims is not None and runner.claims.left_behind() == []  # counted once


def test_a_stop_gives_its_calls_up_in_one_entry_and_the_resume_does_not_count_them_again(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    folder = tmp_path / "run"
    folder.mkdir()

    def runner_for(judge: FakeJudge, owner: Owner) -> Runner:
        return Runner(
            judge,
            MODEL,
            settings(concurrency=3, grace_s=0.0),
            cache=cache,
            claims=cache.claims(30.0, owner=owner, folder=folder),
            stats=earlier_runs(folder),
        )

    first = runner_for(FakeJudge(delay=5.0), Owner("host", 1, "1"))

    async def stop_soon() -> None:
        async def stop() -> None:
            await asyncio.sleep(0.05)
            first.request_stop(15)

        stopper = asyncio.create_task(stop())
        with pytest.raises(Interrupted):
            async for _ in first.run(items(6, forecast=0.1)):
                pass
        await stopper

    asyncio.run(stop_soon())
    (entry,) = read_unanswered(folder)
    assert entry.sends == 3 and len(entry.keys) == 3
    second = runner_for(FakeJudge(), Owner("host", 2, "2"))
    collect(second, items(6, forecast=0.1))
    calls = second.stats.calls
    assert calls.resent == 3  # sent again and answered: priced as resent
    assert calls.possibly_billed == 0 and unanswered_total(folder) == (0, pytest.approx(0.0))


# --- a cache that fails while the run is under way --------------------------------------------


class FailingClaims(ItemClaims):
    """Claims whose file stops taking writes: storing an answer, or the heartbeat, fails."""

    fail_on = "complete"
    steps: ClassVar[list[str]] = []

    def _fail(self, step: str) -> None:
        self.steps.append(step)
        if step == self.fail_on:
            raise CacheError("the response cache c.sqlite is busy: …")

    def complete(self, key: str, response: JudgeResponse) -> None:
        self._fail("complete")
        super().complete(key, response)

    def renew(self) -> None:
        self._fail("renew")
        super().renew()

    def release_all(self) -> None:
        self._fail("release_all")
        super().release_all()


def test_an_answer_paid_for_keeps_its_row_when_the_cache_cannot_store_it(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    claims = FailingClaims(cache, Owner.this_process(), 30.0)
    claims.steps = []
    runner = Runner(FakeJudge(delay=0.01), MODEL, settings(concurrency=1), cache, claims=claims)
    kept = []

    async def go() -> None:
        with pytest.raises(CacheError):
            async for outcome in runner.run(items(5)):
                kept.append(outcome)

    asyncio.run(go())
    assert [o.item.key for o in kept] == ["k0"] and kept[0].response is not None
    assert runner.stats.calls.api_calls == 1
    assert "release_all" not in claims.steps  # the failed cache is not waited on again


def test_a_heartbeat_that_meets_a_failed_cache_stops_the_run_with_its_error(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    claims = FailingClaims(cache, Owner.this_process(), 0.06)  # renewed every 0.02 s
    claims.fail_on = "renew"
    claims.steps = []
    runner = Runner(FakeJudge(delay=0.05), MODEL, settings(concurrency=1), cache, claims=claims)
    with pytest.raises(CacheError, match="busy"):
        collect(runner, items(100))
    assert runner.stats.calls.api_calls < 100
