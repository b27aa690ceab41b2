"""Panels and cascades of cells judged with ``runner.samples``: built from each member's
first sample, one row per item, while the members keep their stability figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.cli.sweep_end import finish_sweep
from mmjudge.running.cell import run_cell
from tests.helpers import compose_config


@pytest.mark.slow
def test_a_sweep_with_samples_builds_its_ensembles_from_the_first_sample(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    for prompt in ("default", "terse"):
        cfg = compose_config(
            [
                "model=lexical",
                f"prompt={prompt}",
                "runner.samples=2",
                "runner.progress=false",
                f"paths.prepared_cache={tmp_path / 'prepared'}",
            ]
        )
        run_cell(cfg, sweep / f"demo_fashion.lexical.text.{prompt}")
    done = finish_sweep(sweep, tmp_path / "reports", ensembles=True)
    assert done.ensembles and done.report is not None
    for folder in done.ensembles:
        rows = (folder / "judgments.jsonl").read_text().splitlines()
        keys = {(json.loads(r)["query_id"], json.loads(r)["result_id"]) for r in rows}
        assert len(rows) == len(keys) == 240  # one row per item, not one per sample
        assert not (folder / "samples.jsonl").exists()
    page = (done.report / "index.html").read_text(encoding="utf-8")
    assert "Does each judge agree with itself?" in page
