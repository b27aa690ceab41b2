"""Test–retest (``runner.samples``): each item judged several times through the OpenAI wire
format, each repeat cached apart, priced, and measured against the first answer."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mmjudge.engine.cell import forecast as forecast_cell
from mmjudge.engine.cell import run_cell
from mmjudge.report.build import build_report
from mmjudge.store import RunSummary
from mmjudge.store.forecast_file import CellForecast
from tests.fixtures.loopback_server import OPENAI_PATH, LoopbackServer, RecordedRequest, user_text
from tests.helpers import compose_config

ITEMS = 12


class Wavering:
    """Answers every prompt with a grade fixed by its text; the prompts in ``moving`` get
    another grade from their second call on."""

    def __init__(self, moving: int) -> None:
        self.moving = moving
        self.seen: dict[str, int] = {}

    def grade(self, text: str) -> int:
        return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 3

    def moves(self, text: str) -> bool:
        return int(hashlib.sha256(text.encode()).hexdigest()[-4:], 16) % ITEMS < self.moving

    def __call__(self, request: RecordedRequest) -> str:
        text = user_text(request.body)
        calls = self.seen[text] = self.seen.get(text, 0) + 1
        grade = self.grade(text)
        if calls > 1 and self.moves(text):
            grade = (grade + 1) % 3
        return f"{grade}\nA reason."


def _run(tmp_path: Path, server: LoopbackServer, samples: int, run: str = "run") -> RunSummary:
    cfg = compose_config(
        [
            "model=gpt4o_mini",
            "modality=text",
            f"model.base_url={server.openai_base_url}",
            f"dataset.limit={ITEMS}",
            "runner.progress=false",
            f"runner.samples={samples}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.prepared_cache={tmp_path / 'prepared'}",
            f"paths.image_cache={tmp_path / 'images'}",
        ]
    )
    summary = run_cell(cfg, tmp_path / "runs" / run)
    assert isinstance(summary, RunSummary)
    return summary


@pytest.mark.slow
def test_samples_are_judged_cached_apart_priced_and_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    responder = Wavering(moving=4)
    with LoopbackServer(responder=responder) as server:
        one = _run(tmp_path, server, 1, "once")
        sent_once = len(server.requests_to(OPENAI_PATH))
        three = _run(tmp_path, server, 3, "thrice")
        sent = len(server.requests_to(OPENAI_PATH))
        again = _run(tmp_path, server, 3, "again")
        sent_again = len(server.requests_to(OPENAI_PATH))
    n = one.n_judgments
    assert n > 0 and sent_once == n
    # Sample 0 keeps the key a run without samples gave it: only the repeats are new calls.
    assert sent - sent_once == 2 * n
    assert sent_again == sent  # and every sample is answered from the cache the next time
    rows = (tmp_path / "runs" / "thrice" / "judgments.jsonl").read_text().splitlines()
    repeats = [json.loads(line) for line in (tmp_path / "runs" / "thrice" / "samples.jsonl").open()]
    assert len(rows) == n and sorted({r["sample"] for r in repeats}) == [1, 2]
    assert len(repeats) == 2 * n and all(r["cost_usd"] > 0 and not r["cached"] for r in repeats)
    block = three.stability
    assert block is not None and block.samples == 3 and block.n_items == n
    moving = {
        text for text in responder.seen if responder.moves(text)
    }  # prompts whose later answers differ from their first
    assert block.n_unstable == len(moving) > 0
    assert block.unstable_share == pytest.approx(len(moving) / n)
    assert block.kappa.estimate < 1.0
    assert block.spent_usd == pytest.approx(sum(r["cost_usd"] for r in repeats))
    # Sample 0 came from the cache (free); the run paid for its repeats.
    assert three.cost.spent_usd == pytest.approx(block.spent_usd) and block.spent_usd > 0
    assert three.calls is not None and three.calls.spent_usd == pytest.approx(block.spent_usd)
    assert one.stability is None and not (tmp_path / "runs" / "once" / "samples.jsonl").exists()
    assert again.stability is not None and again.stability.spent_usd == 0
    out = build_report(tmp_path / "runs", tmp_path / "reports", n_boot=50)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Does each judge agree with itself?" in page
    assert "Unstable items: " in page and f"({block.n_unstable})" in page
    for item in block.unstable:
        assert f'<td class="l">{item.result_id}</td>' in page


@pytest.mark.slow
def test_repricing_a_run_with_samples_at_its_own_sheet_gives_its_own_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmjudge.costs.reprice import reprice_run

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    with LoopbackServer(responder=Wavering(moving=4)) as server:
        summary = _run(tmp_path, server, 3)
    assert summary.stability is not None and summary.stability.total_usd > 0
    own = summary.cost.total_usd + summary.stability.total_usd
    result = reprice_run(tmp_path / "runs" / "run")
    assert result.n_repeats == 2 * summary.n_judgments
    exact = {"rel": 1e-12, "abs": 0.0}  # equal but for the order floats were summed in
    assert result.repriced.total_usd == pytest.approx(own, **exact)
    assert result.original.total_usd == pytest.approx(own, **exact)
    repeats = summary.stability.total_usd
    assert result.repriced.repeats_usd == pytest.approx(repeats, **exact)


@pytest.mark.slow
def test_a_run_with_samples_resumes_only_the_missing_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    with LoopbackServer(responder=Wavering(moving=0)) as server:
        first = _run(tmp_path, server, 2)
        path = tmp_path / "runs" / "run" / "samples.jsonl"
        lines = path.read_text().splitlines()
        path.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:20])  # killed mid-row
        (tmp_path / "cache.sqlite").unlink()
        before = len(server.requests_to(OPENAI_PATH))
        resumed = _run(tmp_path, server, 2)
        after = len(server.requests_to(OPENAI_PATH))
    assert after - before == 1
    assert resumed.stability is not None and first.stability is not None
    assert resumed.stability.n_unstable == 0
    assert resumed.stability.kappa.estimate == pytest.approx(1.0)
    # every sample agrees: the exact interval below 1, not the zero-width [1, 1]
    assert resumed.stability.kappa.low < resumed.stability.kappa.high == 1
    assert len(path.read_text().splitlines()) == len(lines)


def test_the_closing_line_gives_the_self_agreement_beside_the_people() -> None:
    from mmjudge.store import Agreement
    from mmjudge.store.cell_lines import stability_note

    block = {
        "samples": 3,
        "kappa": {"estimate": 0.8, "low": 0.7, "high": 0.9},
        "n_unstable": 2,
        "unstable_share": 0.25,
        "total_usd": 0.5,
    }
    summary = RunSummary.from_json(
        {"stability": block, "metrics": {"human_human_kappa": {"a vs b": 0.6, "a vs c": 0.5}}}
    )
    assert isinstance(summary.metrics, Agreement)
    assert stability_note(summary) == (
        "; self-agreement κ=0.800 [0.700, 0.900] over 3 samples (2 unstable items, 25.0%; "
        "human–human κ=0.500–0.600), repeats $0.50"
    )
    assert stability_note(RunSummary.from_json({})) == ""


@pytest.mark.slow
def test_a_dry_run_forecasts_every_sample(tmp_path: Path) -> None:
    def forecast(samples: int) -> dict:
        cfg = compose_config(
            [
                "model=gpt4o_mini",
                "modality=text",
                f"dataset.limit={ITEMS}",
                "runner.dry_run=true",
                f"runner.samples={samples}",
                f"paths.response_cache={tmp_path / 'cache.sqlite'}",
                f"paths.prepared_cache={tmp_path / 'prepared'}",
            ]
        )
        data = forecast_cell(cfg, tmp_path / f"dry{samples}")
        assert isinstance(data, CellForecast)
        return data.sync

    once, thrice = forecast(1), forecast(3)
    assert thrice.calls == 3 * once.calls == 3 * ITEMS
    assert thrice.usd == pytest.approx(3 * once.usd)
