"""When a call is forecast: before its send when a budget needs the figure, after it otherwise,
the run's first forecast (the one that loads the tokenizer) on a worker thread, so no call
waits for the tokenizer; the run's forecast is the same either way."""

from __future__ import annotations

import threading
import time

import pytest

from mmjudge.engine.policy import FIRST_FORECAST_DELAY_S, WorkItem
from mmjudge.engine.sync import Runner
from mmjudge.records import Forecast, JudgeRequest, JudgeResponse
from tests.engine.test_sync import MODEL, FakeJudge, collect, settings


class OrderedJudge(FakeJudge):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.events.append(f"send {request.item_key}")
        return await super().generate(request)


def estimated_items(n: int, events: list[str]) -> list[WorkItem]:
    def estimate(key: str) -> Forecast:
        events.append(f"forecast {key}")
        return Forecast(calls=1, input_tokens=100, usd=0.001)

    return [
        WorkItem(
            key=f"k{i}",
            request=JudgeRequest(item_key=f"k{i}", prompt=f"p{i}"),
            estimate=lambda key=f"k{i}": estimate(key),
        )
        for i in range(n)
    ]


def test_without_a_budget_the_first_call_leaves_before_any_forecast() -> None:
    events: list[str] = []
    runner = Runner(OrderedJudge(events), MODEL, settings(concurrency=4))
    outcomes = collect(runner, estimated_items(6, events))
    assert len(outcomes) == 6
    # Read first: forecasts still waiting to be counted are counted when the figure is read.
    forecast = runner.stats.forecast
    assert forecast.calls == 6 and forecast.input_tokens == 600
    assert events[0] == "send k0"
    assert events.index("send k0") < events.index("forecast k0")
    assert sorted(e for e in events if e.startswith("forecast")) == [
        f"forecast k{i}" for i in range(6)
    ]


def test_with_a_budget_each_call_is_forecast_before_it_leaves() -> None:
    events: list[str] = []
    runner = Runner(OrderedJudge(events), MODEL, settings(concurrency=4, max_cost_usd=1.0))
    collect(runner, estimated_items(6, events))
    for i in range(6):
        assert events.index(f"forecast k{i}") < events.index(f"send k{i}")
    assert runner.stats.forecast.calls == 6 and runner.stats.forecast.input_tokens == 600


@pytest.mark.slow  # over a second
def test_the_first_forecast_is_made_on_a_worker_thread_while_calls_are_in_flight() -> None:
    made_on: dict[str, int] = {}

    def estimate(key: str) -> Forecast:
        made_on[key] = threading.get_ident()
        time.sleep(0.1 if key == "k0" else 0.0)  # a tokenizer loading
        return Forecast(calls=1, input_tokens=100, usd=0.001)

    work = [
        WorkItem(
            key=f"k{i}",
            request=JudgeRequest(item_key=f"k{i}", prompt=f"p{i}"),
            estimate=lambda key=f"k{i}": estimate(key),
        )
        for i in range(20)
    ]
    # Answers take longer than the thread's start delay, so the first forecast is made aside.
    assert FIRST_FORECAST_DELAY_S < 0.3
    runner = Runner(FakeJudge(delay=0.3), MODEL, settings(concurrency=4))
    assert len(collect(runner, work)) == 20
    assert made_on["k0"] != threading.get_ident()
    assert {made_on[f"k{i}"] for i in range(1, 20)} == {threading.get_ident()}
    assert runner.stats.forecast.calls == 20 and runner.stats.forecast.input_tokens == 2000
