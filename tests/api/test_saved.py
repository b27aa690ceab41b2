"""mmjudge.open_run and open_sweep: what a run or a sweep wrote, read back typed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import mmjudge
from mmjudge.api.saved import Run, Sweep, SweepCell
from mmjudge.store import read_records, read_summary
from tests.fake_runs import DRY_RUN_FORECAST
from tests.helpers import isolated_overrides

SETTINGS = ["model=lexical", "dataset.limit=12", "runner.progress=false", "report.build=false"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("saved")
    where = [f"{k}={v}" for k, v in isolated_overrides(root).items()]
    mmjudge.run_cell([*SETTINGS, *where], root / "run")
    return root / "run"


def test_open_run_reads_the_summary_and_the_rows(run_dir: Path) -> None:
    run = mmjudge.open_run(run_dir)
    assert run.summary == read_summary(run_dir)
    assert run.status == "complete"
    assert run.judgments() == list(read_records(run_dir).values())
    assert list(run.iter_judgments()) == run.judgments()
    assert len(run.judgments()) == 12


def test_the_rows_as_a_table(run_dir: Path) -> None:
    table = mmjudge.open_run(run_dir).table()
    rows = mmjudge.open_run(run_dir).judgments()
    assert len(table) == 12
    assert list(table["label"]) == [row.label for row in rows]
    assert {"human:annotator_a", "human:annotator_b"} <= set(table.columns)


def test_open_run_refuses_a_folder_without_a_summary(tmp_path: Path) -> None:
    with pytest.raises(mmjudge.MMJudgeError, match="not a run folder"):
        mmjudge.open_run(tmp_path)


def test_open_sweep_lists_cells_forecasts_and_ensembles(run_dir: Path, tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    shutil.copytree(run_dir, sweep / "b.lexical")
    shutil.copytree(run_dir, sweep / "ensembles" / "panel")
    (sweep / "a.dry").mkdir(parents=True)
    (sweep / "a.dry" / "forecast.json").write_text(json.dumps(DRY_RUN_FORECAST), encoding="utf-8")
    opened = mmjudge.open_sweep(sweep)
    assert isinstance(opened, Sweep)
    assert [cell.path.name for cell in opened.cells] == ["a.dry", "b.lexical"]
    dry, real = opened.cells
    assert dry.status == "dry_run" and dry.forecast is not None
    assert (dry.forecast.sync.calls, dry.forecast.usd, dry.forecast.batch.usd) == (3, 0.5, 0.25)
    assert real.summary == read_summary(run_dir)
    assert opened.by_status == {"dry_run": 1, "complete": 1}
    assert [run.path.name for run in opened.ensembles] == ["panel"]
    assert isinstance(real.open(), Run)
    with pytest.raises(mmjudge.MMJudgeError, match="dry run"):
        dry.open()


def test_open_sweep_refuses_an_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(mmjudge.MMJudgeError, match="no runs"):
        mmjudge.open_sweep(tmp_path)


def test_a_cells_status_and_reason_come_from_its_summary(run_dir: Path) -> None:
    cell = SweepCell(run_dir, summary=read_summary(run_dir))
    assert (cell.status, cell.skip_reason) == ("complete", None)
