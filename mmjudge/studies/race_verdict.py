"""What a race's folder tells the report's card and ``mmjudge frontier``: the race's choice,
whether it decided (so that its choice is their recommendation for that folder), and, where
their answers can still differ, why, in one line.

The race and the card answer one question — the cheapest judge as good as the best — on one
target, the population the items were drawn from. A race that ended settled has decided it
with its own guarantee (α over every round it looked at; a post-hoc comparison of the cells'
unequal prefixes could not claim as much), so its choice is the recommendation, provided its
κ interval lies above 0 (no one is recommended who may be no better than chance). A race
that ran out of items, could not separate its choice from a rival at this size, or was
stopped by its dollar cap has not decided: the card's own rule stands, and the card says why
the two differ when they do.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from mmjudge.store.race_file import RaceFile, read_race_file
from mmjudge.studies.race_records import (
    cannot_separate_text,
    more_items,
    unsettled,
)


class RaceVerdict(NamedTuple):
    """A race's answer, as the card and ``mmjudge frontier`` take it."""

    folder: Path
    """The race's sweep folder."""
    chosen_run: Path | None
    """The chosen cell's run folder (None while the race has not ended)."""
    chosen: str | None
    """The chosen cell's name."""
    ending: str | None
    """Why the race ended (None while it has not)."""
    decided: bool
    """It ended settled with its guarantee: its choice is the recommendation for the folder."""
    delta: float
    """Its ``race.delta``."""
    alpha: float
    """Its ``race.alpha``."""
    unseparated: tuple[str, ...]
    """What it could not separate from its choice at this size, one line each."""

    def why(self) -> str:
        """Why the card names the race's choice: ``Chosen by the race (mmjudge race): …``."""
        return (
            "Chosen by the race (mmjudge race): every other judge was settled against it — "
            f"within δ = {self.delta:g} κ of it and not cheaper, more than δ below it, or "
            f"dearer and no better — with chance at most α = {self.alpha:g} of a choice more "
            "than δ below the best."
        )


def race_verdict(folder: Path) -> RaceVerdict | None:
    """The verdict of the race kept in the sweep folder ``folder`` (None when it holds
    none)."""
    race = read_race_file(folder)
    if race is None:
        return None
    return _verdict(Path(folder), race)


def verdict_for_runs(run_dirs: Iterable[Path | str]) -> RaceVerdict | None:
    """The verdict of the race whose sweep folder holds every one of the given run folders (a
    race's cells sit in its folder), or None when they are not all one race's: judges from
    other folders were not in that race, so its choice does not answer for them."""
    folders = {Path(run_dir).parent for run_dir in run_dirs}
    return race_verdict(folders.pop()) if len(folders) == 1 else None


def _verdict(folder: Path, race: RaceFile) -> RaceVerdict:
    delta, alpha = race.settings.delta, race.settings.alpha
    outcome = race.outcome
    if outcome is None:
        return RaceVerdict(folder, None, None, None, False, delta, alpha, ())
    chosen = outcome.chosen
    names = race.names
    prices = [cell.usd_per_judgment for cell in race.cells]
    lines: list[str] = []
    if race.rounds:
        last = race.rounds[-1]
        at_size = outcome.ending == "cannot separate" or (
            outcome.ending == "items ran out" and last.target == "population"
        )
        for evidence in unsettled(last) if at_size else ():
            needed = more_items(
                evidence, delta, not_cheaper=prices[evidence.cell] >= prices[chosen]
            )
            lines.append(
                cannot_separate_text(names[chosen], names[evidence.cell], evidence, needed)
            )
    decided = outcome.guarantee and outcome.ending in ("settled", "one cell")
    return RaceVerdict(
        folder,
        folder / race.cells[chosen].run_dir,
        names[chosen],
        str(outcome.ending),
        decided,
        delta,
        alpha,
        tuple(lines),
    )


def race_note(verdict: RaceVerdict, *, agrees: bool, chosen_above_chance: bool) -> str | None:
    """Why the race's choice is not the recommendation, in one line; None when they agree
    (``agrees``: the recommendation is the race's choice). ``chosen_above_chance``: the race's
    choice has a κ interval above 0 in the view asking."""
    if verdict.chosen is None:
        return (
            "The race in this folder has not ended; the recommendation reads the items its "
            "judges have judged so far."
        )
    if agrees:
        return None
    if not chosen_above_chance:
        return (
            f"The race chose {verdict.chosen}, but its κ interval reaches 0: it may be no "
            "better than chance, so it is not recommended."
        )
    if verdict.decided:  # decided and above chance: it is the recommendation
        return None
    if verdict.ending == "dollar cap":
        why = "its dollar cap (race.max_usd) ended it before it settled"
    elif verdict.unseparated:
        why = verdict.unseparated[0]
        if len(verdict.unseparated) > 1:
            why += f" (and {len(verdict.unseparated) - 1} more judge(s) it could not separate)"
    else:  # the items ran out with the items themselves as its target
        why = "it judged every item, taking them as the whole population (race.target=items)"
    return (
        f"The race chose {verdict.chosen} but did not settle: {why}. It takes the cheapest "
        f"judge within δ = {verdict.delta:g} of the highest κ; this recommendation is the "
        "cheapest judge not distinguishable from the best."
    )
