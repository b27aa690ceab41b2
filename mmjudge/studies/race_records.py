"""What a race's records say: the cells a round left unsettled, how many more items would
settle them, each cell's prefix and fate, the outcome of a last round, and the words every view
of a race uses for them (the records themselves are ``race.json``'s:
:mod:`mmjudge.store.race_file`; the rule is :mod:`mmjudge.studies.race_rule`).

Dollars here are list-price forecasts (judgments times the forecast's price per judgment:
``list_usd``), which is what the rule weighs; what the ledgers spent (cache hits free) is the
runner's to report beside them."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from mmjudge.display import number, usd
from mmjudge.store.race_file import (
    SCHEMA_VERSION,
    CellChange,
    Ending,
    Evidence,
    HumanLabels,
    LabelDesign,
    RaceFile,
    RaceOutcome,
    Reason,
    RoundDecision,
    Target,
)

__all__ = [
    "SCHEMA_VERSION",
    "CellChange",
    "Ending",
    "Evidence",
    "HumanLabels",
    "LabelDesign",
    "RaceOutcome",
    "Reason",
    "RoundDecision",
    "Target",
    "cannot_separate_text",
    "cell_fates",
    "cell_prefixes",
    "fates_by_folder",
    "human_labels_text",
    "judging",
    "kappa_text",
    "labels_usd",
    "money_text",
    "more_items",
    "outcome_of",
    "share_text",
    "unsettled",
]


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


def money_text(worth_usd: float, paid_usd: float, full_grid_usd: float) -> str:
    """``judgments worth $0.41 of the full grid's $2.12; $0.39 paid``: a race's money on one
    basis (the ledger's), as the console and the report tell it."""
    return (
        f"judgments worth {usd(worth_usd)} of the full grid's "
        f"{usd(full_grid_usd)}; {usd(paid_usd)} paid"
    )


def labels_usd(labels: HumanLabels, label_usd: float) -> float:
    """What a race's people's grades cost at ``race.label_usd`` dollars a grade."""
    return labels.total * label_usd


def human_labels_text(labels: HumanLabels, n_items: int, label_usd: float = 0.0) -> str:
    """The people's grades a race needed, as the console says it: ``people's grades: 80 of
    the 240 items (every item the race judged)``, or with grades asked ``people's grades: 412
    asked, of 4,423 items (by round: 83, 154, …)``; with a price per grade (``race.label_usd``)
    what they cost: ``; $206.00 at race.label_usd=0.5``."""
    if labels.design == "uniform":
        text = (
            f"people's grades: {labels.total:,} of the {n_items:,} items "
            "(every item the race judged)"
        )
    else:
        rounds = ", ".join(f"{n:,}" for n in labels.per_round)
        text = f"people's grades: {labels.total:,} asked, of {n_items:,} items (by round: {rounds})"
    if label_usd > 0:
        text += f" (${labels_usd(labels, label_usd):,.2f} at race.label_usd={label_usd:g})"
    return text


def share_text(outcome: RaceOutcome) -> str:
    """The share of the full grid's judgments a race made: ``17%``."""
    share = outcome.judgments / outcome.full_judgments if outcome.full_judgments else 0.0
    return f"{share:.0%}"


def kappa_text(value: float | None) -> str:
    """A race's κ̂ as every view prints it: ``0.949``, or :data:`~mmjudge.display.MISSING`
    where it is not known."""
    return number(value)


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


def fates_by_folder(race: RaceFile) -> dict[str, str]:
    """:func:`cell_fates` of a race read from its file (``race.json``), by each cell's run
    folder name."""
    fates = cell_fates(race.rounds, len(race.cells))
    return {cell.run_dir: fate for cell, fate in zip(race.cells, fates, strict=True)}


def outcome_of(
    last: RoundDecision,
    rounds: tuple[RoundDecision, ...],
    lengths: npt.NDArray[np.int64],
    prices: npt.NDArray[np.float64],
    names: tuple[str, ...],
    n_items: int,
    judged: npt.NDArray[np.int64] | None = None,
) -> RaceOutcome:
    """How the race ended, from its last decision: the choice and its evidence against the
    runner-up, the judgments and their list-price dollars against the full grid's. The
    guarantee holds when the race ended settled (or with one cell), or when its items ran out
    with every interval exact (``race.target=items``) or every other cell settled; not when
    the dollar cap ended it, nor when it ended with cells it could not separate from the
    choice at this size (:func:`~mmjudge.studies.race_records.unsettled`). ``judged``: the
    judgments each cell made, where dear cells judged a sample of their ``lengths``."""
    made = lengths if judged is None else judged
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
        judgments=int(made.sum()),
        list_usd=float((made * prices).sum()),
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
