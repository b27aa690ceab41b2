"""The race section of a report: what a race (``mmjudge race``) did, read from the sweep
folder's ``race.json`` — the choice with its evidence, the spend against the full grid's
forecast, and per round the cells still judging and each stop or resume with its evidence."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmjudge.config.race import RaceConfig
from mmjudge.store.race_file import read_race_file
from mmjudge.store.summary import run_ending
from mmjudge.studies.race_records import (
    RoundDecision,
    cell_fates,
    cell_prefixes,
    evidence_from_dict,
    judging,
    kappa_text,
    round_from_dict,
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


def _interval(evidence: dict[str, Any]) -> str:
    return evidence_from_dict(evidence).bounds_text(items=True)


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"


def race_context(roots: Sequence[Path]) -> list[dict[str, Any]]:
    """One entry per sweep folder that holds a race: its summary lines and its rounds."""
    out = []
    for root in roots:
        data = read_race_file(root)
        if data is None:
            continue
        out.append(_race(root, data))
    return out


def short_names(names: Sequence[str]) -> list[str]:
    """The cells' names without the dataset they all share (a race is over one dataset)."""
    heads = {name.split(" × ", 1)[0] for name in names}
    if len(heads) != 1 or any(" × " not in name for name in names):
        return list(names)
    return [name.split(" × ", 1)[1] for name in names]


def _race(root: Path, data: dict[str, Any]) -> dict[str, Any]:
    names = short_names([cell["name"] for cell in data["cells"]])
    rounds = [round_from_dict(r) for r in data["rounds"]]
    rows = []
    for raw, decision in zip(data["rounds"], rounds, strict=True):
        events = _events(root, data, raw, decision, names)
        rows.append(
            {
                "round": decision.round,
                "prefix": f"{decision.prefix:,}",
                "alpha": f"{decision.alpha_total:.4f}",
                "z": "—" if raw["z"] is None else f"{decision.z:.2f}",
                "judging": ", ".join(names[c] for c in judging(rounds, decision.round, len(names)))
                or "—",
                "events": events,
                "judgments": f"{decision.judgments:,}",
            }
        )
    full = float(data.get("full_grid_usd") or 0.0)
    spent = float(data.get("spent_usd") or 0.0)
    full_names = [cell["name"] for cell in data["cells"]]
    return {
        "folder": str(root),
        "dataset": full_names[0].split(" × ", 1)[0] if full_names else "",
        "settings": _settings(data),
        "choice": _choice(root, data, names),
        "card": _card_line(data, names),
        "spend": (
            f"{_usd(spent)} spent of {_usd(full)} the full grid would cost (forecast at list "
            "prices; answers from the response cache are free)"
        ),
        "rows": rows,
        "cells": _cell_rows(rounds, names),
        "skipped": [f"{c['name']}: {c['reason']}" for c in data.get("skipped") or []],
    }


def _settings(data: dict[str, Any]) -> str:
    """The race's settings in a line: α, δ, its rounds (as planned on its items), its
    spending, seed, items and target."""
    settings = data["settings"]
    rule = RaceConfig(round_items=int(settings["round_items"]))
    size = planned_round_items(rule, int(data["population"])).items
    target = settings.get("target", "items")  # a race of the first layout took the items
    return (
        f"α = {settings['alpha']}, δ = {settings['delta']}, {size} items per round, spending "
        f"α·u^{settings['rho']}, item order seeded by {data['seed']}, "
        f"{data['population']:,} graded items, κ of "
        + (
            "these items themselves (race.target=items)"
            if target == "items"
            else "the population they were drawn from"
        )
        + (f", cap ${settings['max_usd']}" if settings.get("max_usd") else "")
    )


def _events(
    root: Path, data: dict[str, Any], raw: dict[str, Any], decision: RoundDecision, names: list[str]
) -> list[str]:
    """What one round decided, a line per stop or resume (with its evidence) and the end."""
    events = []
    for change, raw_change in zip(decision.changes, raw["changes"], strict=True):
        evidence = raw_change["evidence"]
        if change.action == "stopped" and change.evidence.reason == "cannot judge":
            ended = run_ending(root / data["cells"][change.cell]["run_dir"])
            events.append(f"{names[change.cell]} stops: it cannot judge (its run ended {ended})")
        elif change.action == "stopped":
            why = REASONS.get(str(evidence["reason"]), "not settled when the race ended")
            events.append(
                f"{names[change.cell]} stops: {why} — κ difference with "
                f"{names[evidence['comparator']]} {_interval(evidence)}"
            )
        else:
            events.append(
                f"{names[change.cell]} resumes: no longer settled against "
                f"{names[evidence['comparator']]} ({_interval(evidence)})"
            )
    if decision.ending is not None and decision.chosen is not None:
        events.append(f"the race ends ({decision.ending}): {names[decision.chosen]} is chosen")
    return events


def _cell_rows(rounds: Sequence[RoundDecision], names: list[str]) -> list[dict[str, str]]:
    """Each cell: what the race did with it, the items it judged and its κ̂ on them (the last
    round's), so a reader sees why the cells' κ below rest on different numbers of items."""
    fates = cell_fates(rounds, len(names))
    prefixes = cell_prefixes(rounds, len(names))
    return [
        {
            "name": name,
            "fate": fates[cell],
            "judged": f"{prefixes[cell]:,}",
            "kappa": kappa_text(rounds[-1].kappas[cell] if rounds else None),
        }
        for cell, name in enumerate(names)
    ]


def _card_line(data: dict[str, Any], names: list[str]) -> str:
    """The race's answer in a line, for the dataset's card beside the report's own (the two
    rules differ: the race's δ and α over rounds, the card's paired bootstrap)."""
    outcome = data.get("outcome")
    if outcome is None:
        return f"not ended: {len(data['rounds'])} rounds decided so far"
    share = outcome["judgments"] / outcome["full_judgments"] if outcome["full_judgments"] else 0
    guarantee = "" if outcome["guarantee"] else ", no guarantee"
    return (
        f"{names[outcome['chosen']]} (κ {kappa_text(outcome['kappa'])}; {outcome['ending']}"
        f"{guarantee}; "
        f"δ = {data['settings']['delta']}, α = {data['settings']['alpha']}), on "
        f"{share:.0%} of the grid's judgments"
    )


def _choice(root: Path, data: dict[str, Any], names: list[str]) -> str:
    outcome = data.get("outcome")
    if outcome is None:
        return f"The race has not ended: {len(data['rounds'])} rounds decided so far."
    chosen = names[outcome["chosen"]]
    text = f"{chosen} (κ {kappa_text(outcome['kappa'])}); the race ended: {outcome['ending']}."
    versus = outcome.get("versus_runner_up")
    if versus is not None and outcome.get("runner_up") is not None:
        text += f" Against {names[outcome['runner_up']]}: κ difference {_interval(versus)}."
    share = outcome["judgments"] / outcome["full_judgments"] if outcome["full_judgments"] else 0
    text += (
        f" {outcome['judgments']:,} of the full grid's {outcome['full_judgments']:,} judgments "
        f"({share:.0%})."
    )
    if outcome["ending"] == "dollar cap":
        text += " The dollar cap ended it: the choice carries no guarantee."
    verdict = race_verdict(root)
    for line in verdict.unseparated if verdict is not None else ():
        text += f" It {line[0].lower()}{line[1:]}."
    return text
