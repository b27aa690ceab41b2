"""The race section of a report: what a race (``mmjudge race``) did, read from the sweep
folder's ``race.json`` — the choice with its evidence, the spend against the full grid's
forecast, and per round the cells still judging and each stop or resume with its evidence."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mmjudge.store.race_file import RaceFile, RoundDecision, read_race_file
from mmjudge.store.summary import run_ending
from mmjudge.studies.asked_agreement import AskedKappa
from mmjudge.studies.race_records import (
    cell_fates,
    cell_prefixes,
    human_labels_text,
    judging,
    kappa_text,
    money_text,
    share_text,
)
from mmjudge.studies.race_rule import planned_round_items
from mmjudge.studies.race_verdict import race_verdict

#: What a rule's name means, for a reader of the report.
REASONS = {
    "not better, not cheaper": "cannot beat it by more than δ, and is not cheaper",
    "below the candidate": "more than δ below it",
    "dominated": "not better and dearer (Pareto-dominated)",
    "cannot judge": "no grade on its items, or its run reached its dollar cap",
    "cannot separate at this size": "the graded items cannot separate it from the choice",
}


@dataclass(frozen=True)
class RaceRoundRow:
    """A round of the race as the section's table prints it."""

    round: int
    """The round's number."""
    prefix: str
    """Items judged by the end of the round."""
    alpha: str
    """α spent so far."""
    z: str
    """The boundary's z (— where none)."""
    judging: str
    """The cells judging in the round (— where none)."""
    events: list[str]
    """What the round decided, a line per stop, resume and the end."""
    judgments: str
    """Judgments so far."""


@dataclass(frozen=True)
class RaceCellRow:
    """A cell of the race as the section's table prints it."""

    name: str
    """The cell's name, without the dataset every cell shares."""
    fate: str
    """What the race did with it."""
    judged: str
    """Items it judged."""
    kappa: str
    """Its κ̂ on them (the last round's)."""
    asked_kappa: str = ""
    """With grades asked (``race.labels=ask``): its κ̂ from them, weighted 1/π, with its 95%
    interval; empty otherwise."""


@dataclass(frozen=True)
class RaceSection:
    """One race as the report shows it: its summary lines and its tables."""

    folder: str
    """The sweep folder that holds the race."""
    dataset: str
    """The dataset it raced on."""
    settings: str
    """Its settings in a line."""
    choice: str
    """What it chose and why, in a few sentences."""
    card: str
    """Its answer in a line, for the dataset's card."""
    spend: str
    """What it spent beside what the full grid would cost."""
    rows: list[RaceRoundRow]
    """One row per round."""
    cells: list[RaceCellRow]
    """One row per cell."""
    skipped: list[str]
    """Each cell that took no part, with why."""
    labels: str = ""
    """How the people's grades were drawn, how many, and what they cost."""
    asks: bool = False
    """Whether the race asked for people's grades as it went (``race.labels=ask``)."""


def race_context(roots: Sequence[Path]) -> list[RaceSection]:
    """One entry per sweep folder that holds a race: its summary lines and its rounds."""
    out = []
    for root in roots:
        race = read_race_file(root)
        if race is None:
            continue
        out.append(_race(root, race))
    return out


def short_names(names: Sequence[str]) -> list[str]:
    """The cells' names without the dataset they all share (a race is over one dataset)."""
    heads = {name.split(" × ", 1)[0] for name in names}
    if len(heads) != 1 or any(" × " not in name for name in names):
        return list(names)
    return [name.split(" × ", 1)[1] for name in names]


def _race(root: Path, race: RaceFile) -> RaceSection:
    names = short_names(race.names)
    rounds = race.rounds
    rows = [
        RaceRoundRow(
            round=decision.round,
            prefix=f"{decision.prefix:,}",
            alpha=f"{decision.alpha_total:.4f}",
            z=f"{decision.z:.2f}" if math.isfinite(decision.z) else "—",
            judging=", ".join(names[c] for c in judging(rounds, decision.round, len(names))) or "—",
            events=_events(root, race, decision, names),
            judgments=f"{decision.judgments:,}",
        )
        for decision in rounds
    ]
    full_names = race.names
    return RaceSection(
        folder=str(root),
        dataset=full_names[0].split(" × ", 1)[0] if full_names else "",
        settings=_settings(race),
        choice=_choice(root, race, names),
        card=_card_line(race, names),
        spend=money_text(race.worth_usd, race.paid_usd, race.full_grid_usd)
        + " (at the prices the ledger charged; answers from the response cache are free)",
        rows=rows,
        cells=_with_asked_kappas(root, race, _cell_rows(rounds, names)),
        skipped=[f"{s.name}: {s.reason}" for s in race.skipped],
        labels=_labels_line(race),
        asks=race.settings.asks,
    )


def _labels_line(race: RaceFile) -> str:
    """How the race's people's grades were drawn, how many it needed and what they cost."""
    outcome = race.outcome
    if outcome is None or outcome.human_labels is None:
        return ""
    labels = outcome.human_labels
    text = human_labels_text(labels, race.n_items, race.settings.label_usd)
    if labels.design == "ask":
        rest = (
            "a share of the rest set round by round to trade judge dollars against grade "
            "dollars at race.label_usd (one in ten until enough of them had grades)"
            if race.settings.label_usd > 0
            else "one in ten of the rest"
        )
        text += (
            ". Each round asked a person to grade every item where the leader and a rival "
            f"still racing graded differently, half of those where only two rivals differed, "
            f"and {rest}, each with a known probability π; every κ from these "
            "grades weighs an item 1/π, so it estimates the κ over all the items, not over "
            "the disagreements the grades over-represent"
        )
    return text


