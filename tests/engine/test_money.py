"""Issue 41, money: sends that may have been billed are one figure, kept across resumes;
the budget holds for the cell across runs and counts retries; two processes cannot share a
run folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.fixtures.loopback_server import OPENAI_PATH, LoopbackServer
from tests.helpers import run_sweep

KEY = "sk-money-test-0123456789abcdef"


def _console_sends(text: str) -> int:
    found = re.findall(r"possibly billed \+\$[0-9.]+ \((\d+) sends given up", text)
    return int(found[-1]) if found else 0


@pytest.mark.slow
def test_sends_lost_at_a_breaker_stop_are_one_figure_kept_on_resume(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 3.0  # every answer comes after the runner's 1 s limit
    run_dir = tmp_path / "run"
    common = (
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=20",
        "runner.max_retries=1",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
        f"hydra.run.dir={run_dir}",
    )
    first = run_sweep(tmp_path, *common, "runner.timeout_s=1", env={"OPENAI_API_KEY": KEY})
    sent = len(loopback.requests_to(OPENAI_PATH))
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed", first.stderr  # the breaker stopped it
    console = first.stdout + first.stderr
    figures = (
        _console_sends(console),
        summary["cost"]["possibly_billed_requests"],
        summary["calls"]["possibly_billed"],
    )
    assert figures == (sent, sent, sent), console

    loopback.latency_s = 0.0
    second = run_sweep(tmp_path, *common, "runner.timeout_s=30", env={"OPENAI_API_KEY": KEY})
    resumed = json.loads((run_dir / "summary.json").read_text())
    answered = len(loopback.requests_to(OPENAI_PATH)) - sent
    assert resumed["status"] == "complete", second.stderr
    assert resumed["calls"]["api_calls"] == answered
    # What the server received beyond answered calls: every unanswered send of the first run
    # is either possibly billed or counted as resent (a send that left, paid as its answer).
    unanswered = resumed["cost"]["possibly_billed_requests"] + resumed["cost"]["resent_requests"]
    assert unanswered == sent, second.stdout + second.stderr
    assert (
        _console_sends(second.stdout + second.stderr)
        == (resumed["cost"]["possibly_billed_requests"])
    )


def test_retries_are_sends_the_budget_checks() -> None:
    import asyncio

    from mmjudge.engine.sync import Runner
    from mmjudge.errors import BudgetExceeded
    from tests.engine.test_sync import MODEL, FakeJudge, items, settings

    # Every call times out after it may have left: each send is possibly billed at 0.1.
    cap = 0.25
    runner = Runner(
        FakeJudge(delay=5.0),
        MODEL,
        settings(concurrency=1, timeout_s=0.02, max_retries=5, max_cost_usd=cap),
    )

    async def go() -> None:
        with pytest.raises(BudgetExceeded):
            async for _ in runner.run(items(3, forecast=0.1)):
                pass

    asyncio.run(go())
    calls = runner.stats.calls
    assert calls.stopped_by_budget
    assert calls.possibly_billed == 2  # a third send would pass the cap
    assert calls.possibly_billed_usd <= cap


def test_the_budget_holds_for_the_cell_across_runs(tmp_path: Path) -> None:
    from mmjudge.engine.earlier import earlier_runs
    from mmjudge.engine.sync import Runner
    from mmjudge.errors import BudgetExceeded
    from tests.engine.test_sync import MODEL, FakeJudge, collect, items, settings

    # An earlier run of the cell paid 0.0045 (one answer sent twice) and stopped at its cap.
    rows = [
        {"query_id": "q", "result_id": "a", "cost_usd": 0.0015, "cached": False, "resent": 1},
        {"query_id": "q", "result_id": "b", "cost_usd": 0.0015, "cached": False, "resent": 0},
        {"query_id": "q", "result_id": "c", "cost_usd": 0.0015, "cached": True, "resent": 0},
    ]
    (tmp_path / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stats = earlier_runs(tmp_path)
    assert stats.spent_before_usd == pytest.approx(0.0045)
    judge = FakeJudge()
    runner = Runner(judge, MODEL, settings(concurrency=1, max_cost_usd=0.005), stats=stats)
    with pytest.raises(BudgetExceeded, match=r"\$0\.0045 in earlier runs of this cell"):
        collect(runner, items(5, forecast=0.001))
    assert judge.calls == [] and runner.stats.calls.stopped_by_budget


def test_a_resume_carries_the_possibly_billed_sends_not_the_handed_on_ones(
    tmp_path: Path,
) -> None:
    from mmjudge.engine.earlier import earlier_runs
    from mmjudge.store.blocks import CallCounts

    calls = CallCounts(
        possibly_billed=33, possibly_billed_usd=0.33, handed_on=5, handed_on_usd=0.05
    )
    summary = {"schema_version": 2, "calls": calls.to_json()}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    carried = earlier_runs(tmp_path).calls
    assert (carried.possibly_billed, carried.possibly_billed_usd) == (28, pytest.approx(0.28))


@pytest.mark.slow
def test_a_second_process_on_a_run_folder_refuses_whatever_its_cache(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    import time

    from tests.helpers import start_sweep

    loopback.latency_s = 1.0  # 15 s of calls: the second process starts meanwhile
    run_dir = tmp_path / "run"
    common = (
        "model=gpt4o",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=30",
        "runner.concurrency=2",
        f"hydra.run.dir={run_dir}",
    )
    env = {"OPENAI_API_KEY": KEY}
    first = start_sweep(tmp_path, *common, "paths.response_cache=one.sqlite", env=env)
    try:
        deadline = time.monotonic() + 120
        while not loopback.requests_to(OPENAI_PATH) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert first.poll() is None  # still judging
        second = run_sweep(tmp_path, *common, "paths.response_cache=two.sqlite", env=env)
        assert first.poll() is None, second.stderr  # refused while the first was running
        assert first.wait(timeout=240) == 0
    finally:
        first.kill()
    assert second.returncode == 2, second.stdout + second.stderr
    (line,) = second.stderr.strip().splitlines()
    assert line.startswith("mmjudge: ") and str(run_dir) in line and "hydra.run.dir" in line
    assert len(loopback.requests_to(OPENAI_PATH)) == 30  # paid once
    rows = (run_dir / "judgments.jsonl").read_text().splitlines()
    assert len(rows) == 30
    assert json.loads((run_dir / "summary.json").read_text())["n_judgments"] == 30
