"""A race over a sweep's grid: every cell judges the same slices of one seeded order of the
dataset's graded items, round after round, and a cell stops being paid for as soon as the
choice no longer depends on it (the rule and its guarantee: :mod:`mmjudge.studies.race_rule`).

Built on the sweep's own parts, so a race is an ordinary sweep folder that stopped early:

- a cell's round is an ordinary run of the cell into its own folder
  (``<sweep folder>/<dataset>.<model>.<modality>.<prompt>``, as a sweep names it) with
  ``dataset.sample_items`` set to the round's prefix: the next round resumes that folder, so
  rows, the response cache, the ledger and ``runner.max_cost_usd`` carry over and nothing is
  paid for twice;
- a round's cells run at once, each in a process of its own (the provider limits are per
  model); ``mmjudge race`` runs them through the Hydra launcher the command names instead
  (``hydra/launcher=ray``: Ray tasks);
- after each round the decision is appended to ``race.json`` in the sweep folder; a race
  started again on the same folder (``hydra.sweep.dir=…``) takes up after the last decided
  round;
- when the race ends, the sweep's end is done as for any sweep (``sweep_summary.json`` and the
  report, whose race section reads ``race.json``), so ``mmjudge report``, ``frontier``,
  ``plan`` and ``estimate`` read the folder as they read any sweep.
"""

from __future__ import annotations

import copy
import math
import multiprocessing
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from omegaconf import DictConfig, open_dict

from mmjudge.api.cells import split_overrides, sweep_grid
from mmjudge.api.compose import compose_raw
from mmjudge.api.preflight import check_cells
from mmjudge.api.race_result import (
    Population,
    RaceCell,
    RaceResult,
    taken_up,
    write_race,
)
from mmjudge.config import SweepConfig
from mmjudge.config.names import cell_display_name
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.store.summary import run_ending
from mmjudge.studies.race_records import RoundDecision, cell_prefixes
from mmjudge.studies.race_rule import (
    NoCellCanJudge,
    decide_round,
    outcome_of,
    race_inputs,
    race_order,
    round_length,
)

# --------------------------------------------------------------------------- the grid


#: A cell of the grid: its overrides, its composed config (``hydra`` node removed) and its
#: run folder.
ComposedCell = tuple[tuple[str, ...], DictConfig, Path]


def race_cells(
    overrides: Sequence[str],
    *,
    config_dir: str | Path | None = None,
    sweep_dir: str | Path | None = None,
) -> tuple[Path, list[ComposedCell], DictConfig]:
    """The sweep folder, the grid's cells and the config of the overrides that are not swept
    (with its ``hydra`` node, for the sweep's settings), composed as :func:`mmjudge.compose`
    composes."""
    fixed, _ = split_overrides(overrides)
    probe = compose_raw(fixed, config_dir, with_hydra=True)
    folder = Path(sweep_dir) if sweep_dir is not None else Path(str(probe.hydra.sweep.dir))
    combinations = sweep_grid(overrides, config_dir, probe)
    cells = [
        cell_of(tuple(c), compose_raw(c, config_dir, with_hydra=True), folder) for c in combinations
    ]
    return folder, cells, probe


def cell_of(combination: tuple[str, ...], raw: DictConfig, folder: Path) -> ComposedCell:
    """A cell of the grid from its config composed with its ``hydra`` node: its run folder is
    the sweep's (``hydra.sweep.subdir``), and the node is dropped, as Hydra hands a job its
    config."""
    run_dir = folder / str(raw.hydra.sweep.subdir)
    with open_dict(raw):
        del raw["hydra"]
    return combination, raw, run_dir


def one_dataset(cells: Sequence[ComposedCell]) -> None:
    """Refuse a grid over several datasets (a race compares judges on one), or none."""
    if not cells:
        raise ConfigError("the race's grid has no cell")
    datasets = {str(raw.dataset.name) for _, raw, _ in cells}
    if len(datasets) > 1:
        raise ConfigError(
            f"a race compares judges on one dataset, and this grid has {len(datasets)} "
            f"({', '.join(sorted(datasets))}); race them one at a time (dataset=NAME)"
        )


def typed(raw: DictConfig) -> SweepConfig:
    """The cell's typed, checked config."""
    from mmjudge.engine.cell import typed_config

    return typed_config(raw)


def population_of(cfg: SweepConfig) -> Population:
    """The dataset's graded items in the race's order (``seed``), with their consensus grade."""
    from mmjudge.data.loading import load_dataset
    from mmjudge.metrics import consensus

    examples = [e for e in load_dataset(cfg.dataset, seed=cfg.seed, prepare=False) if e.labels]
    if not examples:
        raise MMJudgeError(
            f"dataset {cfg.dataset.name!r}: no item has a person's grade, so no judge can be "
            "raced against people"
        )
    annotators = sorted({a for e in examples for a in e.labels})
    grades = {a: [e.labels.get(a, math.nan) for e in examples] for a in annotators}
    reference = consensus(grades)
    order = race_order(cfg.seed, [e.query_id for e in examples], [e.result_id for e in examples])
    keys = tuple((examples[i].query_id, examples[i].result_id) for i in order)
    scale = tuple(float(g) for g in cfg.dataset.scale.grades)
    return Population(keys, np.asarray(reference)[order], scale)