def _with_asked_kappas(root: Path, race: RaceFile, rows: list[RaceCellRow]) -> list[RaceCellRow]:
    """The cells' rows with their κ from the asked grades (``race.labels=ask``), weighted 1/π
    with the jackknife's interval, over every item each cell judged and a person graded
    (:func:`mmjudge.studies.asked_agreement.judge_kappas`)."""
    from mmjudge.store.rows import read_records
    from mmjudge.studies.asked_agreement import asked_reference, judge_kappas

    if not race.settings.asks:
        return rows
    asked = asked_reference(root)
    if asked is None:
        return rows
    labels = []
    for cell in race.cells:
        records = read_records(root / cell.run_dir)
        grades = np.full(len(asked.keys), np.nan)
        for position, key in enumerate(asked.keys):
            record = records.get(key)
            if record is not None and record.label is not None and record.error is None:
                grades[position] = float(record.label)
        labels.append(grades)
    found = judge_kappas(asked, labels)
    return [
        dataclasses.replace(row, asked_kappa=_interval_text(found[cell]))
        for cell, row in enumerate(rows)
    ]


def _interval_text(found: AskedKappa) -> str:
    kappa, low, high = found.kappa
    if not math.isfinite(kappa):
        return "—"
    items = f"{found.n_items:,} graded"
    if not (math.isfinite(low) and math.isfinite(high)):
        return f"{kappa_text(kappa)} (no interval: too few grades, or none that vary; {items})"
    return f"{kappa_text(kappa)} [{kappa_text(low)}, {kappa_text(high)}] ({items})"


def _settings(race: RaceFile) -> str:
    """The race's settings in a line: α, δ, its rounds (as planned on its items), its
    spending, seed, items and target."""
    settings = race.settings
    size = planned_round_items(settings, race.n_items).items
    return (
        f"α = {settings.alpha}, δ = {settings.delta}, {size} items per round, spending "
        f"α·u^{settings.rho}, item order seeded by {race.seed}, "
        + (
            f"{race.n_items:,} items, people's grades asked as it went (race.labels=ask)"
            if settings.asks
            else f"{race.n_items:,} graded items"
        )
        + ", κ of "
        + (
            "these items themselves (race.target=items)"
            if settings.target == "items"
            else "the population they were drawn from"
        )
        + (f", cap ${settings.max_usd}" if settings.max_usd else "")
    )


def _events(root: Path, race: RaceFile, decision: RoundDecision, names: list[str]) -> list[str]:
    """What one round decided, a line per stop or resume (with its evidence) and the end."""
    events = []
    for change in decision.changes:
        evidence = change.evidence
        if change.action == "stopped" and evidence.reason == "cannot judge":
            ended = run_ending(root / race.cells[change.cell].run_dir)
            events.append(f"{names[change.cell]} stops: it cannot judge (its run ended {ended})")
        elif change.action == "stopped":
            why = REASONS.get(str(evidence.reason), "not settled when the race ended")
            events.append(
                f"{names[change.cell]} stops: {why} — κ difference with "
                f"{names[evidence.comparator]} {evidence.bounds_text(items=True)}"
            )
        else:
            events.append(
                f"{names[change.cell]} resumes: no longer settled against "
                f"{names[evidence.comparator]} ({evidence.bounds_text(items=True)})"
            )
    if decision.ending is not None and decision.chosen is not None:
        events.append(f"the race ends ({decision.ending}): {names[decision.chosen]} is chosen")
    return events


def _cell_rows(rounds: Sequence[RoundDecision], names: list[str]) -> list[RaceCellRow]:
    """Each cell: what the race did with it, the items it judged and its κ̂ on them (the last
    round's), so a reader sees why the cells' κ below rest on different numbers of items."""
    fates = cell_fates(rounds, len(names))
    prefixes = cell_prefixes(rounds, len(names))
    return [
        RaceCellRow(
            name=name,
            fate=fates[cell],
            judged=f"{prefixes[cell]:,}",
            kappa=kappa_text(rounds[-1].kappas[cell] if rounds else None),
        )
        for cell, name in enumerate(names)
    ]


def _card_line(race: RaceFile, names: list[str]) -> str:
    """The race's answer in a line, for the dataset's card beside the report's own (the two
    rules differ: the race's δ and α over rounds, the card's paired bootstrap)."""
    outcome = race.outcome
    if outcome is None:
        return f"not ended: {len(race.rounds)} rounds decided so far"
    guarantee = "" if outcome.guarantee else ", no guarantee"
    return (
        f"{names[outcome.chosen]} (κ {kappa_text(outcome.kappa)}; {outcome.ending}"
        f"{guarantee}; δ = {race.settings.delta}, α = {race.settings.alpha}), on "
        f"{share_text(outcome)} of the grid's judgments"
    )


def _choice(root: Path, race: RaceFile, names: list[str]) -> str:
    outcome = race.outcome
    if outcome is None:
        return f"The race has not ended: {len(race.rounds)} rounds decided so far."
    chosen = names[outcome.chosen]
    text = f"{chosen} (κ {kappa_text(outcome.kappa)}); the race ended: {outcome.ending}."
    versus = outcome.versus_runner_up
    if versus is not None and outcome.runner_up is not None:
        text += (
            f" Against {names[outcome.runner_up]}: κ difference {versus.bounds_text(items=True)}."
        )
    text += (
        f" {outcome.judgments:,} of the full grid's {outcome.full_judgments:,} judgments "
        f"({share_text(outcome)})."
    )
    if outcome.ending == "dollar cap":
        text += " The dollar cap ended it: the choice carries no guarantee."
    verdict = race_verdict(root)
    for line in verdict.unseparated if verdict is not None else ():
        text += f" It {line[0].lower()}{line[1:]}."
    return text
