"""The report's test-bank sections: direct against bank grading per model and modality, and
each system's coverage of the banks."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mmjudge.engine.cell import run_cell
from mmjudge.report.build import build_report
from mmjudge.report.testbank_section import coverage
from tests.helpers import REPO_ROOT, compose_config

TREC_TINY = REPO_ROOT / "tests" / "fixtures" / "trec_tiny"


def _cells(tmp_path: Path, prompts: list[str], *overrides: str) -> Path:
    sweep = tmp_path / "sweep"
    for prompt in prompts:
        cfg = compose_config(
            [
                f"prompt={prompt}",
                f"paths.response_cache={tmp_path / 'cache.sqlite'}",
                "runner.progress=false",
                *overrides,
            ]
        )
        run_cell(cfg, sweep / prompt)
    return sweep


def _trec_report_section(tmp_path: Path, runs: list[Path], anchor: str) -> tuple[Path, str]:
    """Grade the tiny TREC collection against its nugget bank, build the report with the
    given system runs, and return the report folder and the table under ``id=anchor``."""
    sweep = _cells(
        tmp_path,
        ["nuggets"],
        "dataset=trec_example",
        f"dataset.path={TREC_TINY}",
        "dataset.testbanks.nuggets=testbank_nuggets.jsonl",
        f"dataset.runs=[{','.join(str(run) for run in runs)}]",
    )
    out = build_report(sweep, tmp_path / "reports", n_boot=50)
    page = (out / "index.html").read_text(encoding="utf-8")
    start = page.index(f'id="{anchor}"')
    return out, page[start : page.index("</table>", start)]


@pytest.mark.slow  # over a second
def test_report_compares_bank_designs_with_direct_grading(tmp_path: Path) -> None:
    sweep = _cells(tmp_path, ["default", "nuggets", "questions"])
    out = build_report(sweep, tmp_path / "reports", n_boot=100)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Direct grading against test-bank grading" in page
    start = page.index('id="testbanks"')
    section = page[start : page.index("</table>", start)]
    assert section.count("<tr><td") == 2
    assert '<td class="l">nuggets</td><td class="l">default</td>' in section
    assert "share of entries graded ≥ 4 of 5: 0 below 50%, 1 from 50%, 2 from 100%" in section
    assert "+0.00</td>" in section  # both free: Δ$ per million is 0


def test_coverage_by_hand() -> None:
    graded = {
        "q1": {"d1": {"a": 5, "b": 0}, "d2": {"a": 1, "b": 4}},
        "q2": {"d3": {"c": 4}},
    }
    run = {"q1": {"d1": 9.0, "d2": 8.0}, "q2": {"d9": 3.0, "d3": 2.0}}
    # top 1: q1 covers a of {a, b} -> 0.5; q2's top document was not graded -> 0.
    assert coverage(graded, run, 4, k=1) == pytest.approx(0.25)
    # top 2: q1 covers a and b -> 1; q2 covers c -> 1.
    assert coverage(graded, run, 4, k=2) == pytest.approx(1.0)
    assert coverage(graded, run, 5, k=2) == pytest.approx(0.5 * (0.5 + 0.0))
    assert math.isnan(coverage({}, run, 4))


def test_report_lists_each_systems_coverage_on_a_trec_collection(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "good.txt").write_text("q1 Q0 d1 1 9 g\nq1 Q0 d2 2 8 g\nq2 Q0 d3 1 9 g\n")
    (runs / "poor.txt").write_text("q1 Q0 d2 1 9 p\nq1 Q0 d1 2 8 p\nq2 Q0 d1 1 9 p\n")
    out, section = _trec_report_section(
        tmp_path, [runs / "good.txt", runs / "poor.txt"], "coverage"
    )
    lines = [line for line in section.splitlines() if line.startswith("<tr><td")]
    # Lexical grades: d1 covers both of q1's nuggets, d2 neither, d3 both of q2's, and d1
    # neither of q2's. good: (1 + 1) / 2; poor: (1 + 0) / 2 (d1 is in its top 10 for q1).
    assert len(lines) == 2
    assert '<td class="l">good</td><td>1.000</td><td>1</td>' in lines[0]
    assert '<td class="l">poor</td><td>0.500</td><td>2</td>' in lines[1]
    assert (out / "leaderboard.csv").is_file()


def test_report_lists_each_entrys_coverage_and_leave_one_out_delta_tau(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    # Human grades: q1 d1=3 d2=0, q2 d3=2 d1=1. "up" ranks the better documents first.
    (runs / "up.txt").write_text("q1 Q0 d1 1 9 u\nq1 Q0 d2 2 8 u\nq2 Q0 d3 1 9 u\nq2 Q0 d1 2 8 u\n")
    (runs / "down.txt").write_text(
        "q1 Q0 d2 1 9 d\nq1 Q0 d1 2 8 d\nq2 Q0 d1 1 9 d\nq2 Q0 d3 2 8 d\n"
    )
    _, section = _trec_report_section(
        tmp_path, [runs / "up.txt", runs / "down.txt"], "bank-entries"
    )
    rows = [line for line in section.splitlines() if line.startswith("<tr><td")]
    cells = [[c.split(">")[-1] for c in row.split("</td>")[2:6]] for row in rows]
    # Lexical: d1 covers cats and meat, d2 neither; d3 covers both of q2's, d1 neither. With
    # every entry the judge's labels order the systems as the humans do (τ = 1); leaving one
    # of a query's two nuggets out still separates its documents the same way (Δτ = 0).
    assert cells == [
        ["q1", "cats", "50% of 2", "+0.000"],
        ["q1", "meat", "50% of 2", "+0.000"],
        ["q2", "eiffel tower", "50% of 2", "+0.000"],
        ["q2", "330 metres", "50% of 2", "+0.000"],
    ]


def test_leaving_an_entry_out_derives_grades_from_the_others(tmp_path: Path) -> None:
    import json

    from mmjudge.config import PromptConfig
    from mmjudge.report.entries import _Graded

    rows = [
        {"query_id": "q1", "result_id": "d1", "entry_grades": {"a": 5, "b": 0}, "error": None},
        {"query_id": "q1", "result_id": "d2", "entry_grades": {"a": 0, "b": 5}, "error": None},
        {"query_id": "q2", "result_id": "d3", "entry_grades": {"c": 5}, "error": None},
    ]
    (tmp_path / "judgments.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    graded = _Graded(tmp_path)
    prompt = PromptConfig(bank="nuggets")
    assert graded.labels(prompt, [0, 1, 2]) == [1.0, 1.0, 2.0]  # half of q1's entries each
    assert graded.labels(prompt, [0, 1, 2], drop="b") == [2.0, 0.0, 2.0]  # a alone decides
