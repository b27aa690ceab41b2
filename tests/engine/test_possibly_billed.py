"""Requests that may have reached the provider and got no answer are counted as possibly
billed, at their forecast, in the rows, the summary and the report; a claim is marked sent
only once its request has left, and a send lost in the window before that is counted apart,
as maybe resent."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mmjudge.display import usd
from mmjudge.engine.response_cache import MAYBE_SENT, SENT, Owner, ResponseCache, request_key
from mmjudge.engine.sync import Runner
from mmjudge.records import JudgeRequest
from mmjudge.store.blocks import possible_extra
from tests.engine.test_sync import MODEL, FakeJudge, collect, items, settings
from tests.fixtures.loopback_server import OPENAI_PATH, LoopbackServer
from tests.helpers import run_sweep

KEY = "sk-possibly-billed-test-0123456789"


def test_a_send_killed_before_it_left_is_maybe_resent_not_resent(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    gone = cache.claims(0.001, Owner("elsewhere", 1, "1"))  # killed: its claims expire
    gone.claim("marked", sending=MAYBE_SENT)  # killed before its request left
    gone.claim("left", sending=MAYBE_SENT)
    gone.sending("left", SENT)  # killed after its request left
    time.sleep(0.01)
    later = cache.claims(30.0, Owner("later", 2, "2"))
    marked, left = later.claim("marked"), later.claim("left")
    assert (marked.resent, marked.maybe_resent) == (0, 1)
    assert (left.resent, left.maybe_resent) == (1, 0)


def test_a_maybe_resent_request_is_possibly_billed_at_its_forecast(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    gone = cache.claims(0.001, Owner("elsewhere", 1, "1"))
    key = request_key(MODEL, JudgeRequest(item_key="k0", prompt="p0"))
    gone.claim(key, sending=MAYBE_SENT)  # then killed before the request left
    time.sleep(0.01)
    work = items(2, forecast=0.25)
    runner = Runner(FakeJudge(), MODEL, settings(), cache=cache, claims=cache.claims(30.0))
    outcomes = {o.item.key: o for o in collect(runner, work)}
    assert outcomes["k0"].resent == 0
    assert (outcomes["k0"].possibly_billed, outcomes["k0"].possibly_billed_usd) == (1, 0.25)
    assert outcomes["k1"].possibly_billed == 0
    counts = runner.stats.calls
    assert (counts.maybe_resent, counts.possibly_billed) == (1, 1)
    assert counts.possibly_billed_usd == pytest.approx(0.25)


@pytest.mark.slow
def test_calls_timed_out_after_they_left_are_possibly_billed(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 3.0  # every answer comes after the runner's limit
    done = run_sweep(
        tmp_path,
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=8",
        "runner.timeout_s=2",
        "runner.max_retries=1",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
        "runner.breaker_failures=100",
        env={"OPENAI_API_KEY": KEY},
    )
    sent = len(loopback.requests_to(OPENAI_PATH))
    (run_dir,) = sorted((tmp_path / "results" / "runs").iterdir())
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert sent == 16, done.stderr  # two attempts for each of 8 items, none answered in time
    assert sum(r["possibly_billed"] for r in rows) == sent
    forecast = summary["forecast"]["usd"]
    possible = summary["cost"]["possibly_billed_usd"]
    assert summary["cost"]["possibly_billed_requests"] == summary["calls"]["possibly_billed"] == 16
    assert possible == pytest.approx(2 * forecast) and possible > 0
    assert summary["calls"]["possibly_billed_usd"] == pytest.approx(possible)
    assert summary["cost"]["spent_usd"] == 0  # nothing is known to be paid
    console = done.stdout + done.stderr
    assert f"possibly billed +{usd(possible)} (16 sends given up after they left)" in console
    # nothing was judged, so no report is built: the console and the summary say it
    assert not list((tmp_path / "reports").rglob("*.html"))


def test_the_possible_extra_stands_beside_the_spend_not_in_it() -> None:
    import pandas as pd

    from mmjudge.costs.run_dollars import cost_figures

    frame = pd.DataFrame(
        {
            "cost_usd": [0.01, 0.02, 0.0],
            "image_cost_usd": [0.0, 0.0, 0.0],
            "cached": [False, False, False],
            "resent": [0, 1, 0],
            "possibly_billed": [0, 1, 2],
            "possibly_billed_usd": [0.0, 0.015, 0.03],
        }
    )
    cost = cost_figures(frame)
    assert cost.spent_usd == pytest.approx(0.01 + 0.02 * 2)  # the resend is known spend
    assert cost.possibly_billed_requests == 3
    assert cost.possibly_billed_usd == pytest.approx(0.045)
    assert possible_extra(cost) == (3, pytest.approx(0.045))


def test_calls_given_up_at_a_stop_are_possibly_billed_at_their_forecast(tmp_path: Path) -> None:
    import asyncio

    from mmjudge.errors import Interrupted

    cache = ResponseCache(tmp_path / "c.sqlite")
    runner = Runner(
        FakeJudge(delay=5.0),
        MODEL,
        settings(concurrency=3, grace_s=0.0),
        cache=cache,
        claims=cache.claims(30.0),
    )

    async def go() -> None:
        async def stop_soon() -> None:
            await asyncio.sleep(0.05)
            runner.request_stop(15)

        stopper = asyncio.create_task(stop_soon())
        with pytest.raises(Interrupted):
            async for _ in runner.run(items(6, forecast=0.1)):
                pass
        await stopper

    asyncio.run(go())
    counts = runner.stats.calls
    assert counts.abandoned_in_flight == counts.possibly_billed == 3
    assert counts.abandoned_usd == counts.possibly_billed_usd == pytest.approx(0.3)
    assert counts.handed_on == 3  # their claims carry them to the resume, which counts them
    assert counts.handed_on_usd == pytest.approx(0.3)
