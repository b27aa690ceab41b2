"""A race over a grid: every cell judges the same slices of one seeded order of the dataset's
graded items, round after round, and a cell stops being paid for as soon as the choice no
longer depends on it (the rule and its guarantee: :mod:`mmjudge.studies.race_rule`).

A race is a schedule of the grid's one loop (:func:`mmjudge.grid.rounds.run_rounds`):

- a cell's round is an ordinary run of the cell into its own folder with
  ``dataset.sample_items`` set to the round's prefix; the next round resumes that folder, so
  rows, the response cache, the ledger and ``runner.max_cost_usd`` carry over and nothing is
  paid for twice;
- after each round the decision is kept in ``race.json`` in the sweep folder; a race started
  again on the same folder (``hydra.sweep.dir=…``) takes up after the last decided round
  (preparing a race and keeping it: :mod:`mmjudge.grid.race_start`);
- with ``race.labels=ask`` people's grades are asked for round by round
  (:mod:`mmjudge.grid.race_labels`), and a round whose grades have not come stops the race
  until its labelling file is filled;
- cells that cannot run (a judge that cannot see images asked to) take no part: each leaves a
  skipped summary in its folder, as in a sweep, and ``race.json`` names it with why;
- the race's simulation over known grades (:mod:`mmjudge.grid.simulation`) runs the same
  schedule with the grades read from arrays instead of run folders.

Money is told on one basis, the ledger's: what the cells' judgments are worth at the prices
their rows were charged (answers the response cache gave included), what was paid (cache hits
free), and what the full grid would be worth — each cell's judgments so far plus its items
still unjudged at its own price per judgment so far (the dry run's forecast for a cell that
has judged nothing). A race that judged less than the grid is never worth more than it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np

from mmjudge.config.race import RaceConfig
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.grid.launch import CellJob, RoundEnd
from mmjudge.grid.race_labels import (
    AskedLabels,
    GradeRequest,
    LabellingDesk,
    LabelOracle,
    ask_round,
    human_labels,
    round_uniform_share,
)
from mmjudge.store.summary import run_ending
from mmjudge.studies.race_pairs import FloatArray, grade_codes
from mmjudge.studies.race_records import (
    RaceOutcome,
    RoundDecision,
    cell_fates,
    cell_prefixes,
)
from mmjudge.studies.race_rule import (
    NoCellCanJudge,
    decide_round,
    outcome_of,
    race_inputs,
    round_length,
)
from mmjudge.studies.race_spare import draw_judged, judging_shares
from mmjudge.studies.race_warnings import race_warnings

# --------------------------------------------------------------------------- what a race is


@dataclass(frozen=True)
class RaceCell:
    """One cell of a race's grid that can run."""

    index: int
    """Its place among the race's cells (the index the race's records use)."""
    name: str
    """Its display name (``dataset × model × modality``…)."""
    overrides: tuple[str, ...]
    """The overrides that make it, as the grid expands them."""
    run_dir: Path
    """Its run folder, inside the sweep folder."""
    usd_per_judgment: float
    """Its dry run's dollars per judgment (list prices; 0 for a free judge): the price the rule
    ranks cells by."""
    forecast_usd: float
    """Its dry run's dollars for every item of the dataset."""
    grid_index: int = -1
    """Its place in the grid (cells that cannot run are left out of the race's indices)."""


class SkippedCell(NamedTuple):
    """A cell of the grid that takes no part in the race, with why."""

    name: str
    """Its display name."""
    reason: str
    """Why it cannot run."""


@dataclass(frozen=True)
class RaceItems:
    """The items a race is over: the dataset's graded items, in the race's order."""

    keys: tuple[tuple[str, str], ...]
    """(query id, result id) of each item, in race order."""
    reference: np.ndarray
    """The annotators' consensus grade of each item, in race order."""
    scale: tuple[float, ...]
    """The dataset's grade scale."""


