"""A run's closing line says what was paid beside what the judgments are worth: nothing when
every answer came from the response cache."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import mmjudge
from mmjudge.display import usd
from mmjudge.store import CallCounts, CostFigures, RunSummary, read_summary
from mmjudge.store.cell_lines import cell_line, spend_text
from tests.fake_runs import make_run
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import isolated_overrides


def run(root: Path, name: str, *extra: str) -> RunSummary:
    paths = [f"{key}={value}" for key, value in isolated_overrides(root).items()]
    return mmjudge.run_cell(
        [*extra, "runner.progress=false", "report.build=false", *paths], root / name
    )


def with_spend(summary: RunSummary, total: float, spent: float, hits: int) -> RunSummary:
    cost = CostFigures(total_usd=total, spent_usd=spent, usd_per_million=total / 8 * 1e6)
    calls = CallCounts(api_calls=8 - hits, cache_hits=hits, spent_usd=spent)
    return dataclasses.replace(
        summary, cost=cost, parts=dataclasses.replace(summary.parts, calls=calls)
    )


def test_the_line_says_what_was_paid_beside_what_the_answers_are_worth(tmp_path: Path) -> None:
    keys = [("q1", f"r{n}") for n in range(8)]
    labels = {key: n % 3 for n, key in enumerate(keys)}
    summary = read_summary(make_run(tmp_path, "free", labels, {k: {"a": 1} for k in keys}))
    assert spend_text(summary) == "$0 ($0 per million)"  # a free judge: worth nothing
    paid = with_spend(summary, 0.0024, 0.0024, 0)
    assert spend_text(paid) == "$0.0024 ($300 per million)"
    cached = with_spend(summary, 0.0024, 0.0, 8)
    assert spend_text(cached) == (
        "$0 paid (all answers from the cache), worth $0.0024 ($300 per million)"
    )
    assert ", $0 paid (all answers from the cache), worth $0.0024" in cell_line(cached)
    some = with_spend(summary, 0.0024, 0.0009, 5)
    assert spend_text(some) == (
        "$0.0009 paid (5 answers from the cache), worth $0.0024 ($300 per million)"
    )


@pytest.mark.slow  # three runs against a loopback server: over half a second
def test_a_rerun_answered_from_the_cache_says_none_was_paid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer() as server:
        judge = ["model=gpt4o_mini", f"model.base_url={server.openai_base_url}"]
        first = run(tmp_path, "first", *judge, "dataset.limit=8")
        again = run(tmp_path, "again", *judge, "dataset.limit=8")
        more = run(tmp_path, "more", *judge, "dataset.limit=12")
        assert server.request_count == 12
    worth = first.cost.total_usd
    assert worth > 0 and first.cost.spent_usd == pytest.approx(worth)
    assert f"{usd(worth)} ({usd(first.cost.usd_per_million)} per million)" in cell_line(first)
    assert "paid" not in cell_line(first)
    assert (
        f", $0 paid (all answers from the cache), worth {usd(worth)} "
        f"(${again.cost.usd_per_million:,.2f} per million)"
    ) in cell_line(again)
    assert (
        f", {usd(more.cost.spent_usd)} paid (8 answers from the cache), "
        f"worth {usd(more.cost.total_usd)}"
    ) in cell_line(more)
