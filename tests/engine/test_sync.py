"""The runner with in-process fake judges: retries, fatal errors, cache, budget, concurrency."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path

import pytest

from mmjudge.config import ModelConfig, RunnerConfig
from mmjudge.costs.calls import PricedCall
from mmjudge.engine.policy import Outcome, WorkItem
from mmjudge.engine.response_cache import ResponseCache
from mmjudge.engine.sync import Runner
from mmjudge.errors import BudgetExceeded, FatalProviderError
from mmjudge.judges.base import ErrorVerdict, JudgeAPI
from mmjudge.records import Forecast, JudgeRequest, JudgeResponse, Usage


class Flaky(Exception):
    pass


class FakeJudge(JudgeAPI):
    modalities = ("text", "mm", "image")

    def __init__(self, failures: dict[str, list[Exception]] | None = None, delay: float = 0.0):
        self.failures = failures or {}
        self.delay = delay
        self.calls: list[str] = []
        self.in_flight = 0
        self.peak = 0

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.calls.append(request.item_key)
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            pending = self.failures.get(request.item_key)
            if pending:
                raise pending.pop(0)
            return JudgeResponse(text="2\nok", usage=Usage(input_tokens=100, output_tokens=10))
        finally:
            self.in_flight -= 1

    def classify_error(self, error: Exception) -> ErrorVerdict:
        return ErrorVerdict(retryable=isinstance(error, Flaky), retry_after=0.0)


MODEL = ModelConfig(name="fake", provider="fake", model_id="fake-1", max_concurrency=64)


def settings(**changes) -> RunnerConfig:
    base = RunnerConfig(backoff_base_s=0.001, backoff_max_s=0.01, timeout_s=1.0, progress=False)
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def items(n: int, forecast: float = 0.0) -> list[WorkItem]:
    return [
        WorkItem(
            key=f"k{i}",
            request=JudgeRequest(item_key=f"k{i}", prompt=f"p{i}"),
            forecast=Forecast(usd=forecast),
        )
        for i in range(n)
    ]


def collect(runner: Runner, work: Iterable[WorkItem]) -> list[Outcome]:
    async def go() -> list[Outcome]:
        return [o async for o in runner.run(work)]

    return asyncio.run(go())


def test_every_item_yields_one_outcome_and_concurrency_is_capped() -> None:
    judge = FakeJudge(delay=0.01)
    runner = Runner(judge, MODEL, settings(concurrency=5))
    outcomes = collect(runner, items(40))
    assert sorted(o.item.key for o in outcomes) == sorted(f"k{i}" for i in range(40))
    assert judge.peak == 5
    assert runner.stats.calls.api_calls == 40


def test_retryable_errors_are_retried_then_recorded() -> None:
    judge = FakeJudge({"k0": [Flaky("a"), Flaky("b")], "k1": [Flaky("x")] * 10})
    runner = Runner(judge, MODEL, settings(max_retries=3))
    outcomes = {o.item.key: o for o in collect(runner, items(3))}
    assert outcomes["k0"].response is not None and outcomes["k0"].attempts == 3
    assert outcomes["k1"].response is None and "Flaky" in (outcomes["k1"].error or "")
    assert outcomes["k1"].attempts == 4
    assert outcomes["k2"].attempts == 1
    assert runner.stats.calls.failures == 1


def test_non_retryable_error_is_recorded_without_retry() -> None:
    judge = FakeJudge({"k0": [ValueError("bad request")]})
    outcomes = {o.item.key: o for o in collect(Runner(judge, MODEL, settings()), items(2))}
    assert outcomes["k0"].attempts == 1 and "bad request" in (outcomes["k0"].error or "")
    assert outcomes["k1"].response is not None


def test_timeouts_are_retried() -> None:
    class Slow(FakeJudge):
        async def generate(self, request: JudgeRequest) -> JudgeResponse:
            if len(self.calls) == 0:
                self.calls.append(request.item_key)
                await asyncio.sleep(5)
            return await super().generate(request)

    judge = Slow()
    outcomes = collect(Runner(judge, MODEL, settings(timeout_s=0.05)), items(1))
    assert outcomes[0].response is not None and outcomes[0].attempts == 2


def test_fatal_error_stops_the_run() -> None:
    judge = FakeJudge({"k0": [FatalProviderError("model 'fake' was rejected: check the key")]})
    runner = Runner(judge, MODEL, settings(concurrency=1))
    with pytest.raises(FatalProviderError, match="check the key"):
        collect(runner, items(50))
    assert len(judge.calls) < 50


def test_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = FakeJudge()
    collect(Runner(first, MODEL, settings(), cache=cache), items(10))
    second = FakeJudge()
    runner = Runner(second, MODEL, settings(), cache=cache)
    outcomes = collect(runner, items(10))
    assert second.calls == []
    assert all(o.cached for o in outcomes)
    assert runner.stats.calls.cache_hits == 10
    assert outcomes[0].response is not None and outcomes[0].response.usage.input_tokens == 100


def test_a_long_run_of_cached_answers_lets_the_loop_turn(tmp_path: Path) -> None:
    """Answers found in the cache need no wait; taken back to back they would keep the loop
    from everything else (calls in flight, their answers, a stop) until the run ends."""
    cache = ResponseCache(tmp_path / "c.sqlite")
    collect(Runner(FakeJudge(), MODEL, settings(), cache=cache), items(300))

    def slow_to_build() -> Iterator[WorkItem]:
        for item in items(300):
            time.sleep(0.0002)
            yield item

    async def turns_during_rerun() -> int:
        loop = asyncio.get_running_loop()
        turns = 0

        def tick() -> None:
            nonlocal turns
            turns += 1
            loop.call_soon(tick)

        tick()
        await asyncio.sleep(0)
        before = turns
        runner = Runner(FakeJudge(), MODEL, settings(), cache=cache)
        outcomes = [outcome async for outcome in runner.run(slow_to_build())]
        assert len(outcomes) == 300 and all(outcome.cached for outcome in outcomes)
        return turns - before

    # 300 items at 0.2 ms: about 60 ms without a wait, so about 30 turns at one per 2 ms.
    assert asyncio.run(turns_during_rerun()) >= 5


def test_budget_stops_scheduling_before_the_cap() -> None:
    judge = FakeJudge()
    runner = Runner(
        judge,
        MODEL,
        settings(concurrency=1, max_cost_usd=0.35),
        price=lambda _request, response: PricedCall(response.usage, 0.1, 0.0),
    )
    seen: list[Outcome] = []

    async def go() -> None:
        async for outcome in runner.run(items(10, forecast=0.1)):
            seen.append(outcome)

    with pytest.raises(BudgetExceeded, match=r"spent \$0\.3"):
        asyncio.run(go())
    assert len(judge.calls) == 3
    assert len(seen) == 3


def test_budget_counts_sends_that_may_have_been_billed() -> None:
    """k0's first two sends fail after they may have left (this judge's transport cannot
    tell): at their forecast they count with k0's answer, $0.30 in all, so k1 would pass the
    $0.35 cap and is never sent, and the message names the possible $0.20."""
    judge = FakeJudge(failures={"k0": [Flaky(), Flaky()]})
    runner = Runner(
        judge,
        MODEL,
        settings(concurrency=1, max_cost_usd=0.35, max_retries=3),
        price=lambda _request, response: PricedCall(response.usage, 0.1, 0.0),
    )

    async def go() -> None:
        async for _ in runner.run(items(10, forecast=0.1)):
            pass

    with pytest.raises(BudgetExceeded) as stopped:
        asyncio.run(go())
    assert judge.calls == ["k0", "k0", "k0"]
    assert "spent $0.10 on 1 calls and possibly $0.20 more for 2 send(s)" in str(stopped.value)


def test_items_that_failed_before_any_call_pass_through() -> None:
    work = [WorkItem(key="bad", request=None, error="image unreadable"), *items(1)]
    judge = FakeJudge()
    outcomes = {o.item.key: o for o in collect(Runner(judge, MODEL, settings()), work)}
    assert outcomes["bad"].error == "image unreadable"
    assert judge.calls == ["k0"]


def test_rows_of_finished_calls_are_not_held_back_by_a_slow_item_source() -> None:
    """Items that take a while to arrive (images being prepared) leave the runner free to
    yield the outcomes that finished meanwhile."""
    produced: list[str] = []

    async def slow_items() -> AsyncIterator[WorkItem]:
        for item in items(12):
            await asyncio.sleep(0.02)
            produced.append(item.key)
            yield item

    async def go() -> list[int]:
        runner = Runner(FakeJudge(delay=0.001), MODEL, settings(concurrency=8))
        return [len(produced) async for _outcome in runner.run(slow_items())]

    seen_when = asyncio.run(go())
    assert len(seen_when) == 12
    assert seen_when[0] < 12  # the first row came before the last item did


def test_the_first_calls_leave_while_the_free_slots_are_still_being_filled() -> None:
    """Building an item takes a while (an image item: its prompt, its tokens, its key); with
    hundreds of free slots, the first call must not wait for the last slot's item."""
    built: list[str] = []

    def slow_to_build() -> Iterator[WorkItem]:
        for item in items(300):
            time.sleep(0.0005)  # CPU the loop cannot use meanwhile
            built.append(item.key)
            yield item

    built_at_first_call: list[int] = []

    class Recording(FakeJudge):
        async def generate(self, request: JudgeRequest) -> JudgeResponse:
            if not built_at_first_call:
                built_at_first_call.append(len(built))
            return await super().generate(request)

    model = dataclasses.replace(MODEL, max_concurrency=None)
    runner = Runner(Recording(delay=0.001), model, settings(concurrency=256))
    outcomes = collect(runner, slow_to_build())
    assert len(outcomes) == 300
    # Filling all 256 slots in one turn of the loop (as before) sends nothing until then.
    assert built_at_first_call[0] < 64