class Spend(NamedTuple):
    """A race's money so far, on the ledger's basis (see the module docstring)."""

    worth_usd: float
    """What the cells' judgments are worth (cache hits included)."""
    paid_usd: float
    """What was paid for them (cache hits free)."""
    full_grid_usd: float
    """What every cell on every item would be worth."""


@dataclass
class RaceResult:
    """A race's cells, its rounds so far, and how it ended (``outcome`` is None while it runs
    or after it was stopped)."""

    folder: Path
    """The sweep folder."""
    cells: list[RaceCell]
    """The cells that race (those of the grid that can run)."""
    n_items: int
    """Graded items the race draws from."""
    settings: RaceConfig
    """The race's settings."""
    seed: int
    """The seed of the item order."""
    rounds: list[RoundDecision] = field(default_factory=list)
    """Each round's decision, in order."""
    skipped: list[SkippedCell] = field(default_factory=list)
    """Cells of the grid that cannot run, with why (they take no part)."""
    spend: Spend = field(default_factory=lambda: Spend(0.0, 0.0, 0.0))
    """What the judgments so far are worth, what was paid, and the full grid's worth."""
    outcome: RaceOutcome | None = None
    """How the race ended; None while it has not."""
    stop_signal: int | None = None
    """The signal that stopped the race before it ended (run it again to take it up)."""
    rounds_note: str | None = None
    """Why the rounds are not ``race.round_items`` long (a small dataset), or None."""
    warnings: list[str] = field(default_factory=list)
    """The cautions of the ended race (a choice no better than chance, judges it could not
    separate at this size), one line each."""
    report: Path | None = None
    """The report's folder, when one was built."""
    waiting: GradeRequest | None = None
    """The round that waits for people's grades (``race.labels=ask`` without an oracle): fill
    its labelling file and run the race again; None otherwise."""

    @property
    def interrupted(self) -> bool:
        """Whether a stop signal ended the race before it decided."""
        return self.stop_signal is not None

    @property
    def spent_usd(self) -> float:
        """Dollars paid so far (answers the response cache gave are free)."""
        return self.spend.paid_usd

    @property
    def full_grid_usd(self) -> float:
        """What the full grid would be worth: every cell on every item."""
        return self.spend.full_grid_usd

    @property
    def fates(self) -> dict[str, str]:
        """What the race did with each cell, by name: ``chosen``, ``stopped after round 3``,
        ``cannot judge after round 1`` or ``judging`` (the report's words)."""
        fates = cell_fates(self.rounds, len(self.cells))
        return {cell.name: fate for cell, fate in zip(self.cells, fates, strict=True)}


# --------------------------------------------------------------------------- the rounds


class CellReading(NamedTuple):
    """What one cell holds after a round."""

    grades: FloatArray
    """Its grade of each item in race order (``nan``: not judged yet, failed or unread)."""
    judged: int
    """Judgments it holds (rows, failures included)."""
    worth_usd: float
    """What they are worth at the ledger's prices."""
    paid_usd: float
    """What was paid for them (cache hits free)."""


class Readings(Protocol):
    """Where a race reads what its cells hold: their run folders, or known grades."""

    def read(self, cell: int) -> CellReading:
        """What cell ``cell`` of the race holds now."""
        ...


class FolderReadings:
    """A race's cells read from their run folders: rows for the grades, the summary for the
    money."""

    def __init__(self, result: RaceResult, items: RaceItems) -> None:
        self.result = result
        self.items = items

    def read(self, cell: int) -> CellReading:
        from mmjudge.store.rows import read_records
        from mmjudge.store.summary import read_summary

        run_dir = self.result.cells[cell].run_dir
        records = read_records(run_dir)
        grades = np.full(len(self.items.keys), np.nan)
        for position, key in enumerate(self.items.keys):
            record = records.get(key)
            if record is not None and record.label is not None and record.error is None:
                grades[position] = float(record.label)
        if not (run_dir / "summary.json").is_file():
            return CellReading(grades, 0, 0.0, 0.0)
        summary = read_summary(run_dir)
        return CellReading(
            grades, summary.n_judgments, summary.cost.total_usd, summary.cost.spent_usd
        )


