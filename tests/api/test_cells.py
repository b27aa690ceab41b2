"""mmjudge.run_cell, forecast and run_sweep: typed results equal to what the command writes
and prints for the same settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mmjudge
from mmjudge.errors import ConfigError
from mmjudge.grid.cells import grid
from mmjudge.store import read_summary
from mmjudge.store.cell_lines import cell_line
from mmjudge.store.forecast_file import CellForecast, read_forecast
from tests.helpers import isolated_overrides, run_sweep


def where(root: Path) -> list[str]:
    return [f"{key}={value}" for key, value in isolated_overrides(root).items()]


def small(root: Path) -> list[str]:
    return ["dataset.limit=12", "runner.progress=false", "report.build=false", *where(root)]


def test_run_cell_returns_the_summary_it_writes(tmp_path: Path) -> None:
    summary = mmjudge.run_cell(["model=lexical", *small(tmp_path)], tmp_path / "run")
    assert summary == read_summary(tmp_path / "run")
    assert (summary.status.status, summary.n_judgments, summary.n_errors) == ("complete", 12, 0)
    assert (tmp_path / "run" / "judgments.jsonl").is_file()


def test_run_cell_takes_a_composed_config(tmp_path: Path) -> None:
    cfg = mmjudge.compose(["model=lexical", *small(tmp_path)])
    summary = mmjudge.run_cell(cfg, tmp_path / "run")
    assert summary.cell.model == "lexical" and summary.n_judgments == 12


def test_the_default_folder_is_the_commands(tmp_path: Path) -> None:
    summary = mmjudge.run_cell(["model=lexical", *small(tmp_path)])
    [run_dir] = (tmp_path / "results" / "runs").iterdir()
    assert run_dir.name.endswith("_demo_fashion_lexical_text_default")
    assert read_summary(run_dir) == summary


def test_a_skipped_cell_says_why(tmp_path: Path) -> None:
    summary = mmjudge.run_cell(
        ["model=lexical", "modality=image", *small(tmp_path)], tmp_path / "r"
    )
    assert summary.status.status == "skipped"
    assert "does not accept modality 'image'" in (summary.status.skip_reason or "")
    assert cell_line(summary).endswith(f"skipped — {summary.status.skip_reason}")


def test_a_dry_run_config_is_sent_to_forecast(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="forecast"):
        mmjudge.run_cell(["model=lexical", "runner.dry_run=true", *small(tmp_path)])


def test_forecast_is_the_dry_runs(tmp_path: Path) -> None:
    planned = mmjudge.forecast(["model=gpt4o_mini", *small(tmp_path)], tmp_path / "dry")
    written = json.loads((tmp_path / "dry" / "forecast.json").read_text(encoding="utf-8"))
    assert planned.sync.calls == written["forecast"]["calls"] == 12
    assert planned.sync.usd == pytest.approx(written["forecast"]["usd"])
    assert planned.batch.usd == pytest.approx(written["forecast_batch"]["usd"])
    assert planned.batch.usd < planned.sync.usd
    assert planned == read_forecast(tmp_path / "dry") == CellForecast.from_dict(written)
    assert not (tmp_path / "dry" / "judgments.jsonl").exists()


@pytest.mark.slow
def test_a_bad_cell_leaves_no_folder(tmp_path: Path) -> None:
    with pytest.raises(mmjudge.MMJudgeError):
        mmjudge.run_cell(["model=gpt4o_mini", *small(tmp_path)], tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_the_grid_crosses_values_and_later_overrides_win() -> None:
    assert grid(["a=1,2", "b=x", "c=p,q"]) == [
        ["a=1", "b=x", "c=p"],
        ["a=1", "b=x", "c=q"],
        ["a=2", "b=x", "c=p"],
        ["a=2", "b=x", "c=q"],
    ]
    assert grid(["model=gpt4o,gpt4v", "modality=text", "model=lexical"]) == [
        ["model=lexical", "modality=text"]
    ]
    with pytest.raises(ConfigError, match="lists of values"):
        grid(["runner.timeout_s=interval(1,2)"])


@pytest.mark.slow
def test_run_sweep_runs_every_cell_and_keeps_the_skipped(tmp_path: Path) -> None:
    sweep = mmjudge.run_sweep(
        ["model=lexical", "modality=text,image", *small(tmp_path)],
        sweep_dir=tmp_path / "sweep",
    )
    assert [c.path.name for c in sweep.cells] == [
        "demo_fashion.lexical.text.default",
        "demo_fashion.lexical.image.default",
    ]
    assert [c.status for c in sweep.cells] == ["complete", "skipped"]
    assert "image" in (sweep.cells[1].skip_reason or "")
    assert sweep.cells[0].overrides == (
        "model=lexical",
        "modality=text",
        *(o.replace("false", "False") for o in small(tmp_path)),
    )
    written = json.loads((tmp_path / "sweep" / "sweep_summary.json").read_text(encoding="utf-8"))
    assert written["by_status"] == {"complete": 1, "skipped": 1}
    assert sweep.report is None


@pytest.mark.slow
def test_a_dry_sweep_forecasts_every_cell(tmp_path: Path) -> None:
    sweep = mmjudge.run_sweep(
        ["model=lexical,gpt4o_mini", "runner.dry_run=true", *small(tmp_path)],
        sweep_dir=tmp_path / "sweep",
    )
    assert [c.status for c in sweep.cells] == ["dry_run", "dry_run"]
    assert [c.forecast.model for c in sweep.cells if c.forecast] == ["lexical", "gpt4o_mini"]
    assert not (tmp_path / "sweep" / "sweep_summary.json").exists()


@pytest.mark.slow
def test_a_sweep_from_python_matches_the_commands(tmp_path: Path) -> None:
    """The same grid through ``python -m mmjudge.sweep -m`` and through run_sweep: the same
    cells, statuses, counts, agreement and sweep summary, and both build a report."""
    settings = ["model=lexical", "modality=text,image", "prompt=default,terse", "dataset.limit=12"]
    (tmp_path / "cli").mkdir()
    done = run_sweep(tmp_path / "cli", "-m", *settings, "runner.progress=false")
    assert done.returncode == 0, done.stderr
    [cli_dir] = (tmp_path / "cli" / "results" / "sweeps").iterdir()
    library = mmjudge.run_sweep([*settings, "runner.progress=false", *where(tmp_path / "lib")])
    assert library.report is not None and (library.report / "index.html").is_file()
    assert library.path.parent == tmp_path / "lib" / "results" / "sweeps"
    command = mmjudge.open_sweep(cli_dir)
    ours = mmjudge.open_sweep(library.path)

    def cells(sweep: mmjudge.Sweep) -> list[tuple[object, ...]]:
        return [
            (c.path.name, c.status, c.skip_reason, s.n_judgments, s.metrics.kappa, s.cost.total_usd)
            for c in sweep.cells
            if (s := c.summary) is not None
        ]

    assert cells(ours) == cells(command)
    assert [r.summary.name for r in ours.ensembles] == [r.summary.name for r in command.ensembles]
    for sweep_dir in (cli_dir, library.path):
        data = json.loads((sweep_dir / "sweep_summary.json").read_text(encoding="utf-8"))
        # every listed cell counted, the sweep's panel among the complete ones
        assert data["by_status"] == {"complete": 2 + len(ours.ensembles), "skipped": 2}
        assert sum(data["by_status"].values()) == data["n_cells"]
    assert "report:" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("overrides", "n_cells"),
    [
        (["model=lexical,gpt4o_mini", "modality=text,mm"], 4),
        (["+experiment=reference_study", "model=gpt4o_mini,claude3_haiku"], 6),
        (
            ["model=lexical,gpt4o_mini", "modality=mm", "model=gpt4o_mini", "prompt=terse,raters3"],
            2,
        ),
    ],
    ids=["lists", "experiment", "later-wins"],
)
def test_the_grid_is_the_basic_sweepers(tmp_path: Path, overrides: list[str], n_cells: int) -> None:
    """:func:`grid` expands a sweep as Hydra's basic sweeper does: the same cell folders from
    the command (``hydra/launcher=basic``) and from run_sweep, for plain lists, an experiment's
    ``hydra.sweeper.params`` with a command-line value replacing one of them, and a later
    override replacing an earlier one."""
    settings = [*overrides, "runner.dry_run=true", "dataset.limit=2", "runner.progress=false"]
    (tmp_path / "cli").mkdir()
    done = run_sweep(tmp_path / "cli", "-m", *settings, "hydra/launcher=basic")
    assert done.returncode == 0, done.stderr
    [cli_dir] = (tmp_path / "cli" / "results" / "sweeps").iterdir()
    ours = mmjudge.run_sweep([*settings, *where(tmp_path / "lib")], sweep_dir=tmp_path / "lib")

    def folders(root: Path) -> list[str]:
        written = [*root.glob("*/forecast.json"), *root.glob("*/summary.json")]
        return sorted(path.parent.name for path in written)

    assert folders(cli_dir) == folders(ours.path) == sorted(c.path.name for c in ours.cells)
    assert len(ours.cells) == n_cells


def test_forecast_leaves_the_callers_config_as_it_was(tmp_path: Path) -> None:
    from mmjudge.api.compose import compose_raw

    raw = compose_raw(["model=lexical", *small(tmp_path)])
    typed = mmjudge.compose(["model=lexical", *small(tmp_path)])
    mmjudge.forecast(raw, tmp_path / "a")
    mmjudge.forecast(typed, tmp_path / "b")
    assert raw.runner.dry_run is False and typed.runner.dry_run is False
