"""The records a race writes: each round's decision with its evidence, and the outcome (see
:mod:`mmjudge.studies.race_rule`), with the words every view of a race uses for them.

Dollars here are list-price forecasts (judgments times the forecast's price per judgment:
``list_usd``), which is what the rule weighs; what the ledgers spent (cache hits free) is the
runner's to report beside them."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from mmjudge.config.race import RaceConfig

#: Version of the records' layout. 2: dollars named ``list_usd`` (forecasts at list prices,
#: not spending), and each round says what its intervals target; version 1 rounds (``usd``,
#: finite-population intervals) still read.
SCHEMA_VERSION = 2

#: What a race's κ are of (``race.target``); see :mod:`mmjudge.studies.race_rule`.
Target = Literal["population", "items"]

#: Why a cell is settled against the candidate (see :mod:`mmjudge.studies.race_rule`).
Reason = Literal[
    "not better, not cheaper",
    "below the candidate",
    "dominated",
    "cannot judge",
    "cannot separate at this size",
]
#: Why a race ended.
Ending = Literal["settled", "items ran out", "dollar cap", "one cell", "cannot separate"]


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
    list_usd: float
    """Those judgments at the forecast's list price per judgment (what the rule weighs; not
    what the ledgers spent: answers from the response cache are free)."""
    target: Target = "population"
    """What this round's intervals are of: the population the items were drawn from, or the
    items themselves (finite-population intervals)."""


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
    list_usd: float
    """Those judgments at the forecast's list price per judgment."""
    full_judgments: int
    """Judgments of the full grid (every cell on every graded item)."""
    full_list_usd: float
    """The full grid's judgments at the forecast's list price per judgment."""
    names: tuple[str, ...] = field(default=())
    """Every cell's name."""


def _number(value: Any) -> float:
    """A float written to JSON, where a number that is not finite is written as null."""
    return math.nan if value is None else float(value)


def settings_from_file(settings: dict[str, Any]) -> dict[str, Any]:
    """A race's ``race`` settings as its file gives them, with those an earlier layout did not
    write at their defaults (``target``, new in version 2), so a race started before an
    upgrade is taken up by the same command."""
    defaults = dataclasses.asdict(RaceConfig())
    return {**defaults, **settings} if set(settings) <= set(defaults) else dict(settings)


def evidence_from_dict(data: dict[str, Any]) -> Evidence:
    """An :class:`Evidence` read back from its JSON form."""
    fields = dict(data)
    for name in ("difference", "low", "high"):
        fields[name] = _number(fields[name])
    return Evidence(**fields)


def round_from_dict(data: dict[str, Any]) -> RoundDecision:
    """A :class:`RoundDecision` read back from its JSON form (``dataclasses.asdict``), of this
    layout or version 1's (its ``usd`` read as ``list_usd``; its intervals were the items'
    own, finite-population ones)."""
    fields = dict(data)
    if fields.get("schema_version", 1) == 1:  # read as the version-2 record it is now
        fields["list_usd"] = fields.pop("usd")
        fields["target"] = "items"
        fields["schema_version"] = SCHEMA_VERSION
    fields["kappas"] = tuple(_number(k) for k in fields["kappas"])
    fields["z"] = _number(fields["z"])
    fields["active"] = tuple(fields["active"])
    fields["changes"] = tuple(
        CellChange(c["cell"], c["action"], evidence_from_dict(c["evidence"]))
        for c in fields["changes"]
    )
    fields["settled"] = tuple(evidence_from_dict(e) for e in fields["settled"])
    return RoundDecision(**fields)


def unsettled(decision: RoundDecision) -> tuple[Evidence, ...]:
    """The cells a round left unsettled against its candidate (against the choice, when the
    race ended there), with the evidence: when the race has ended, the cells it could not
    separate from its choice."""
    return tuple(e for e in decision.settled if e.reason in (None, "cannot separate at this size"))


