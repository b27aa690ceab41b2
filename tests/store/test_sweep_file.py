"""``sweep_summary.json``: one typed record, written and read back by the store alone, and a
file in the layout the last release wrote still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.errors import MMJudgeError
from mmjudge.report.load import cell_table, write_sweep_summary
from mmjudge.store import (
    SWEEP_SUMMARY,
    Bounds,
    SweepSummary,
    SweepSummaryCell,
    read_summary,
    read_sweep_summary,
)
from mmjudge.store import write_sweep_summary as write_file
from tests.fake_runs import make_run

KEYS = [(f"q{i // 4}", f"r{i}") for i in range(16)]
HUMAN = {key: {"a": i % 3, "b": i % 3} for i, key in enumerate(KEYS)}

#: ``sweep_summary.json`` as the last release wrote it (through a pandas table: a count with
#: a missing value beside it came out as a float, an undefined κ as null).
LAST_RELEASE = {
    "schema_version": 1,
    "n_cells": 2,
    "n_skipped": 1,
    "by_status": {"complete": 1, "skipped": 1},
    "exit_code": 0,
    "cells": [
        {
            "run_id": "20260101_shop_m_text_default",
            "status": "complete",
            "skip_reason": None,
            "dataset": "shop",
            "model": "m",
            "modality": "text",
            "prompt_id": "default",
            "kind": "single",
            "n": 16,
            "n_scored": 16.0,
            "n_errors": 0,
            "status_reason": None,
            "first_error": None,
            "kappa": 0.75,
            "kappa_interval": {"estimate": 0.75, "low": 0.5, "high": 0.9},
            "alpha": 0.7,
            "usd_per_million": 12.5,
        },
        {
            "run_id": "20260101_shop_m_image_default",
            "status": "skipped",
            "skip_reason": "the judge cannot see images",
            "dataset": "shop",
            "model": "m",
            "modality": "image",
            "prompt_id": "default",
            "kind": "single",
            "n": 0,
            "n_scored": None,
            "n_errors": 0,
            "status_reason": None,
            "first_error": None,
            "kappa": None,
            "kappa_interval": None,
            "alpha": None,
            "usd_per_million": 0.0,
        },
    ],
}


def test_a_file_the_last_release_wrote_still_reads(tmp_path: Path) -> None:
    (tmp_path / SWEEP_SUMMARY).write_text(json.dumps(LAST_RELEASE), encoding="utf-8")
    found = read_sweep_summary(tmp_path)
    assert found is not None
    assert (found.n_cells, found.n_skipped, found.exit_code) == (2, 1, 0)
    assert found.by_status == {"complete": 1, "skipped": 1}
    judged, skipped = found.cells
    assert judged.n_judgments == 16 and judged.n_scored == 16
    assert judged.kappa_interval == Bounds(0.75, 0.5, 0.9)
    assert (judged.kappa, judged.alpha, judged.usd_per_million) == (0.75, 0.7, 12.5)
    assert skipped.skip_reason == "the judge cannot see images"
    assert skipped.n_scored is None and skipped.kappa_interval is None
    # written again, the file is the one the last release wrote (up to the float count)
    write_file(tmp_path, found)
    again = json.loads((tmp_path / SWEEP_SUMMARY).read_text(encoding="utf-8"))
    LAST_RELEASE["cells"][0]["n_scored"] = 16  # type: ignore[index]
    assert again == LAST_RELEASE


def test_the_record_is_copied_from_each_cells_summary_and_round_trips(tmp_path: Path) -> None:
    root = tmp_path / "sweep"
    labels = {key: HUMAN[key]["a"] for key in KEYS}
    make_run(root, "text", labels, HUMAN, dataset="shop", model="m", cost=0.002)
    make_run(root, "panel", labels, HUMAN, dataset="shop", model="m", modality="mm")
    panel = root / "panel" / "summary.json"
    data = json.loads(panel.read_text(encoding="utf-8"))
    data.update(kind="panel", status="failed", status_reason="every judgment failed")
    panel.write_text(json.dumps(data), encoding="utf-8")
    written = write_sweep_summary(root, cell_table(root))
    summary = read_summary(root / "text")
    text = next(cell for cell in written.cells if cell.run_id == summary.run_id)
    assert text.kappa == summary.metrics.kappa == pytest.approx(1.0)
    assert text.n_judgments == 16 and text.n_scored == 16
    assert text.usd_per_million == summary.cost.usd_per_million == pytest.approx(2000.0)
    assert text.kappa_interval == Bounds.of(summary.metrics.interval("kappa"))
    # the panel is counted by status, but the exit code is the judged cells'
    assert written.by_status == {"complete": 1, "failed": 1} and written.exit_code == 0
    assert read_sweep_summary(root) == written


def test_counts_follow_from_the_cells() -> None:
    cells = [
        SweepSummaryCell("a", "complete", "d", "m", "text", "default"),
        SweepSummaryCell("b", "skipped", "d", "m", "image", "default", skip_reason="no eyes"),
        SweepSummaryCell("c", "partial", "d", "m", "mm", "default"),
    ]
    summary = SweepSummary.of(cells)
    assert (summary.n_cells, summary.n_skipped, summary.exit_code) == (3, 1, 3)
    assert summary.by_status == {"complete": 1, "partial": 1, "skipped": 1}


def test_a_folder_without_one_reads_as_none_and_a_later_layout_is_refused(tmp_path: Path) -> None:
    assert read_sweep_summary(tmp_path) is None
    (tmp_path / SWEEP_SUMMARY).write_text('{"schema_version": 99}', encoding="utf-8")
    with pytest.raises(MMJudgeError, match="not a sweep summary this version of mmjudge reads"):
        read_sweep_summary(tmp_path)
    (tmp_path / SWEEP_SUMMARY).write_text("{", encoding="utf-8")
    with pytest.raises(MMJudgeError, match="cannot be read"):
        read_sweep_summary(tmp_path)
