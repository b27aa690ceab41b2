"""The monitoring history: typed entries, one writer and one reader, and a history the last
release wrote still read, entry by entry, and appended to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.store.bounds import Bounds
from mmjudge.store.monitor_history import (
    AuditEntry,
    CheckEntry,
    HomogeneityTest,
    PeriodChange,
    PeriodFigures,
    Thresholds,
    append_entry,
    read_history,
)

#: A baseline check, a check compared with it, and a scored audit period, each as the last
#: release appended it (no ``schema_version``), then a line a killed writer left partial.
BASELINE = {
    "kind": "check",
    "check": "2026-11-01T00-00-00Z-11",
    "series": "demo_fashion.gpt4o_mini.text.default",
    "time": "2026-11-01T00:00:00+00:00",
    "run_dir": "results/monitor/checks/s/2026-11-01T00-00-00Z-11",
    "status": "complete",
    "dataset": "demo_fashion",
    "model": "gpt4o_mini",
    "model_id": "gpt-4o-mini-2024-07-18",
    "modality": "text",
    "prompt_id": "default",
    "n_items": 40,
    "items_sha256": "ab" * 32,
    "models": {"gpt-4o-mini-2024-07-18": 40},
    "fingerprints": {"fp_a": 40},
    "kappa_people": {"estimate": 0.61, "low": 0.42, "high": 0.77},
    "label_distribution": {"0": 10, "1": 18, "2": 12},
    "spent_usd": 0.0123,
    "baseline": None,
    "moved": [],
    "thresholds": {"max_change": 0.05, "alpha": 0.01, "allow_new_model": False},
}
COMPARED = {
    **BASELINE,
    "check": "2026-11-08T00-00-00Z-12",
    "time": "2026-11-08T00:00:00+00:00",
    "fingerprints": {"fp_b": 40},
    "baseline": BASELINE["check"],
    "baseline_kappa_people": BASELINE["kappa_people"],
    "baseline_spent_usd": 0.0123,
    "same_items": True,
    "drift": {
        "n": 40,
        "changed": 4,
        "change_share": {"estimate": 0.1, "low": 0.025, "high": 0.2},
        "kappa": {"estimate": 0.84, "low": 0.7, "high": 0.96},
        "stuart_maxwell": {"statistic": 2.5, "df": 2.0, "p": 0.29},
        "confusion": [[9, 1, 0], [1, 16, 1], [0, 1, 11]],
        "label_distribution": {"before": {"0": 10, "1": 18, "2": 12}, "after": {"0": 10}},
    },
    "new_models": [],
    "new_fingerprints": ["fp_b"],
    "moved": ["10.0% of labels changed [2.5%, 20.0%] (4 of 40; limit 5.0%)"],
}
AUDIT = {
    "kind": "audit",
    "series": "audit.demo_fashion",
    "dataset": "demo_fashion",
    "period": "2026-W48",
    "time": "2026-12-01T00:00:00+00:00",
    "labels_file": "w48.jsonl",
    "assessed_file": "w48/demo_fashion.auditor.qrels",
    "n": 12,
    "n_sampled": 12,
    "n_disagree": 3,
    "disagreement": {"estimate": 0.2, "low": 0.05, "high": 0.4},
    "disagreement_se": 0.09,
    "confusion": [[3, 1, 0], [0, 4, 1], [0, 1, 2]],
    "grades": [0, 1, 2],
    "change": {
        "earlier_periods": 1,
        "earlier_disagreement": 0.1,
        "difference": 0.1,
        "p": 0.3,
        "pattern_p": None,
    },
    "moved": [],
}


def _write(path: Path, *entries: dict[str, object], tail: str = "") -> None:
    lines = [json.dumps(entry, sort_keys=True) for entry in entries]
    path.write_text("\n".join(lines) + "\n" + tail, encoding="utf-8")


def test_a_history_the_last_release_wrote_reads_entry_by_entry(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    _write(
        path,
        BASELINE,
        {"kind": "later", "what": "a kind of a later version"},
        COMPARED,
        AUDIT,
        tail='{"kind": "check", "check": "cut',
    )
    history = read_history(path)
    first, second = history.checks
    assert first.comparison is None and first.thresholds == Thresholds()
    assert first.kappa_people == Bounds(0.61, 0.42, 0.77)
    assert first.label_distribution == {"0": 10, "1": 18, "2": 12}
    compared = second.comparison
    assert compared is not None and compared.baseline == first.check
    assert compared.baseline_kappa_people == first.kappa_people and compared.same_items
    assert compared.drift.n_paired == 40 and compared.drift.changed == 4
    assert compared.drift.change_share == Bounds(0.1, 0.025, 0.2)
    assert compared.drift.stuart_maxwell == HomogeneityTest(2.5, 2.0, 0.29)
    assert compared.drift.after == {"0": 10}
    assert compared.new_fingerprints == ("fp_b",) and second.moved == tuple(COMPARED["moved"])
    (audit,) = history.audits
    assert audit.figures.n_graded == 12 and audit.figures.grades == (0, 1, 2)
    assert audit.figures.disagreement == Bounds(0.2, 0.05, 0.4)
    assert audit.change == PeriodChange(1, 0.1, 0.1, 0.3, None)


def test_entries_appended_again_are_the_layout_the_last_release_wrote(tmp_path: Path) -> None:
    """The one writer keeps the file's layout: each entry read back and appended again is the
    old line with the version added, and a history mixing both reads whole."""
    old = tmp_path / "old.jsonl"
    _write(old, BASELINE, COMPARED, AUDIT)
    history = read_history(old)
    new = tmp_path / "new.jsonl"
    for entry in (*history.checks, *history.audits):
        append_entry(new, entry)
    lines = [json.loads(line) for line in new.read_text(encoding="utf-8").splitlines()]
    assert lines == [{**e, "schema_version": 1} for e in (BASELINE, COMPARED, AUDIT)]
    _write(old, BASELINE, COMPARED)
    append_entry(old, history.audits[0])
    assert read_history(old) == history


def test_a_missing_history_is_empty_and_a_new_one_is_made_with_its_folder(tmp_path: Path) -> None:
    path = tmp_path / "monitor" / "history.jsonl"
    assert read_history(path).checks == () and read_history(path).audits == ()
    entry = AuditEntry(
        series="audit.d",
        dataset="d",
        period="p1",
        time="2026-12-01T00:00:00+00:00",
        labels_file="l.jsonl",
        assessed_file="a.qrels",
        figures=PeriodFigures(2, 2, 0, Bounds(0.0, 0.0, 0.0), None, [[1, 0], [0, 1]], (0, 1)),
    )
    append_entry(path, entry)
    assert read_history(path).audits == (entry,)


@pytest.mark.parametrize("field", ["kappa_people", "drift"])
def test_a_block_that_is_not_an_object_reads_as_undefined(tmp_path: Path, field: str) -> None:
    path = tmp_path / "history.jsonl"
    _write(path, {**COMPARED, field: "garbled"})
    (entry,) = read_history(path).checks
    if field == "drift":
        assert entry.comparison is None
    else:
        assert entry.kappa_people == Bounds()
    assert isinstance(entry, CheckEntry)