def priced(raw: DictConfig) -> tuple[float, float] | str:
    """Dollars per judgment and for the whole dataset, from the cell's dry run (made in a
    folder of its own, so the cell's folder holds only its runs); or why the cell cannot run
    (a judge that cannot see images asked to, a dataset that cannot serve the modality)."""
    from mmjudge.engine.cell import run_cell as run_one_cell
    from mmjudge.store import RunSummary

    dry = copy.deepcopy(raw)
    dry.runner.dry_run = True
    with tempfile.TemporaryDirectory(prefix="mmjudge-race-") as scratch:
        found = run_one_cell(dry, Path(scratch) / "forecast")
    if isinstance(found, RunSummary):
        return found.status.skip_reason or found.status.status
    forecast = found.sync
    return (forecast.usd / forecast.calls if forecast.calls else 0.0), forecast.usd


# --------------------------------------------------------------------------- running it


def run_race(
    overrides: Sequence[str] = (),
    *,
    config_dir: str | Path | None = None,
    sweep_dir: str | Path | None = None,
    workers: int | None = None,
    on_round: Callable[[RaceResult, RoundDecision], None] | None = None,
) -> RaceResult:
    """Race the grid that ``overrides`` make (as :func:`mmjudge.run_sweep` takes them; the
    ``race.*`` settings among them) and return its rounds and outcome. A round's cells run at
    once, each in a process of its own (``workers`` caps how many). ``on_round`` is called after
    each round (the command prints its line). A race run again on the same ``sweep_dir`` takes
    up where it stopped.

    Raises:
        ConfigError: a bad setting, or a grid over more than one dataset.
        MMJudgeError: a problem found before the first call (a dataset with no grades…).
    """
    folder, cells, probe = race_cells(overrides, config_dir=config_dir, sweep_dir=sweep_dir)
    result, population = prepare_race(folder, cells)
    race_rounds(result, population, process_launcher(config_dir, workers), on_round)
    if result.outcome is not None and bool(probe.report.build):
        result.report = _finish(folder, probe)
    return result


def prepare_race(folder: Path, cells: Sequence[ComposedCell]) -> tuple[RaceResult, Population]:
    """Check every cell, draw the population, price every cell by its dry run, and take up the
    rounds an earlier run of the race decided (none for a new one)."""
    one_dataset(cells)
    # every cell's settings, dataset, price and key checked before anything is paid for
    check_cells((run_dir.name, raw) for _, raw, run_dir in cells)
    typed_cells = [typed(raw) for _, raw, _ in cells]
    first = typed_cells[0]
    population = population_of(first)
    result = RaceResult(folder, [], len(population.keys), first.race, first.seed)
    prompts_differ = len({cfg.prompt.id for cfg in typed_cells}) > 1
    for (combination, raw, run_dir), cfg in zip(cells, typed_cells, strict=True):
        name = cell_display_name(
            cfg.dataset.name,
            cfg.model.name,
            cfg.modality.name,
            cfg.prompt.id,
            cfg.perturb.name,
            prompt_named=prompts_differ,
        )
        price = priced(raw)
        if isinstance(price, str):
            result.skipped.append((name, price))
            continue
        index = len(result.cells)
        result.cells.append(RaceCell(index, name, combination, run_dir, *price))
    if not result.cells:
        reasons = "; ".join(f"{name}: {why}" for name, why in result.skipped)
        raise ConfigError(f"no cell of the race's grid can run ({reasons})")
    folder.mkdir(parents=True, exist_ok=True)
    result.rounds = taken_up(folder, result)
    return result, population


#: Runs one round's cells, each given with the overrides of its round; returns their statuses.
Launch = Callable[[list[tuple[RaceCell, list[str]]]], list[str]]


def race_rounds(
    result: RaceResult,
    population: Population,
    launch: Launch,
    on_round: Callable[[RaceResult, RoundDecision], None] | None = None,
) -> None:
    """Judge and decide rounds until the race ends, or a cell is interrupted (then
    ``result.interrupted``; what was decided is in ``race.json``)."""
    try:
        while result.outcome is None:
            decision = _next_round(result, population, launch)
            if decision is None:
                result.interrupted = True
                break
            if on_round is not None:
                on_round(result, decision)
    except KeyboardInterrupt:  # between rounds: what was decided is in race.json already
        result.interrupted = True


