"""The shared policy: each answer is priced once and its cost travels with its outcome; the
forecast is the runner's tally of the items it drew, not a side effect of building them."""

from __future__ import annotations

from pathlib import Path

from mmjudge.costs.calls import PricedCall
from mmjudge.engine.policy import CallPolicy, RunStats, WorkItem
from mmjudge.engine.response_cache import ResponseCache, request_key
from mmjudge.engine.sync import Runner
from mmjudge.records import Forecast, JudgeRequest, JudgeResponse, Usage
from tests.engine.test_sync import MODEL, FakeJudge, collect, items, settings


class CountingPricer:
    """Prices every answer at 0.5 and remembers which it priced."""

    def __init__(self) -> None:
        self.priced: list[str] = []

    def __call__(self, request: JudgeRequest, response: JudgeResponse) -> PricedCall:
        self.priced.append(request.item_key)
        usage = Usage(response.usage.input_tokens, response.usage.output_tokens, image_tokens=7)
        return PricedCall(usage, 0.5, 0.1)


def test_each_answer_is_priced_once_and_the_cost_travels_with_it(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache.sqlite")
    work = items(3)
    first = work[0].request
    assert first is not None
    cache.put(request_key(MODEL, first), JudgeResponse(text="1", usage=Usage(50, 5)))
    pricer = CountingPricer()
    runner = Runner(FakeJudge(), MODEL, settings(), cache=cache, price=pricer)
    outcomes = {o.item.key: o for o in collect(runner, work)}
    assert sorted(pricer.priced) == ["k0", "k1", "k2"]  # the cache hit too, for its row
    assert all(
        o.priced.total_usd == 0.5 and o.priced.usage.image_tokens == 7 for o in outcomes.values()
    )
    assert runner.stats.calls.spent_usd == 1.0  # the two paid answers; the cache hit is free
    answer = outcomes["k1"].response
    assert answer is not None and answer.usage.image_tokens == 0  # never edited in place
    cache.close()


def test_the_forecast_is_the_tally_of_the_items_the_runner_drew() -> None:
    work = [
        WorkItem(
            key=f"k{i}",
            request=JudgeRequest(item_key=f"k{i}", prompt="p"),
            forecast=Forecast(calls=1, usd=0.1),
        )
        for i in range(4)
    ]
    runner = Runner(FakeJudge(), MODEL, settings())
    collect(runner, work)
    assert runner.stats.forecast.calls == 4
    assert runner.stats.forecast.usd == 0.4
    assert all(item.forecast.calls == 1 for item in work)  # the items themselves unchanged


def test_one_backoff_rule_grows_is_capped_and_honours_retry_after() -> None:
    policy = CallPolicy(settings(backoff_base_s=1.0, backoff_max_s=4.0), RunStats())
    assert 0.5 <= policy.backoff(1, None) <= 1.0
    assert 2.0 <= policy.backoff(3, None) <= 4.0
    assert policy.backoff(10, None) <= 4.0
    assert policy.backoff(1, 9.0) == 9.0  # the server's wait wins over the cap


def test_the_budget_counts_calls_at_the_price_they_are_paid() -> None:
    item = WorkItem(
        key="k", request=JudgeRequest(item_key="k", prompt="p"), forecast=Forecast(usd=1.0)
    )
    sync = CallPolicy(settings(max_cost_usd=0.8), RunStats())
    batch = CallPolicy(settings(max_cost_usd=0.8), RunStats(), discount=0.5)
    assert sync.over_budget(item, 0.0) and not batch.over_budget(item, 0.0)
    assert batch.over_budget(item, 0.4)


def test_the_budget_counts_what_may_have_been_billed() -> None:
    """Sends given up after they left may be billed: the budget counts them at their
    forecast, so a provider that never answers cannot run a bill past the cap."""
    item = WorkItem(
        key="k", request=JudgeRequest(item_key="k", prompt="p"), forecast=Forecast(usd=0.3)
    )
    policy = CallPolicy(settings(max_cost_usd=1.0), RunStats())
    assert not policy.over_budget(item, 0.0)
    policy.possibly_billed(item, sends=2)  # 0.6 may have been billed
    assert not policy.over_budget(item, 0.0)  # 0.6 + 0.3 stays under 1.0
    assert policy.over_budget(item, 0.2)  # with 0.2 under way it could pass
    policy.possibly_billed(item)
    assert policy.over_budget(item, 0.0)  # 0.9 + 0.3
