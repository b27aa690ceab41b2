"""What a race tells on the console: the line of each round and the closing lines. The state
itself is :class:`mmjudge.grid.race.RaceResult`."""

from __future__ import annotations

from mmjudge.grid.race import RaceResult
from mmjudge.store.summary import run_ending
from mmjudge.studies.race_records import (
    RoundDecision,
    human_labels_text,
    kappa_text,
    money_text,
    share_text,
)

__all__ = ["RaceResult", "closing_lines", "round_line"]


def money_line(result: RaceResult) -> str:
    """``judgments worth $0.41 of the full grid's $2.12; $0.39 paid``: the race's money on one
    basis (the ledger's; answers from the response cache are free)."""
    spend = result.spend
    return money_text(spend.worth_usd, spend.paid_usd, spend.full_grid_usd)


def round_line(result: RaceResult, decision: RoundDecision) -> str:
    """``race round 3: 400 items; 4 of 6 cells judge on; stopped …; judgments worth …``."""
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
    parts.append(money_line(result))
    return "; ".join(parts)


def closing_lines(result: RaceResult) -> list[str]:
    """What the race prints when it ends: the choice, its evidence, the spend."""
    outcome = result.outcome
    assert outcome is not None
    lines = [f"race: chose {outcome.name} (κ {kappa_text(outcome.kappa)}) — {outcome.ending}"]
    versus = outcome.versus_runner_up
    if versus is not None and outcome.runner_up is not None:
        lines.append(
            f"  against {result.cells[outcome.runner_up].name}: "
            f"κ diff {versus.bounds_text(items=True)}"
        )
    if outcome.ending == "dollar cap":
        lines.append("  the dollar cap ended the race: the choice carries no guarantee")
    elif not outcome.guarantee:  # pairs the graded items cannot separate (warnings below)
        lines.append(
            f"  not a settled choice: {outcome.name} leads on the items judged (the cheapest "
            f"judge whose κ is within δ={result.settings.delta:g} of the highest), but the "
            "items cannot separate it from the judges named below: the choice carries no "
            "guarantee"
        )
    lines.append(
        f"  {outcome.judgments:,} of {outcome.full_judgments:,} judgments "
        f"({share_text(outcome)}); " + money_line(result)
    )
    if outcome.human_labels is not None:
        priced = human_labels_text(outcome.human_labels, result.n_items, result.settings.label_usd)
        lines.append(f"  {priced}")
    lines += [f"  warning: {line}" for line in result.warnings]
    lines.append(f"  sweep folder: {result.folder}")
    if result.report is not None:
        lines.append(f"  report: {result.report / 'index.html'}")
    return lines


def opening_lines(result: RaceResult) -> list[str]:
    """What a race says before its first round's line: the cells of the grid that cannot run
    (``race: <cell> takes no part: <why>``), and rounds sized for a small dataset."""
    lines = [f"race: {name} takes no part: {why}" for name, why in result.skipped]
    if result.rounds_note is not None:
        lines.append(f"race: {result.rounds_note}")
    return lines
