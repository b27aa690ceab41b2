"""Starting a race over a grid and keeping it: the grid checked, the items drawn and every
cell priced (:func:`prepare_race`); the race's state as ``race.json`` after every round
(:func:`write_race`), and the rounds an earlier run of the same race decided, taken up
(:func:`taken_up`). The race's records and its schedule are :mod:`mmjudge.grid.race`."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmjudge.config.race import RaceConfig
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.grid.cells import Grid, GridCell
from mmjudge.grid.race import RaceCell, RaceItems, RaceResult, SkippedCell
from mmjudge.store.race_file import (
    RACE_FILE,
    RaceFile,
    RaceFileCell,
    RaceFileSkipped,
    read_race_file,
    write_race_file,
)
from mmjudge.studies.race_records import RoundDecision
from mmjudge.studies.race_rounds import planned_round_items

# --------------------------------------------------------------------------- preparing one


def one_dataset(grid: Grid) -> None:
    """Refuse a grid over several datasets (a race compares judges on one), or none."""
    if not grid.cells:
        raise ConfigError("the race's grid has no cell")
    datasets = grid.datasets()
    if len(datasets) > 1:
        raise ConfigError(
            f"a race compares judges on one dataset, and this grid has {len(datasets)} "
            f"({', '.join(sorted(datasets))}); race them one at a time (dataset=NAME)"
        )


def race_items(cell: GridCell) -> RaceItems:
    """The dataset's graded items in the race's order (``seed``), with their consensus grade;
    with ``race.labels=ask`` every item, graded or not, and no grade (people's grades are
    asked for as the race goes)."""
    from mmjudge.data.loading import load_dataset
    from mmjudge.engine.cell import typed_config
    from mmjudge.metrics import consensus
    from mmjudge.studies.race_rule import race_order

    cfg = typed_config(cell.config)
    asks = cfg.race.asks
    loaded = load_dataset(cfg.dataset, seed=cfg.seed, prepare=False)
    examples = [e for e in loaded if asks or e.labels]
    if not examples:
        raise MMJudgeError(
            f"dataset {cfg.dataset.name!r}: no item has a person's grade, so no judge can be "
            "raced against people; race.labels=ask asks for grades as the race goes"
        )
    order = race_order(cfg.seed, [e.query_id for e in examples], [e.result_id for e in examples])
    keys = tuple((examples[i].query_id, examples[i].result_id) for i in order)
    scale = tuple(float(g) for g in cfg.dataset.scale.grades)
    if asks:
        return RaceItems(keys, np.full(len(keys), np.nan), scale)
    annotators = sorted({a for e in examples for a in e.labels})
    grades = {a: [e.labels.get(a, math.nan) for e in examples] for a in annotators}
    reference = consensus(grades)
    return RaceItems(keys, np.asarray(reference)[order], scale)


def prepare_race(grid: Grid) -> tuple[RaceResult, RaceItems]:
    """Check the grid, draw the items, price every cell by its dry run (a cell that cannot run
    is judged once, to leave its skipped summary, and takes no part), and take up the rounds an
    earlier run of the race decided (none for a new one)."""
    from mmjudge.engine.cell import typed_config
    from mmjudge.grid.jobs import judge
    from mmjudge.grid.pricing import price_cell

    one_dataset(grid)
    first = typed_config(grid.cells[0].config)
    items = race_items(grid.cells[0])
    result = RaceResult(grid.folder, [], len(items.keys), first.race, first.seed)
    result.rounds_note = planned_round_items(first.race, result.n_items).reason
    grid.folder.mkdir(parents=True, exist_ok=True)
    for cell in grid.cells:
        price = price_cell(cell)
        if price.skip_reason is not None:
            judge(cell.config, cell.run_dir)  # its skipped summary, as a sweep leaves one
            result.skipped.append(SkippedCell(cell.name, price.skip_reason))
            continue
        result.cells.append(
            RaceCell(
                len(result.cells),
                cell.name,
                cell.overrides,
                cell.run_dir,
                price.usd_per_judgment,
                price.full_usd,
                cell.index,
            )
        )
    if not result.cells:
        reasons = "; ".join(f"{name}: {why}" for name, why in result.skipped)
        raise ConfigError(f"no cell of the race's grid can run ({reasons})")
    result.rounds = taken_up(grid.folder, result)
    return result, items


# --------------------------------------------------------------------------- race.json


def race_record(result: RaceResult) -> RaceFile:
    """What ``race.json`` keeps of the race."""
    return RaceFile(
        settings=result.settings,
        seed=result.seed,
        n_items=result.n_items,
        cells=tuple(
            RaceFileCell(
                cell.index,
                cell.name,
                cell.overrides,
                cell.run_dir.name,
                cell.usd_per_judgment,
                cell.forecast_usd,
            )
            for cell in result.cells
        ),
        skipped=tuple(RaceFileSkipped(s.name, s.reason) for s in result.skipped),
        rounds=tuple(result.rounds),
        worth_usd=result.spend.worth_usd,
        paid_usd=result.spend.paid_usd,
        full_grid_usd=result.spend.full_grid_usd,
        outcome=result.outcome,
    )


def write_race(result: RaceResult) -> None:
    """Keep the race's state in its sweep folder's ``race.json``."""
    write_race_file(result.folder, race_record(result))


#: Settings that do not change what a race is: where it is kept, where its people's grades
#: come from and what one costs (a race waiting for a labelling file may be taken up with a
#: file of grades instead, or priced afterwards).
NOT_THE_RACE = ("hydra.", "race.label_oracle=", "race.label_usd=")


def _own(overrides: Sequence[str]) -> list[str]:
    """A cell's overrides less those of :data:`NOT_THE_RACE`."""
    return [o for o in overrides if not o.lstrip("+~").startswith(NOT_THE_RACE)]


def _the_race(settings: RaceConfig) -> RaceConfig:
    """The race's settings less those of :data:`NOT_THE_RACE`."""
    return dataclasses.replace(settings, label_oracle=None, label_usd=0.0)


def taken_up(folder: Path, result: RaceResult) -> list[RoundDecision]:
    """The rounds an earlier run of the same race decided (none for a new race); a folder
    holding another race is refused, as going on would mix two races."""
    earlier = read_race_file(folder)
    if earlier is None:
        return []
    same = (
        [_own(c.overrides) for c in earlier.cells] == [_own(c.overrides) for c in result.cells]
        and _the_race(earlier.settings) == _the_race(result.settings)
        and earlier.seed == result.seed
        and earlier.n_items == result.n_items
    )
    if not same:
        raise MMJudgeError(
            f"{folder / RACE_FILE}: holds another race (other cells, settings, seed or items); "
            "race into a new folder (hydra.sweep.dir=…)"
        )
    if earlier.outcome is not None:
        raise MMJudgeError(
            f"{folder / RACE_FILE}: this race has ended; its report is built from the folder "
            f"(mmjudge report {folder})"
        )
    return list(earlier.rounds)
