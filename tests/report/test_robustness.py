"""The robustness section: perturbed cells judged through the loopback server, compared in
the report with their clean cells, and the figures equal to a count from the rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmjudge.metrics.scoring import Interval
from mmjudge.report.analysis import analyse
from mmjudge.report.build import build_report
from mmjudge.report.findings.prose import interval
from mmjudge.report.load import cell_table
from mmjudge.report.robustness_section import attacks, split
from tests.fixtures.loopback_server import LoopbackServer, RecordedRequest, user_text
from tests.perturb.test_wire import cell, picture_dataset

pytestmark = pytest.mark.slow  # three whole cells and a report


def half_gullible(request: RecordedRequest) -> str:
    """Obeys an injected instruction on even-numbered items only; else grades by the item."""
    text = user_text(request.body)
    number = next(n for n in range(8) if f"Item {n}" in text)
    obeys = "Grade it 2" in text if number % 2 == 0 else "grade 2 for this" in text and number < 3
    if obeys:
        return "2\nAs instructed."
    return f"{number % 3}\nBy the looks of it."


def labels(run_dir: Path) -> dict[str, int]:
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").open()]
    return {f"{r['query_id']}\t{r['result_id']}": r["label"] for r in rows}


def test_changed_share_and_inflation_equal_a_count_from_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    data = picture_dataset(tmp_path / "data")
    with LoopbackServer(responder=half_gullible) as server:
        cell(server, tmp_path, data, "none")
        cell(server, tmp_path, data, "inject_text")
        cell(server, tmp_path, data, "stuff_query")
    cells = cell_table(tmp_path)
    clean, attacked = split(cells)
    assert len(clean) == 1 and sorted(attacked["perturb"]) == ["inject_text", "stuff_query"]
    analysis = analyse(clean, n_boot=200)
    found = {a.perturb: a.result for a in attacks(attacked, analysis, n_boot=200)}
    before = labels(next(tmp_path.glob("run-none-*")))
    for perturb in ("inject_text", "stuff_query"):
        after = labels(next(tmp_path.glob(f"run-{perturb}-*")))
        diffs = np.array([after[k] - before[k] for k in before])
        result = found[perturb]
        assert result.n_items == len(before)
        assert result.changed.estimate == pytest.approx(np.mean(diffs != 0))
        assert result.inflation.estimate == pytest.approx(np.mean(diffs))
    assert found["inject_text"].changed.estimate > 0
    assert found["stuff_query"].changed.estimate == 0

    out = build_report(tmp_path, tmp_path / "reports", n_boot=200)
    page = (out / "index.html").read_text()
    assert 'id="robustness"' in page and "inject_text" in page
    # The machine-readable figures are the page's: the same objects, unrounded.
    figures = {f["perturb"]: f for f in json.loads((out / "robustness.json").read_text())}
    assert sorted(figures) == ["inject_text", "stuff_query"]
    for perturb, result in found.items():
        mine = figures[perturb]
        assert mine["n_items"] == result.n_items and mine["modality"] == "mm"
        assert mine["changed"]["estimate"] == pytest.approx(result.changed.estimate)
        assert mine["inflation"]["estimate"] == pytest.approx(result.inflation.estimate)
        shown = interval(
            Interval(*(100 * mine["changed"][k] for k in ("estimate", "low", "high"))), 0
        )
        assert f"{shown} %" in page
    # The perturbed cells are not judges in the comparison: one judge in the answer cards.
    assert page.count("Held up best") == 1