def more_items(evidence: Evidence, delta: float, *, not_cheaper: bool) -> float:
    """About how many labelled items in all the pair of ``evidence`` (a cell against the
    choice) needs before the race's rule settles it, from its observed half-width ``w`` on
    its ``n`` items: a half-width shrinks as one over the square root of the items, so
    ``n · (w / w*)²``, where ``w*`` is the half-width that settles it — ``δ − Δ`` (not better
    by more than δ; only for a cell ``not_cheaper`` than the choice) or ``−Δ − δ`` (more than δ
    below), whichever is larger, ``Δ`` the cell's κ̂ minus the choice's. The pair's current
    ``n`` where it is settled already; ``inf`` where no number of items settles it at this
    difference, ``nan`` where the half-width is not known."""
    d = evidence.difference
    width = (evidence.high - evidence.low) / 2
    if evidence.n_items == 0 or not (math.isfinite(d) and math.isfinite(width)):
        return math.nan
    goal = max(delta - d if not_cheaper else -math.inf, -d - delta)
    if goal <= 0:
        return math.inf
    return max(float(evidence.n_items), evidence.n_items * (width / goal) ** 2)


def cannot_separate_text(chosen: str, other: str, evidence: Evidence, needed: float) -> str:
    """What every view says of a cell the race could not separate from its choice:
    ``cannot separate A from B at this size (κ diff …); about 1,200 more labelled items
    would``, ``needed`` the items in all (:func:`more_items`)."""
    head = (
        f"cannot separate {chosen} from {other} at this size (κ diff of {other} "
        f"{evidence.bounds_text(items=True)})"
    )
    if math.isinf(needed):
        return f"{head}; no number of labelled items would at this difference"
    if math.isnan(needed):
        return head
    more = max(math.ceil(needed) - evidence.n_items, 0)
    return f"{head}; about {more:,} more labelled items would"


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


def outcome_of(
    last: RoundDecision,
    rounds: tuple[RoundDecision, ...],
    lengths: npt.NDArray[np.int64],
    prices: npt.NDArray[np.float64],
    names: tuple[str, ...],
    n_items: int,
) -> RaceOutcome:
    """How the race ended, from its last decision: the choice and its evidence against the
    runner-up, the judgments and their list-price dollars against the full grid's. The
    guarantee holds when the race ended settled (or with one cell), or when its items ran out
    with every interval exact (``race.target=items``) or every other cell settled; not when
    the dollar cap ended it, nor when it ended with cells it could not separate from the
    choice at this size (:func:`~mmjudge.studies.race_records.unsettled`)."""
    assert last.chosen is not None and last.ending is not None
    chosen = last.chosen
    out = {e.cell for e in last.settled if e.reason == "cannot judge"}
    others = [c for c in range(len(names)) if c != chosen and c not in out]
    kappas = np.asarray(last.kappas)
    runner_up = max(others, key=lambda c: np.nan_to_num(kappas[c], nan=-2.0)) if others else None
    versus = None
    if runner_up is not None:
        found = [e for e in last.settled if e.cell == runner_up and e.comparator == chosen]
        if found:
            e = found[0]
            versus = Evidence(
                chosen, e.reason, runner_up, -e.difference, -e.high, -e.low, e.n_items
            )
    return RaceOutcome(
        schema_version=SCHEMA_VERSION,
        chosen=chosen,
        name=names[chosen],
        kappa=float(kappas[chosen]),
        runner_up=runner_up,
        versus_runner_up=versus,
        ending=last.ending,
        guarantee=_guaranteed(last),
        rounds=rounds,
        prefixes=tuple(int(x) for x in lengths),
        judgments=int(lengths.sum()),
        list_usd=float((lengths * prices).sum()),
        full_judgments=n_items * len(names),
        full_list_usd=float(n_items * prices.sum()),
        names=names,
    )


def _guaranteed(last: RoundDecision) -> bool:
    """Whether the α guarantee holds for the race that ``last`` ended (see
    :func:`outcome_of`)."""
    if last.ending in ("dollar cap", "cannot separate"):
        return False
    if last.ending == "items ran out" and last.target == "population":
        return not unsettled(last)
    return True