def _next_round(
    result: RaceResult,
    population: Population,
    run: Launch,
) -> RoundDecision | None:
    """Judge the next round, decide it and keep the decision (None: a cell was interrupted)."""
    from mmjudge.store.status import INTERRUPTED

    number = len(result.rounds) + 1
    previous = result.rounds[-1].active if result.rounds else tuple(range(len(result.cells)))
    prefixes = prefixes_after(result, number)
    target = round_length(result.settings, number, result.population)
    jobs = [
        (result.cells[c], [*result.cells[c].overrides, f"dataset.sample_items={target}"])
        for c in previous
    ]
    statuses = run(jobs)
    if INTERRUPTED in statuses:
        return None
    cannot_judge = _cannot_judge(result, previous, statuses)
    for c in previous:
        prefixes[c] = max(prefixes[c], target)
    grades = np.vstack([grades_of(cell.run_dir, population) for cell in result.cells])
    inputs = race_inputs(
        population.reference,
        grades,
        [cell.usd_per_judgment for cell in result.cells],
        population.scale,
    )
    try:
        decision = decide_round(
            inputs,
            prefixes,
            result.settings,
            number,
            previous_active=list(previous),
            cannot_judge=cannot_judge,
        )
    except NoCellCanJudge:  # say how each cell's run ended
        endings = "; ".join(f"{cell.name}: {run_ending(cell.run_dir)}" for cell in result.cells)
        raise MMJudgeError(f"no cell of the race can judge ({endings})") from None
    result.rounds.append(decision)
    result.spent_usd = spent(result.cells)
    if decision.ending is not None:
        lengths = np.asarray(prefixes, dtype=np.int64)
        result.outcome = outcome_of(
            decision,
            tuple(result.rounds),
            lengths,
            inputs.prices,
            tuple(cell.name for cell in result.cells),
            result.population,
        )
    write_race(result)
    return decision


def _cannot_judge(result: RaceResult, judged: Sequence[int], statuses: Sequence[str]) -> set[int]:
    """Cells the runner reports out of the race after a round: those out before, and those
    whose run this round stopped at their own dollar cap. (A cell without a single grade is
    out by the rule itself; a failed run that holds grades stays, and the next round retries
    its failed items.)"""
    from mmjudge.store.status import STOPPED_BY_BUDGET

    out = {c for c, status in zip(judged, statuses, strict=True) if status == STOPPED_BY_BUDGET}
    if result.rounds:
        out |= {e.cell for e in result.rounds[-1].settled if e.reason == "cannot judge"}
    return out


def prefixes_after(result: RaceResult, rounds: int) -> list[int]:
    """Each cell's prefix before round ``rounds``: the longest round it judged."""
    return cell_prefixes(result.rounds[: rounds - 1], len(result.cells))


def grades_of(run_dir: Path, population: Population) -> np.ndarray:
    """The cell's grade of each item of the population (``nan``: not judged yet, failed or
    unparseable), from its rows."""
    from mmjudge.store.rows import read_records

    records = read_records(run_dir)
    out = np.full(len(population.keys), np.nan)
    for position, key in enumerate(population.keys):
        record = records.get(key)
        if record is not None and record.label is not None and record.error is None:
            out[position] = float(record.label)
    return out


def spent(cells: Sequence[RaceCell]) -> float:
    """What the cells' ledgers spent so far (their summaries): answers the response cache
    gave are free, as in every run's ``spent_usd``."""
    from mmjudge.store.summary import read_summary

    total = 0.0
    for cell in cells:
        if (cell.run_dir / "summary.json").is_file():
            total += read_summary(cell.run_dir).cost.spent_usd
    return total


def process_launcher(config_dir: str | Path | None, workers: int | None) -> Launch:
    """Runs a round's cells at once, each in a fresh process (``spawn``: no state shared with
    this one), and returns their statuses."""
    from mmjudge.store.status import INTERRUPTED

    def launch(jobs: list[tuple[RaceCell, list[str]]]) -> list[str]:
        if not jobs:
            return []
        context = multiprocessing.get_context("spawn")
        size = min(len(jobs), workers or len(jobs))
        with ProcessPoolExecutor(max_workers=size, mp_context=context) as pool:
            futures = [
                pool.submit(run_one, overrides, str(cell.run_dir), config_dir)
                for cell, overrides in jobs
            ]
            try:
                return [future.result() for future in futures]
            except KeyboardInterrupt:
                # The cells' processes had the same interrupt (one process group, as from a
                # terminal): each stops between calls and keeps what it judged; leaving the
                # block waits for them.
                for future in futures:
                    future.cancel()
                return [INTERRUPTED]

    return launch


def run_one(overrides: Sequence[str], run_dir: str, config_dir: str | Path | None) -> str:
    """One cell's round (in a worker process): the cell run into its folder; its status."""
    from mmjudge.api.cells import run_cell

    return run_cell(list(overrides), run_dir, config_dir=config_dir).status.status


def _finish(folder: Path, probe: DictConfig) -> Path | None:
    """The sweep's end, as any sweep's: ``sweep_summary.json`` and the report."""
    from mmjudge.api.sweep_end import finish_sweep
    from mmjudge.locations import resolve_path

    reports = resolve_path(str(probe.paths.reports))
    return finish_sweep(folder, reports, ensembles=False).report
