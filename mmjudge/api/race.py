"""Race a sweep's grid from Python, as ``mmjudge race`` does: the grid composed once
(:func:`mmjudge.grid.cells.compose_grid`), judged in rounds by the grid's one loop
(:func:`mmjudge.grid.rounds.run_rounds`) with the race's schedule
(:class:`mmjudge.grid.race.RaceRounds`), each round's cells in processes of their own; the
folder it leaves is an ordinary sweep folder with the race's decisions in ``race.json``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from mmjudge.grid.cells import Grid, compose_grid
from mmjudge.grid.launch import Launcher, ProcessLauncher
from mmjudge.grid.race import (
    FolderReadings,
    RaceItems,
    RaceResult,
    RaceRounds,
    spend_of,
)
from mmjudge.grid.race_start import prepare_race, write_race
from mmjudge.grid.rounds import run_rounds
from mmjudge.studies.race_records import RoundDecision


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
    up where it stopped; one stopped by a signal says which in ``stop_signal``.

    Raises:
        ConfigError: a bad setting, or a grid over more than one dataset.
        CredentialError: a cell's API key is not set (every missing one named).
        MMJudgeError: a problem found before the first call (a dataset with no grades…).
    """
    grid = compose_grid(overrides, config_dir=config_dir, sweep_dir=sweep_dir)
    launcher = ProcessLauncher(grid, config_dir, workers, grace_s=_grace(grid))
    result = race_grid(grid, launcher, on_round)
    if result.outcome is not None:
        result.report = finish_race(grid)
    return result


def race_grid(
    grid: Grid,
    launcher: Launcher,
    on_round: Callable[[RaceResult, RoundDecision], None] | None = None,
) -> RaceResult:
    """Race ``grid`` with ``launcher`` until the race ends or a stop signal stops it (then
    ``stop_signal``; what was decided is in ``race.json``)."""
    result, items = prepare_race(grid)
    readings = FolderReadings(result, items)
    if result.rounds:  # taken up: the money so far, before the next round adds to it
        result.spend = spend_of(
            result.cells, [readings.read(c) for c in range(len(result.cells))], result.n_items
        )
    write_race(result)  # the cells taking part, and those that cannot, before any round
    schedule = (
        asking_rounds(grid, result, items, readings, on_round)
        if result.settings.asks
        else RaceRounds(result, items, readings, keep=write_race, on_round=on_round)
    )
    result.stop_signal = run_rounds(schedule, launcher)
    return result


def asking_rounds(
    grid: Grid,
    result: RaceResult,
    items: RaceItems,
    readings: FolderReadings,
    on_round: Callable[[RaceResult, RoundDecision], None] | None,
) -> RaceRounds:
    """The schedule of a race that asks for people's grades as it goes (``race.labels=ask``):
    the grades it asked for before (``asked_grades.json``) taken up, kept whenever they change,
    and new ones from ``race.label_oracle`` or the race's labelling files."""
    from mmjudge.grid.race_labels import asked_records, label_source, restored_labels
    from mmjudge.store.asked_grades import (
        ASKED_GRADES_FILE,
        read_asked_grades,
        write_asked_grades,
    )

    where = grid.folder / ASKED_GRADES_FILE
    labels = restored_labels(read_asked_grades(grid.folder), items.keys, len(result.rounds), where)
    return RaceRounds(
        result,
        items,
        readings,
        keep=write_race,
        on_round=on_round,
        oracle=label_source(grid, items.keys, items.scale),
        labels=labels,
        keep_labels=lambda kept: write_asked_grades(grid.folder, asked_records(kept, items.keys)),
    )


def finish_race(grid: Grid) -> Path | None:
    """The sweep's end, as any sweep's (``sweep_summary.json`` and the report; no panels or
    cascades: a race's stopped cells judged different items); the report's folder."""
    from mmjudge.api.sweep_end import finish_sweep

    return finish_sweep(
        grid.folder,
        grid.reports_dir,
        ensembles=False,
        human_cost_per_label=grid.report_setting("human_cost_per_label"),
        label_budget_usd=grid.report_setting("label_budget_usd"),
    ).report


def _grace(grid: Grid) -> float:
    """The longest ``runner.grace_s`` of the grid's cells (how long a stopped cell may wait
    for its calls in flight)."""
    return max(float(cell.config.runner.grace_s) for cell in grid.cells)
