"""Run one cell, forecast one, or run a sweep, in this process, with the code the command runs.

A cell is run by :func:`mmjudge.grid.jobs.judge`, as ``mmjudge sweep`` runs it; a sweep's grid
is the command's (:func:`mmjudge.grid.cells.compose_grid`: ``model=a,b modality=text,mm`` is
four cells, an experiment's ``hydra.sweeper.params`` come first and the given overrides win),
run by the grid's one loop one cell after the other into
``<sweep folder>/<dataset>.<model>.<modality>.<prompt>`` (with the language and perturbation,
:func:`mmjudge.config.names.run_folder_name`), then the end-of-sweep work the command's callback
does
(:func:`mmjudge.api.sweep_end.finish_sweep`:
``sweep_summary.json``, the default ensembles, the report).

What the command adds around a cell and the library leaves to its caller: the console
progress bar is shown only with ``runner.progress=true``, and logging is left as the caller
configured it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mmjudge.api.saved import CellForecast, Run, Sweep, SweepCell
from mmjudge.config import SweepConfig
from mmjudge.config.names import STAMP_FORMAT, run_folder_name
from mmjudge.errors import ConfigError
from mmjudge.store import RunSummary

#: A cell's config: the overrides of the command line, or a config composed already.
CellConfig = SweepConfig | DictConfig | Sequence[str]


def run_cell(
    config: CellConfig,
    run_dir: str | Path | None = None,
    *,
    config_dir: str | Path | None = None,
) -> RunSummary:
    """Judge one cell and return its summary (also written to ``<run_dir>/summary.json``,
    beside ``judgments.jsonl``).

    ``config`` is a list of overrides (``["model=lexical", "dataset=demo_fashion"]``,
    composed with ``config_dir`` as :func:`mmjudge.compose` composes them) or a composed
    config. ``run_dir`` defaults to the command's: ``<paths.results>/runs/<time>_<dataset>_
    <model>_<modality>_<prompt>[-<language>][_<perturbation>]``. Running the cell again into
    the same folder resumes it.

    A skipped cell (a judge that cannot see images asked to, say) returns a summary whose
    ``status.status`` is ``skipped`` with the reason in ``status.skip_reason``; a cell that
    stopped early (budget, interrupt, a fatal provider error) returns what it judged.

    Raises:
        ConfigError: a bad setting, a missing key, or ``runner.dry_run=true`` (use
            :func:`forecast`).
        MMJudgeError: any other problem found before the first call (a bad dataset line…).
    """
    from mmjudge.grid.jobs import judge

    raw = _config(config, config_dir)
    if _setting(raw, "runner", "dry_run"):
        raise ConfigError("runner.dry_run=true forecasts a cell: call mmjudge.forecast() instead")
    return judge(raw, _folder(raw, run_dir))


def forecast(
    config: CellConfig,
    run_dir: str | Path | None = None,
    *,
    config_dir: str | Path | None = None,
) -> CellForecast:
    """What one cell's calls would use and cost, without making any (the command's dry run,
    ``runner.dry_run=true``); also written to ``<run_dir>/forecast.json``.

    Raises:
        ConfigError: a bad setting.
        MMJudgeError: any other problem with the cell (a bad dataset line…).
    """
    from mmjudge.grid.jobs import forecast as forecast_job

    raw = _dry(_config(config, config_dir))
    return forecast_job(raw, _folder(raw, run_dir))


def run_sweep(
    overrides: Sequence[str] = (),
    *,
    config_dir: str | Path | None = None,
    sweep_dir: str | Path | None = None,
) -> Sweep:
    """Run a grid of cells, as ``mmjudge sweep -m`` does, and return every cell (skipped ones
    with their reasons), the ensembles built from them and the report's folder.

    ``overrides`` are the command line's: ``["model=lexical,clip", "modality=text,mm"]`` is
    four cells; ``["+experiment=reference_study"]`` runs an experiment's grid. ``sweep_dir``
    defaults to the command's (``<paths.results>/sweeps/<time>``). With
    ``runner.dry_run=true`` every cell is forecast instead (:attr:`SweepCell.forecast`) and
    nothing is summarised. The report is built when ``report.build`` is true, the ensembles
    unless ``hydra.callbacks.sweep_report.ensembles=false``.

    The grid is the command's (:func:`mmjudge.grid.cells.compose_grid`) and runs in the grid's
    one loop, one cell after the other in this process. A cell that is interrupted stops the
    sweep: the cells after it are not started and the end-of-sweep work is not done.

    Raises:
        ConfigError: a bad setting, dataset or price in any cell, or a sweep kind the basic
            sweeper does not know (``interval(…)``); every cell is checked before the first
            call, so nothing is judged.
        CredentialError: a cell's API key is not set (every missing one named; nothing is
            judged).
        MMJudgeError: a problem with a cell found before its first call.
    """
    from mmjudge.api.sweep_end import finish_sweep
    from mmjudge.grid.cells import compose_grid
    from mmjudge.grid.jobs import forecast as forecast_job
    from mmjudge.grid.launch import InProcessLauncher
    from mmjudge.grid.rounds import SweepRound, run_rounds

    grid = compose_grid(overrides, config_dir=config_dir, sweep_dir=sweep_dir)
    if grid.dry_run:
        forecasts = [
            SweepCell(c.run_dir, forecast=forecast_job(c.config, c.run_dir), overrides=c.overrides)
            for c in grid.cells
        ]
        return Sweep(grid.folder, forecasts)
    schedule = SweepRound(grid)
    stopped = run_rounds(schedule, InProcessLauncher(grid))
    cells = [
        SweepCell(c.run_dir, summary=_summary(c.run_dir), overrides=c.overrides)
        for c, status in zip(grid.cells, schedule.statuses or [""] * len(grid.cells), strict=True)
        if status
    ]
    if stopped is not None or not grid.folder.is_dir():
        return Sweep(grid.folder, cells)
    done = finish_sweep(
        grid.folder,
        grid.reports_dir,
        ensembles=grid.ensembles,
        human_cost_per_label=grid.report_setting("human_cost_per_label"),
        label_budget_usd=grid.report_setting("label_budget_usd"),
    )
    built = [Run(path, _summary(path)) for path in done.ensembles]
    return Sweep(grid.folder, cells, built, done.report)


def _config(config: CellConfig, config_dir: str | Path | None) -> SweepConfig | DictConfig:
    if isinstance(config, SweepConfig | DictConfig):
        return config
    if isinstance(config, str):
        raise TypeError("give the overrides as a list: ['model=lexical', 'modality=text']")
    from mmjudge.config.compose import compose_raw

    return compose_raw(config, config_dir)


def _setting(config: SweepConfig | DictConfig, group: str, key: str) -> Any:
    if isinstance(config, SweepConfig):
        return getattr(getattr(config, group), key)
    return OmegaConf.select(config, f"{group}.{key}")


def _dry(config: SweepConfig | DictConfig) -> SweepConfig | DictConfig:
    """The same config with ``runner.dry_run=true``."""
    if isinstance(config, SweepConfig):
        return dataclasses.replace(config, runner=dataclasses.replace(config.runner, dry_run=True))
    dry = copy.deepcopy(config)  # the caller's config stays as it was
    dry.runner.dry_run = True
    return dry


def default_run_dir(config: SweepConfig | DictConfig) -> Path:
    """Where the command puts a single run (``hydra.run.dir`` in the shipped ``config.yaml``):
    ``<paths.results>/runs/<time>_<dataset>_<model>_<modality>_<prompt>[-<language>]
    [_<perturbation>]`` (:func:`mmjudge.config.names.run_folder_name`)."""
    from mmjudge.locations import resolve_path

    name = run_folder_name(
        _setting(config, "dataset", "name"),
        _setting(config, "model", "name"),
        _setting(config, "modality", "name"),
        _setting(config, "prompt", "id"),
        _setting(config, "prompt", "language"),
        _setting(config, "perturb", "name"),
        stamp=datetime.now().strftime(STAMP_FORMAT),
        passages=_setting(config, "prompt", "passages_per_call"),
        answer=_setting(config, "prompt", "answer_format"),
        reasons=_setting(config, "prompt", "passage_reasons"),
    )
    results = resolve_path(str(_setting(config, "paths", "results")))
    return results / "runs" / name


def _folder(config: SweepConfig | DictConfig, run_dir: str | Path | None) -> Path:
    return Path(run_dir) if run_dir is not None else default_run_dir(config)


def _summary(path: Path) -> RunSummary:
    from mmjudge.store import read_summary

    return read_summary(path)
