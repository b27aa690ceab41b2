"""Audits of production labels: the stratified sample, the review file round trip, and each
period's disagreement with its change against earlier periods."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from mmjudge.cli.monitor import EXIT_MOVED, main
from mmjudge.cli.review import main as review_main
from mmjudge.errors import DatasetError
from mmjudge.monitor.audit import score_period, stratified_sample
from mmjudge.store.audit_files import SampledLabel, read_labels, read_sample
from mmjudge.store.monitor_history import read_history


def test_the_sample_takes_every_query_and_grade_with_its_weight() -> None:
    labels = {
        "q1": {f"r{i}": (0 if i < 6 else 2) for i in range(8)},
        "q2": {"a": 1, "b": 1, "c": 1},
    }
    sample = stratified_sample(labels, per_stratum=2, seed=3)
    strata = {(s.query_id, s.label) for s in sample}
    assert strata == {("q1", 0), ("q1", 2), ("q2", 1)}
    assert len(sample) == 6
    weights = {(s.query_id, s.label): s.weight for s in sample}
    assert weights == {("q1", 0): 3.0, ("q1", 2): 1.0, ("q2", 1): 1.5}
    assert sample == stratified_sample(labels, per_stratum=2, seed=3)
    assert all(labels[s.query_id][s.result_id] == s.label for s in sample)


def test_the_disagreement_rate_is_weighted_by_stratum_size() -> None:
    sample = [
        SampledLabel("q1", "a", 0, 3.0),
        SampledLabel("q1", "b", 2, 1.0),
        SampledLabel("q2", "c", 1, 1.0),
    ]
    assessed = {"q1": {"a": 1, "b": 2}, "q2": {"c": 1}}
    figures = score_period(sample, assessed, [0, 1, 2], n_boot=200)
    assert figures.n_graded == 3 and figures.n_disagree == 1
    assert figures.disagreement.estimate == pytest.approx(3 / 5)
    assert figures.confusion == [[0, 1, 0], [0, 1, 0], [0, 0, 1]]


def test_a_bad_labels_line_names_the_file_line_and_field(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"query_id": "q", "result_id": "r", "label": 1}\n{"query_id": "q"}\n')
    with pytest.raises(DatasetError, match=r"labels.jsonl:2: field 'result_id' is missing"):
        read_labels(path)
    path.write_text('{"query_id": "q", "result_id": "r", "label": 1.5}\n')
    with pytest.raises(DatasetError, match=r":1: field 'label' must be a whole grade"):
        read_labels(path)


def _items() -> list[tuple[str, str]]:
    from mmjudge.api.compose import compose
    from mmjudge.data import load_dataset

    return [(e.query_id, e.result_id) for e in load_dataset(compose([]).dataset)]


def _period(tmp_path: Path, period: str, labels: dict, flip: float, seed: int) -> int:
    """Write the period's labels, draw its sample, grade it (``flip``: the share of rows
    the people grade otherwise), import the grades and score the period."""
    results = f"paths.results={tmp_path / 'results'}"
    path = tmp_path / f"{period}.jsonl"
    path.write_text(
        "".join(
            json.dumps({"query_id": q, "result_id": r, "label": g}) + "\n"
            for (q, r), g in labels.items()
        )
    )
    review = tmp_path / f"{period}.csv"
    assert (
        main(["audit", str(path), f"period={period}", "per_stratum=2", results, f"out={review}"])
        == 0
    )
    with review.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    rng = np.random.default_rng(seed)
    for row in rows:
        label = int(row["judges"].split("=")[1])
        row["corrected_grade"] = str((label + 1) % 3 if rng.random() < flip else label)
    with review.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    graded = tmp_path / period
    graded.mkdir()
    assert review_main(["import", str(review), "--assessor", "auditor", "--out", str(graded)]) == 0
    qrels = graded / "demo_fashion.auditor.qrels"
    return main(["audit", str(path), f"period={period}", f"assessed={qrels}", results])


@pytest.mark.slow
def test_periods_are_tracked_and_a_change_in_disagreement_is_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = _items()
    rng = np.random.default_rng(0)
    labels = {key: int(rng.integers(0, 3)) for key in items}
    assert _period(tmp_path, "2026-W47", labels, flip=0.1, seed=1) == 0
    assert _period(tmp_path, "2026-W48", labels, flip=0.1, seed=2) == 0
    capsys.readouterr()
    assert _period(tmp_path, "2026-W49", labels, flip=0.8, seed=3) == EXIT_MOVED
    captured = capsys.readouterr()
    (line,) = [x for x in captured.err.splitlines() if x.startswith("mmjudge monitor")]
    assert line.startswith("mmjudge monitor: moved: disagreement rate changed by +")
    entries = read_history(tmp_path / "results" / "monitor" / "history.jsonl").audits
    assert [e.period for e in entries] == ["2026-W47", "2026-W48", "2026-W49"]
    first, second, third = entries
    assert first.change is None and second.change is not None
    assert second.change.earlier_periods == 1
    assert third.change is not None and third.change.p is not None and third.change.p < 0.01
    low = third.figures.disagreement.low
    assert low is not None and low > 0.5
    sample = read_sample(tmp_path / "results/monitor/audits/demo_fashion/2026-W49")
    assert len(sample) == third.figures.n_sampled == third.figures.n_graded
    page = tmp_path / "page"
    assert main(["report", f"paths.results={tmp_path / 'results'}", f"out={page}"]) == 0
    html = (page / "index.html").read_text(encoding="utf-8")
    assert "Audits of production labels" in html and "2026-W49" in html
