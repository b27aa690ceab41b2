"""Sweeps over ``prompt=default,nuggets,questions`` as a user runs them: offline against the
loopback server (images shown) on the demo dataset and on a TREC collection, and with the
free lexical judge; the report compares the three designs; exported qrels read back."""

from __future__ import annotations

import json
from pathlib import Path

import ir_measures
import pytest

from mmjudge.cli import export
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import REPO_ROOT, run_sweep

TREC_TINY = REPO_ROOT / "tests" / "fixtures" / "trec_tiny"
KEY = {"OPENAI_API_KEY": "sk-test-loopback"}


def _sweep_dir(root: Path) -> Path:
    return sorted((root / "results" / "sweeps").iterdir())[-1]


def _report(root: Path) -> str:
    sweep = _sweep_dir(root)
    return (root / "reports" / sweep.name / "index.html").read_text(encoding="utf-8")


def _designs_section(html: str) -> list[str]:
    start = html.index('id="testbanks"')
    section = html[start : html.index("</table>", start)]
    return [line for line in section.splitlines() if line.startswith("<tr><td")]


@pytest.mark.slow
def test_three_designs_on_the_demo_through_the_loopback_with_images(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    result = run_sweep(
        tmp_path,
        "-m",
        "model=gpt4o_mini",
        f"model.base_url={loopback.openai_base_url}",
        "modality=mm",
        "prompt=default,nuggets,questions",
        "dataset.limit=24",
        env=KEY,
    )
    assert result.returncode == 0, result.stderr
    assert "sweep: 3 cells: 3 complete" in result.stderr
    assert len(loopback.requests) == 3 * 24
    rows = _designs_section(_report(tmp_path))
    assert len(rows) == 2 and all("image + text" in row for row in rows)
    assert all(">default</td>" in row for row in rows)
    out = tmp_path / "qrels"
    assert export.main([str(_sweep_dir(tmp_path)), "--out", str(out)]) == 0
    judged = list(
        ir_measures.read_trec_qrels(str(out / "demo_fashion.gpt4o_mini.mm.nuggets.qrels"))
    )
    assert len(judged) == 24


@pytest.mark.slow
def test_three_designs_on_a_trec_collection_through_the_loopback_and_lexical(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    common = [
        "dataset=trec_example",
        f"dataset.path={TREC_TINY}",
        "dataset.testbanks.nuggets=testbank_nuggets.jsonl",
        "dataset.testbanks.questions=testbank_questions.jsonl",
        "dataset.runs=[run_tiny.txt]",
        "prompt=default,nuggets,questions",
    ]
    result = run_sweep(
        tmp_path,
        "-m",
        "model=gpt4o_mini,lexical",
        f"model.base_url={loopback.openai_base_url}",
        *common,
        env=KEY,
    )
    assert result.returncode == 0, result.stderr
    assert "sweep: 6 cells: 6 complete" in result.stderr
    html = _report(tmp_path)
    rows = _designs_section(html)
    assert len(rows) == 4  # two bank designs × two judges
    summaries = [
        json.loads(p.read_text(encoding="utf-8"))
        for p in _sweep_dir(tmp_path).glob("*/summary.json")
    ]
    banks = [s["testbank"] for s in summaries if s.get("testbank")]
    assert {b["kind"] for b in banks} == {"nuggets", "questions"} and len(banks) == 4
    assert "Leaderboard: trec_example, nDCG@10" in html and 'id="coverage"' in html