class TaskRecordingJudge(FakeJudge):
    """Records which task made each call, and the order of sends and rows."""

    def __init__(self, events: list[str], delay: float = 0.0) -> None:
        super().__init__(delay=delay)
        self.events = events
        self.tasks: set[int] = set()

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.tasks.add(id(asyncio.current_task()))
        self.events.append(f"send {request.item_key}")
        return await super().generate(request)


def test_a_slot_goes_from_an_answer_to_the_next_call_before_the_answer_is_handed_on() -> None:
    events: list[str] = []
    judge = TaskRecordingJudge(events, delay=0.001)
    runner = Runner(judge, MODEL, settings(concurrency=3))

    async def go() -> list[Outcome]:
        outcomes = []
        async for outcome in runner.run(items(30)):
            events.append(f"row {outcome.item.key}")
            outcomes.append(outcome)
        return outcomes

    outcomes = asyncio.run(go())
    assert sorted(o.item.key for o in outcomes) == sorted(f"k{i}" for i in range(30))
    assert judge.peak == 3 and runner.stats.calls.api_calls == 30
    # Three slots, three tasks: each carries on from its answer to the next item.
    assert len(judge.tasks) == 3
    # With one slot, the next call is sent before the row of the answer just in.
    events.clear()
    judge = TaskRecordingJudge(events)
    runner = Runner(judge, MODEL, settings(concurrency=1))
    asyncio.run(go())
    assert events[:4] == ["send k0", "send k1", "row k0", "send k2"]


class InstantJudge(FakeJudge):
    """Answers without ever waiting (a local judge that computes its grade at once)."""

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.calls.append(request.item_key)
        return JudgeResponse(text="2\nok", usage=Usage(input_tokens=100, output_tokens=10))


def test_outcomes_are_handed_on_while_a_judge_that_never_waits_works() -> None:
    judge = InstantJudge()
    runner = Runner(judge, MODEL, settings(concurrency=4))
    calls_at_rows: list[int] = []

    async def go() -> None:
        async for _outcome in runner.run(items(2000)):
            calls_at_rows.append(len(judge.calls))

    asyncio.run(go())
    assert len(calls_at_rows) == 2000
    # Memory stays flat: rows are handed on as the calls go, not all at the end.
    assert calls_at_rows[0] <= 4 * 4
    assert max(c - i for i, c in enumerate(calls_at_rows)) <= 4 * 4