def spend_of(cells: Sequence[RaceCell], readings: Sequence[CellReading], n_items: int) -> Spend:
    """The race's money on the ledger's basis: each cell's judgments so far, and its items
    still unjudged at its own price per judgment so far (its forecast before it judged)."""
    worth = paid = full = 0.0
    for cell, reading in zip(cells, readings, strict=True):
        worth += reading.worth_usd
        paid += reading.paid_usd
        unit = reading.worth_usd / reading.judged if reading.judged else cell.usd_per_judgment
        full += reading.worth_usd + max(n_items - reading.judged, 0) * unit
    return Spend(worth, paid, full)


class RaceRounds:
    """A race as a schedule of the grid's loop: each round's jobs from the last decision, and
    the decision after each round from what the cells hold (``readings``); ``keep`` is called
    with the state after every decided round (the real race writes ``race.json``). With
    ``race.labels=ask`` the people's grades come from ``oracle``, round by round, for the
    items :mod:`mmjudge.studies.race_labels` chooses (``labels``: those a race taken up has
    asked for; ``keep_labels`` is called whenever they change); a round whose grades have not
    all come (a :class:`LabellingDesk`'s files not filled yet) ends the race's run with
    ``waiting`` set, undecided."""

    def __init__(
        self,
        result: RaceResult,
        items: RaceItems,
        readings: Readings,
        keep: Callable[[RaceResult], None] | None = None,
        on_round: Callable[[RaceResult, RoundDecision], None] | None = None,
        oracle: LabelOracle | None = None,
        labels: AskedLabels | None = None,
        keep_labels: Callable[[AskedLabels], None] | None = None,
        samples: bool = False,
    ) -> None:
        self.result = result
        self.items = items
        self.readings = readings
        self.keep = keep
        self.on_round = on_round
        self.oracle = oracle
        self.labels = labels if labels is not None else AskedLabels.empty(len(items.keys))
        self.keep_labels = keep_labels
        if result.settings.asks and oracle is None:
            raise ConfigError("race.labels=ask: the race has no source of people's grades")
        if result.settings.spares and not samples:
            raise ConfigError(
                "race.spare_dear=on: a grid's cells judge prefixes of the race's order, not "
                "chosen items; only the race's simulation spares dear judges yet (set it off)"
            )
        self.judged = np.ones((len(result.cells), len(items.keys)))
        """With ``race.spare_dear=on``, each cell's weight of each item: 1/q where it is to
        judge the item, 0 where not (:mod:`mmjudge.studies.race_spare`); the launcher that
        judges a sample (``samples``) reads which items from it."""

    def judging(self) -> tuple[int, ...]:
        """The cells that judge the next round."""
        rounds = self.result.rounds
        return rounds[-1].active if rounds else tuple(range(len(self.result.cells)))

    def next_round(self) -> Sequence[CellJob] | None:
        result = self.result
        if result.outcome is not None or result.waiting is not None:
            return None
        target = round_length(result.settings, len(result.rounds) + 1, result.n_items)
        asks = result.settings.asks
        if result.settings.spares:
            self._draw_judged(len(result.rounds) + 1, target)
        return [CellJob(result.cells[c].grid_index, target, asks) for c in self.judging()]

    def after_round(self, end: RoundEnd) -> None:
        result = self.result
        number = len(result.rounds) + 1
        previous = self.judging()
        target = round_length(result.settings, number, result.n_items)
        prefixes = cell_prefixes(result.rounds, len(result.cells))
        for c in previous:
            prefixes[c] = max(prefixes[c], target)
        readings = [self.readings.read(c) for c in range(len(result.cells))]
        grades = np.vstack([reading.grades for reading in readings])
        if result.settings.asks:
            start = round_length(result.settings, number - 1, result.n_items)
            if not self._asked(number, grades[:, :target], start, previous):
                return  # waiting for people's grades: the round is decided once they come
            reference, weights = self.labels.reference, self.labels.weights
        else:
            reference, weights = self.items.reference, None
        inputs = race_inputs(
            reference,
            grades,
            [cell.usd_per_judgment for cell in result.cells],
            self.items.scale,
            weights,
            self.judged if result.settings.spares else None,
        )
        try:
            decision = decide_round(
                inputs,
                prefixes,
                result.settings,
                number,
                previous_active=list(previous),
                cannot_judge=self._cannot_judge(previous, end.statuses),
            )
        except NoCellCanJudge:  # say how each cell's run ended
            endings = "; ".join(f"{cell.name}: {run_ending(cell.run_dir)}" for cell in result.cells)
            raise MMJudgeError(f"no cell of the race can judge ({endings})") from None
        result.rounds.append(decision)
        result.spend = spend_of(result.cells, readings, result.n_items)
        if decision.ending is not None:
            result.outcome = dataclasses.replace(
                outcome_of(
                    decision,
                    tuple(result.rounds),
                    np.asarray(prefixes, dtype=np.int64),
                    inputs.prices,
                    tuple(cell.name for cell in result.cells),
                    result.n_items,
                    inputs.judgments(np.asarray(prefixes, dtype=np.int64)),
                ),
                human_labels=human_labels(self.labels, result.settings.asks, result.rounds),
            )
            result.warnings = race_warnings(inputs, result.outcome, result.settings)
        if self.keep is not None:
            self.keep(result)
        if self.on_round is not None:
            self.on_round(result, decision)

    def _draw_judged(self, number: int, target: int) -> None:
        """Which of round ``number``'s new items each judging cell judges (``race.spare_dear``):
        a dear cell's coin per item, from where its prefix ends to ``target``. The round that
        reaches the last item has each judging cell judge every item it skipped, so a race whose
        items run out decides on every item, as the uniform race does."""
        result = self.result
        judging = self.judging()
        if target >= result.n_items:
            for c in judging:
                self.judged[c, :target] = 1.0
            return
        candidate = result.rounds[-1].candidate if result.rounds else None
        prices = [cell.usd_per_judgment for cell in result.cells]
        shares = judging_shares(prices, judging, candidate)
        prefixes = cell_prefixes(result.rounds, len(result.cells))
        for c in judging:
            start = int(prefixes[c])
            if target > start:
                self.judged[c, start:target] = draw_judged(
                    float(shares[c]), target - start, result.seed, number, c
                )

    def _asked(self, number: int, grades: FloatArray, start: int, judging: Sequence[int]) -> bool:
        """Ask for people's grades on round ``number``'s new items (from ``start`` of the race's
        order; ``grades`` the cells' grades up to the round's end); whether they have all come.
        Where some have not, ``waiting`` says which labelling file to fill."""
        assert self.oracle is not None
        result = self.result
        leader = result.rounds[-1].candidate if result.rounds else None
        share = round_uniform_share(
            self.labels,
            grades[:, :start],
            self.items.scale,
            judging,
            leader,
            [cell.usd_per_judgment for cell in result.cells],
            result.settings.label_usd,
        )
        codes = grade_codes(grades[:, start:], self.items.scale)
        missing = ask_round(
            self.labels, self.oracle, codes, start, judging, leader, result.seed, number, share
        )
        if self.keep_labels is not None:
            self.keep_labels(self.labels)
        if not missing:
            return True
        if not isinstance(self.oracle, LabellingDesk):
            raise MMJudgeError(f"round {number}: {missing} people's grades did not come")
        result.waiting = self.oracle.request(number, self.labels)
        return False

    def _cannot_judge(self, judged: Sequence[int], statuses: Sequence[str]) -> set[int]:
        """Cells out of the race after a round: those out before, and those whose run this
        round stopped at their own dollar cap. (A cell without a single grade is out by the
        rule itself; a failed run that holds grades stays, and the next round retries its
        failed items.)"""
        from mmjudge.store.status import STOPPED_BY_BUDGET

        out = {c for c, status in zip(judged, statuses, strict=True) if status == STOPPED_BY_BUDGET}
        if self.result.rounds:
            out |= {e.cell for e in self.result.rounds[-1].settled if e.reason == "cannot judge"}
        return out
