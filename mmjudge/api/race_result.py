"""What a race is and keeps: its cells, its rounds and how it ended, in memory
(:class:`RaceResult`) and in the sweep folder's ``race.json`` (written after every round and
read back to take a stopped race up), and the lines that tell it on the console."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.config.race import RaceConfig
from mmjudge.errors import MMJudgeError
from mmjudge.store.race_file import RACE_FILE, finite, read_race_file, write_race_file
from mmjudge.store.summary import run_ending
from mmjudge.studies.race_records import (
    RaceOutcome,
    RoundDecision,
    cell_fates,
    kappa_text,
    round_from_dict,
    settings_from_file,
)


@dataclass(frozen=True)
class RaceCell:
    """One cell of a race's grid."""

    index: int
    """Its place in the grid (the index the race's records use)."""
    name: str
    """Its display name (``dataset × model × modality``…)."""
    overrides: tuple[str, ...]
    """The overrides that make it, as the sweep's grid gives them."""
    run_dir: Path
    """Its run folder, inside the sweep folder."""
    usd_per_judgment: float
    """The forecast's dollars per judgment (list prices; 0 for a free judge)."""
    forecast_usd: float
    """What judging every item of the dataset would cost (the full grid's share)."""


@dataclass(frozen=True)
class Population:
    """The items a race is over: the dataset's graded items, in the race's order."""

    keys: tuple[tuple[str, str], ...]
    """(query id, result id) of each item, in race order."""
    reference: np.ndarray
    """The annotators' consensus grade of each item, in race order."""
    scale: tuple[float, ...]
    """The dataset's grade scale."""


@dataclass
class RaceResult:
    """A race's cells, its rounds so far, and how it ended (``outcome`` is None while it runs
    or after it was interrupted)."""

    folder: Path
    """The sweep folder."""
    cells: list[RaceCell]
    """Every cell of the grid."""
    population: int
    """Graded items the race draws from."""
    settings: RaceConfig
    """The race's settings."""
    seed: int
    """The seed of the item order."""
    rounds: list[RoundDecision] = field(default_factory=list)
    """Each round's decision, in order."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Cells of the grid that cannot run, with why (they take no part)."""
    spent_usd: float = 0.0
    """Dollars the cells' ledgers spent (their summaries), cache hits free."""
    outcome: RaceOutcome | None = None
    """How the race ended; None while it has not."""
    interrupted: bool = False
    """Whether a cell was interrupted (the race stops; run it again to take it up)."""
    report: Path | None = None
    """The report's folder, when one was built."""

    @property
    def full_grid_usd(self) -> float:
        """What the full grid would cost: every cell on every item (the forecasts)."""
        return sum(cell.forecast_usd for cell in self.cells)

    @property
    def fates(self) -> dict[str, str]:
        """What the race did with each cell, by name: ``chosen``, ``stopped after round 3``,
        ``cannot judge after round 1`` or ``judging`` (the report's words)."""
        fates = cell_fates(self.rounds, len(self.cells))
        return {cell.name: fate for cell, fate in zip(self.cells, fates, strict=True)}

    def line(self, decision: RoundDecision) -> str:
        """The console's line for one round."""
        return round_line(self, decision)

    def closing_lines(self) -> list[str]:
        """What the race prints when it ends: the choice, its evidence, the spend."""
        outcome = self.outcome
        assert outcome is not None
        lines = [f"race: chose {outcome.name} (κ {kappa_text(outcome.kappa)}) — {outcome.ending}"]
        versus = outcome.versus_runner_up
        if versus is not None and outcome.runner_up is not None:
            lines.append(
                f"  against {self.cells[outcome.runner_up].name}: "
                f"κ diff {versus.bounds_text(items=True)}"
            )
        if outcome.ending == "dollar cap":
            lines.append("  the dollar cap ended the race: the choice carries no guarantee")
        share = outcome.judgments / outcome.full_judgments if outcome.full_judgments else 0.0
        lines.append(
            f"  {outcome.judgments:,} of {outcome.full_judgments:,} judgments ({share:.0%}); "
            f"${self.spent_usd:,.4f} spent of ${self.full_grid_usd:,.4f} the full grid would "
            "cost (forecast)"
        )
        lines.append(f"  sweep folder: {self.folder}")
        if self.report is not None:
            lines.append(f"  report: {self.report / 'index.html'}")
        return lines


