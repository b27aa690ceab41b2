"""Run one cell, forecast one, or run a sweep, in this process, with the code the command runs.

A cell is run by :func:`mmjudge.engine.cell.run_cell`, as ``mmjudge sweep`` runs it; a sweep
expands its grid the way Hydra's basic sweeper does (``model=a,b modality=text,mm`` is four
cells, an experiment's ``hydra.sweeper.params`` come first and the given overrides win), runs
its cells one after the other into ``<sweep folder>/<dataset>.<model>.<modality>.<prompt>``
(with the language and perturbation, :func:`mmjudge.config.names.run_folder_name`),
then does the end-of-sweep work the command's callback does
(:func:`mmjudge.api.sweep_end.finish_sweep`:
``sweep_summary.json``, the default ensembles, the report).

What the command adds around a cell and the library leaves to its caller: the console
progress bar is shown only with ``runner.progress=true``, and logging is left as the caller
configured it.
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from mmjudge.api.compose import compose_raw, first_line
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
    raw = _config(config, config_dir)
    if _setting(raw, "runner", "dry_run"):
        raise ConfigError("runner.dry_run=true forecasts a cell: call mmjudge.forecast() instead")
    result = _run(raw, run_dir)
    assert isinstance(result, RunSummary)
    return result


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
    raw = _config(config, config_dir)
    result = _run(_dry(raw), run_dir)
    assert isinstance(result, CellForecast)
    return result


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

    A cell that is interrupted stops the sweep: the cells after it are not started and the
    end-of-sweep work is not done.

    Raises:
        ConfigError: a bad setting, dataset or price in any cell, or a sweep kind the basic
            sweeper does not know (``interval(…)``); every cell is checked before the first
            call, so nothing is judged.
        CredentialError: a cell's API key is not set (every missing one named; nothing is
            judged).
        MMJudgeError: a problem with a cell found before its first call.
    """
    from mmjudge.api.sweep_end import finish_sweep
    from mmjudge.locations import resolve_path
    from mmjudge.store.status import INTERRUPTED

    fixed, _ = split_overrides(overrides)
    probe = compose_raw(fixed, config_dir, with_hydra=True)
    folder = Path(sweep_dir) if sweep_dir is not None else Path(str(probe.hydra.sweep.dir))
    dry = bool(probe.runner.dry_run)
    composed = _checked_cells(overrides, config_dir, probe)
    cells: list[SweepCell] = []
    for combination, raw in composed:
        run_dir = folder / str(raw.hydra.sweep.subdir)
        with open_dict(raw):
            del raw["hydra"]  # as Hydra hands a job its config
        result = _run(raw, run_dir)
        if isinstance(result, CellForecast):
            cells.append(SweepCell(run_dir, forecast=result, overrides=tuple(combination)))
            continue
        cells.append(SweepCell(run_dir, summary=result, overrides=tuple(combination)))
        if result.status.status == INTERRUPTED:
            return Sweep(folder, cells)
    if dry or not folder.is_dir():
        return Sweep(folder, cells)
    reports = resolve_path(str(probe.paths.reports)) if probe.report.build else None
    ensembles = OmegaConf.select(probe, "hydra.callbacks.sweep_report.ensembles", default=False)
    done = finish_sweep(folder, reports, ensembles=bool(ensembles))
    built = [Run(path, _summary(path)) for path in done.ensembles]
    return Sweep(folder, cells, built, done.report)


def _checked_cells(
    overrides: Sequence[str], config_dir: str | Path | None, probe: DictConfig
) -> list[tuple[list[str], DictConfig]]:
    """Every cell's overrides and composed config, checked (settings, dataset, price, key)
    before the first call (:func:`mmjudge.api.preflight.check_cells`)."""
    from mmjudge.api.preflight import check_cells

    composed = [
        (combination, compose_raw(combination, config_dir, with_hydra=True))
        for combination in sweep_grid(overrides, config_dir, probe)
    ]
    check_cells((str(raw.hydra.sweep.subdir), raw) for _, raw in composed)
    return composed


def grid(overrides: Sequence[str]) -> list[list[str]]:
    """The cells of a sweep's overrides: each override's values crossed with the others'
    (``a=1,2 b=x`` gives ``[a=1 b=x]`` and ``[a=2 b=x]``), a later override of the same key
    replacing an earlier one, as Hydra's basic sweeper does.

    Kept here rather than taken from Hydra: the basic sweeper's expansion
    (``BasicSweeper.split_arguments``) lives in ``hydra._internal``, which is not Hydra's
    public API (mmjudge uses only that: see docs/development.md), and it needs the sweeper
    instantiated with a launcher to reach it. This takes the same steps through the public
    override parser, and ``tests/api/test_cells.py::test_the_grid_is_the_basic_sweepers``
    holds it to the command's cell folders (lists, an experiment's ``hydra.sweeper.params``,
    a later override replacing an earlier one).

    Raises:
        ConfigError: an override that does not parse, or a sweep of a range of real numbers.
    """
    lists: OrderedDict[str, list[str]] = OrderedDict()
    for override in _parse(overrides):
        key = override.get_key_element()
        if override.is_sweep_override():
            if not override.is_discrete_sweep():
                raise ConfigError(f"{override.input_line}: only lists of values can be swept")
            lists[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            lists[key] = [f"{key}={override.get_value_element_as_str()}"]
    return [list(cell) for cell in itertools.product(*lists.values())]


def sweep_grid(
    overrides: Sequence[str],
    config_dir: str | Path | None = None,
    probe: DictConfig | None = None,
) -> list[list[str]]:
    """The cells of a sweep: an experiment's ``hydra.sweeper.params`` first, then the given
    overrides (which win), expanded by :func:`grid`. ``probe`` is the config composed from the
    overrides that are not swept, when the caller has it already."""
    if probe is None:
        probe = compose_raw(split_overrides(overrides)[0], config_dir, with_hydra=True)
    params = OmegaConf.select(probe, "hydra.sweeper.params") or {}
    configured = [f"{key}={value}" for key, value in params.items()]
    return grid([*configured, *overrides])


def split_overrides(overrides: Sequence[str]) -> tuple[list[str], list[str]]:
    """The overrides every cell shares, and those that are swept."""
    fixed: list[str] = []
    swept: list[str] = []
    for override in _parse(overrides):
        line = override.input_line or ""
        (swept if override.is_sweep_override() else fixed).append(line)
    return fixed, swept


def _parse(overrides: Sequence[str]) -> list[Any]:
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as error:
        raise ConfigError(first_line(error)) from None


def _config(config: CellConfig, config_dir: str | Path | None) -> SweepConfig | DictConfig:
    if isinstance(config, SweepConfig | DictConfig):
        return config
    if isinstance(config, str):
        raise TypeError("give the overrides as a list: ['model=lexical', 'modality=text']")
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
    )
    results = resolve_path(str(_setting(config, "paths", "results")))
    return results / "runs" / name


def _run(config: SweepConfig | DictConfig, run_dir: str | Path | None) -> RunSummary | CellForecast:
    """One cell through the runner, into ``run_dir``; a cell that stops before judging
    anything leaves no folder, as with the command."""
    from mmjudge.engine.cell import run_cell as run_one_cell
    from mmjudge.store.cleanup import removed_unless_judged

    folder = Path(run_dir) if run_dir is not None else default_run_dir(config)
    with removed_unless_judged(folder):
        return run_one_cell(config, folder)


def _summary(path: Path) -> RunSummary:
    from mmjudge.store import read_summary

    return read_summary(path)
