"""The records a race writes: each round's decision with its evidence, and the outcome (see
:mod:`mmjudge.studies.race_rule`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

SCHEMA_VERSION = 1

#: Why a cell is settled against the candidate (see :mod:`mmjudge.studies.race_rule`).
Reason = Literal["not better, not cheaper", "below the candidate", "dominated", "cannot judge"]
#: Why a race ended.
Ending = Literal["settled", "items ran out", "dollar cap", "one cell"]


@dataclass(frozen=True)
class Evidence:
    """Why one cell is settled against the candidate, or why it is not."""

    cell: int
    """The cell."""
    reason: Reason | None
    """Which rule settles it (None: not settled)."""
    comparator: int
    """The cell it is compared with: the candidate, or the cell dominating it."""
    difference: float
    """κ̂_cell − κ̂_comparator on the pair's items."""
    low: float
    """Lower end of the round's interval for the difference."""
    high: float
    """Upper end of the round's interval for the difference."""
    n_items: int
    """Items both graded within the shorter prefix."""

    def bounds_text(self, *, items: bool = False) -> str:
        """``+0.296 [+0.004, +0.587]`` (``items``: followed by ``on 40 items``): the difference
        with its interval, as every view of a race prints it; ``n/a`` where a figure is not
        known, as for a pair that shares no graded item (a cell whose every answer failed)."""
        if self.n_items == 0:
            return "n/a (no item graded by both)"

        def signed(value: float) -> str:
            return f"{value:+.3f}" if math.isfinite(value) else "n/a"

        text = f"{signed(self.difference)} [{signed(self.low)}, {signed(self.high)}]"
        return f"{text} on {self.n_items:,} items" if items else text


@dataclass(frozen=True)
class CellChange:
    """A cell that stops or resumes judging after a round."""

    cell: int
    """The cell."""
    action: Literal["stopped", "resumed"]
    """What it does from the next round on."""
    evidence: Evidence
    """The comparison that settles it (stopped) or no longer does (resumed)."""


@dataclass(frozen=True)
class RoundDecision:
    """What one round decided."""

    schema_version: int
    """Version of this record's layout."""
    round: int
    """Round number (1, 2, ...)."""
    prefix: int
    """Items every active cell had reached by this round."""
    alpha_round: float
    """α spent by this round (α(u_t) − α(u_{t−1}))."""
    alpha_total: float
    """α spent by this round and the ones before."""
    z: float
    """Normal quantile of this round's intervals."""
    kappas: tuple[float, ...]
    """Each cell's κ̂ on its own prefix."""
    candidate: int
    """The cheapest cell with κ̂ ≥ max κ̂ − δ."""
    chosen: int | None
    """The cell chosen when the race ends here, else None."""
    ending: Ending | None
    """Why the race ends here, or None when it goes on."""
    active: tuple[int, ...]
    """The cells that judge the next round (empty when the race ends)."""
    changes: tuple[CellChange, ...]
    """Cells that stop or resume after this round, with their evidence."""
    settled: tuple[Evidence, ...]
    """Every other cell against the candidate (settled or not)."""
    judgments: int
    """Judgments made so far, every cell's prefix together."""
    usd: float
    """Dollars spent so far."""


@dataclass(frozen=True)
class RaceOutcome:
    """How a race ended."""

    schema_version: int
    """Version of this record's layout."""
    chosen: int
    """The chosen cell (its index in the inputs)."""
    name: str
    """The chosen cell's name."""
    kappa: float
    """Its κ̂ on its own prefix."""
    runner_up: int | None
    """The other cell with the highest κ̂ (None with one cell)."""
    versus_runner_up: Evidence | None
    """κ̂_chosen − κ̂_runner-up with the last round's interval."""
    ending: Ending
    """Why the race ended."""
    guarantee: bool
    """Whether the α guarantee holds (not when the dollar cap ended the race)."""
    rounds: tuple[RoundDecision, ...]
    """Every round's decision, in order."""
    prefixes: tuple[int, ...]
    """Items each cell judged."""
    judgments: int
    """Judgments made by every cell together."""
    usd: float
    """Dollars spent."""
    full_judgments: int
    """Judgments of the full grid (every cell on every item of the population)."""
    full_usd: float
    """Dollars of the full grid."""
    names: tuple[str, ...] = field(default=())
    """Every cell's name."""


def _number(value: Any) -> float:
    """A float written to JSON, where a number that is not finite is written as null."""
    return math.nan if value is None else float(value)


def evidence_from_dict(data: dict[str, Any]) -> Evidence:
    """An :class:`Evidence` read back from its JSON form."""
    fields = dict(data)
    for name in ("difference", "low", "high"):
        fields[name] = _number(fields[name])
    return Evidence(**fields)


def round_from_dict(data: dict[str, Any]) -> RoundDecision:
    """A :class:`RoundDecision` read back from its JSON form (``dataclasses.asdict``)."""
    fields = dict(data)
    fields["kappas"] = tuple(_number(k) for k in fields["kappas"])
    fields["z"] = _number(fields["z"])
    fields["active"] = tuple(fields["active"])
    fields["changes"] = tuple(
        CellChange(c["cell"], c["action"], evidence_from_dict(c["evidence"]))
        for c in fields["changes"]
    )
    fields["settled"] = tuple(evidence_from_dict(e) for e in fields["settled"])
    return RoundDecision(**fields)


def judging(rounds: Sequence[RoundDecision], number: int, n_cells: int) -> tuple[int, ...]:
    """The cells that judged round ``number``: every cell in the first, then those the round
    before left active."""
    return tuple(range(n_cells)) if number == 1 else tuple(rounds[number - 2].active)


def cell_prefixes(rounds: Sequence[RoundDecision], n_cells: int) -> list[int]:
    """Items each cell has judged after ``rounds`` (in race order): the prefix of the last
    round it judged."""
    prefixes = [0] * n_cells
    for decision in rounds:
        for cell in judging(rounds, decision.round, n_cells):
            prefixes[cell] = max(prefixes[cell], decision.prefix)
    return prefixes


def kappa_text(value: float | None) -> str:
    """A race's κ̂ as every view prints it: ``0.949``, or ``n/a`` where it is not known."""
    return f"{value:.3f}" if value is not None and math.isfinite(value) else "n/a"


def cell_fates(rounds: Sequence[RoundDecision], n_cells: int) -> list[str]:
    """What the race did with each cell, as every view names it: ``chosen`` (by the last
    round, when it ended the race), ``stopped after round 3`` (its last stop; a cell may stop,
    resume and stop again), ``cannot judge after round 1`` (no grade on its items, or its run
    reached its dollar cap), or ``judging`` while the race has not ended."""
    fates = ["judging"] * n_cells
    for decision in rounds:
        for change in decision.changes:
            if change.action == "resumed":
                fates[change.cell] = "judging"
            elif change.evidence.reason == "cannot judge":
                fates[change.cell] = f"cannot judge after round {decision.round}"
            else:
                fates[change.cell] = f"stopped after round {decision.round}"
    if rounds and rounds[-1].chosen is not None:
        fates[rounds[-1].chosen] = "chosen"
    return fates


def fates_by_folder(race: dict[str, Any]) -> dict[str, str]:
    """:func:`cell_fates` of a race read from its file (``race.json``), by each cell's run
    folder name."""
    rounds = [round_from_dict(r) for r in race["rounds"]]
    fates = cell_fates(rounds, len(race["cells"]))
    return {str(cell["run_dir"]): fate for cell, fate in zip(race["cells"], fates, strict=True)}