# --------------------------------------------------------------------------- race.json


def race_record(result: RaceResult) -> dict[str, Any]:
    """What ``race.json`` holds."""
    return {
        "settings": dataclasses.asdict(result.settings),
        "seed": result.seed,
        "population": result.population,
        "cells": [
            {
                "index": cell.index,
                "name": cell.name,
                "overrides": list(cell.overrides),
                "run_dir": cell.run_dir.name,
                "usd_per_judgment": cell.usd_per_judgment,
                "forecast_usd": cell.forecast_usd,
            }
            for cell in result.cells
        ],
        "rounds": [dataclasses.asdict(decision) for decision in result.rounds],
        "spent_usd": result.spent_usd,
        "full_grid_usd": result.full_grid_usd,
        "outcome": None
        if result.outcome is None
        else {k: v for k, v in dataclasses.asdict(result.outcome).items() if k != "rounds"},
    }


def write_race(result: RaceResult) -> None:
    write_race_file(result.folder, race_record(result))


def _own(overrides: Sequence[str]) -> list[str]:
    """A cell's overrides less Hydra's own (``hydra.sweep.dir=…`` names where the race is
    kept, not what it is)."""
    return [o for o in overrides if not o.lstrip("+~").startswith("hydra.")]


def taken_up(folder: Path, result: RaceResult) -> list[RoundDecision]:
    """The rounds an earlier run of the same race decided (none for a new race); a folder
    holding another race is refused, as going on would mix two races."""
    earlier = read_race_file(folder)
    if earlier is None:
        return []
    same = (
        [_own(c["overrides"]) for c in earlier["cells"]]
        == [_own(c.overrides) for c in result.cells]
        and settings_from_file(earlier["settings"]) == finite(dataclasses.asdict(result.settings))
        and earlier["seed"] == result.seed
        and earlier["population"] == result.population
    )
    if not same:
        raise MMJudgeError(
            f"{folder / RACE_FILE}: holds another race (other cells, settings, seed or items); "
            "race into a new folder (hydra.sweep.dir=…)"
        )
    if earlier.get("outcome") is not None:
        raise MMJudgeError(
            f"{folder / RACE_FILE}: this race has ended; its report is built from the folder "
            f"(mmjudge report {folder})"
        )
    return [round_from_dict(r) for r in earlier["rounds"]]


# --------------------------------------------------------------------------- lines


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"


def round_line(result: RaceResult, decision: RoundDecision) -> str:
    """``race round 3: 400 items; 4 of 6 cells judge on; stopped …; $0.41 of $2.12``."""
    names = [cell.name for cell in result.cells]
    parts = [f"race round {decision.round}: {decision.prefix:,} items"]
    for change in decision.changes:
        e = change.evidence
        if change.action == "stopped" and e.reason == "cannot judge":
            ended = run_ending(result.cells[change.cell].run_dir)
            parts.append(f"{names[change.cell]} stops (cannot judge: its run ended {ended})")
        elif change.action == "stopped":
            parts.append(
                f"{names[change.cell]} stops ({e.reason or 'unsettled at the end'}: κ diff "
                f"{e.bounds_text()} vs {names[e.comparator]})"
            )
        else:
            parts.append(f"{names[change.cell]} resumes")
    if decision.ending is None:
        parts.append(f"{len(decision.active)} of {len(names)} cells judge on")
    else:
        assert decision.chosen is not None
        parts.append(f"ends ({decision.ending}): {names[decision.chosen]}")
    parts.append(f"{_usd(result.spent_usd)} spent of {_usd(result.full_grid_usd)} for the grid")
    return "; ".join(parts)
