"""People's grades asked round by round in a race (``race.labels=ask``): where the race gets
them (an oracle), what it holds of them, and one round's asking — the design itself, pure, is
:mod:`mmjudge.studies.race_labels`; the schedule that calls this is
:class:`mmjudge.grid.race.RaceRounds`."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np

from mmjudge.errors import MMJudgeError
from mmjudge.grid.cells import Grid, GridCell
from mmjudge.store.asked_grades import AskedGrade
from mmjudge.store.labelling_file import (
    LABELLING_DIR,
    LabellingPaths,
    LabellingRow,
    read_labelling_grades,
    write_labelling_files,
)
from mmjudge.store.race_file import HumanLabels, RoundDecision
from mmjudge.studies.race_labels import (
    UNIFORM_SHARE,
    draw_labels,
    inclusion_probabilities,
    priced_uniform_share,
)
from mmjudge.studies.race_pairs import FloatArray, IntArray, grade_codes


class LabelOracle(Protocol):
    """Where a race with asked grades (``race.labels=ask``) gets a person's grade."""

    def grades(self, positions: Sequence[int]) -> FloatArray:
        """The person's grade of each item at ``positions`` of the race's order."""
        ...


class RevealedGrades:
    """An oracle over grades known in advance (the simulation's, and a file of grades read in
    race order), counting every grade it hands out."""

    def __init__(self, reference: FloatArray) -> None:
        self.reference = np.asarray(reference, dtype=np.float64)
        self.handed_out = 0

    def grades(self, positions: Sequence[int]) -> FloatArray:
        found = self.reference[np.asarray(positions, dtype=np.int64)]
        self.handed_out += len(found)
        return found


ItemKey = tuple[str, str]


def _scale_text(scale: Sequence[float]) -> str:
    return ", ".join(str(int(g)) if float(g).is_integer() else str(g) for g in scale)


class FileOracle:
    """Grades read from a file (``race.label_oracle``: TREC qrels, or JSON lines with
    ``query_id``, ``result_id`` and ``grade``), handed out as the race asks for them and
    counted; a grade the file lacks, or one off the dataset's scale, is an error naming the
    file (and the line)."""

    def __init__(
        self, path: str | os.PathLike[str], keys: Sequence[ItemKey], scale: Sequence[float]
    ) -> None:
        from mmjudge.data.label_files import one_run
        from mmjudge.locations import resolve_path

        self.path = resolve_path(os.fspath(path))
        if not self.path.is_file():
            raise MMJudgeError(
                f"race.label_oracle={path}: no such file; give a file of people's grades (TREC "
                "qrels or JSON lines), or leave it unset to be asked in a labelling file"
            )
        self.run = one_run(self.path)
        self.keys = keys
        self.scale = tuple(scale)
        self.handed_out = 0

    def grades(self, positions: Sequence[int]) -> FloatArray:
        found = np.empty(len(positions))
        for slot, position in enumerate(positions):
            query_id, result_id = self.keys[position]
            grade = self.run.qrels.get(query_id, {}).get(result_id)
            if grade is None:
                raise MMJudgeError(
                    f"{self.path}: no grade for query {query_id!r}, result {result_id!r}, which "
                    "the race asks for; add it, or leave race.label_oracle unset to be asked "
                    "in a labelling file"
                )
            if float(grade) not in self.scale:
                line = self.run.lines.get((query_id, result_id))
                raise MMJudgeError(
                    f"{self.path}:{line}: grade {grade} is not on the dataset's scale "
                    f"({_scale_text(self.scale)}); correct it"
                )
            found[slot] = float(grade)
        self.handed_out += len(positions)
        return found


class GradeRequest(NamedTuple):
    """A round that waits for people's grades: what it asked for and where."""

    round: int
    """The round."""
    asked: int
    """Items it asked to be graded."""
    missing: int
    """Those whose grade has not come."""
    paths: LabellingPaths
    """Its labelling files, to fill either of."""


class LabellingDesk:
    """Grades people write into the race's labelling files (``race.labels=ask`` without an
    oracle): read from every round's files in ``labelling/`` of the sweep folder (``nan``
    where a row is still blank), and a round's files written when it waits for grades.
    ``describe`` gives what an assessor sees of each item, by (query id, result id)."""

    def __init__(
        self,
        folder: Path,
        keys: Sequence[ItemKey],
        scale: Sequence[float],
        describe: Callable[[Sequence[ItemKey]], Mapping[ItemKey, LabellingRow]],
    ) -> None:
        self.folder = Path(folder)
        self.keys = keys
        self.scale = tuple(scale)
        self.describe = describe

    def grades(self, positions: Sequence[int]) -> FloatArray:
        given: dict[ItemKey, float] = {}
        for number in self._rounds_with_files():
            given.update(read_labelling_grades(self.folder, number, self.scale))
        return np.asarray(
            [given.get(self.keys[p], np.nan) for p in positions], dtype=np.float64
        ).reshape(len(positions))

    def request(self, number: int, labels: AskedLabels) -> GradeRequest:
        """Write round ``number``'s labelling files: every item it asked for, with the grades
        already given filled in."""
        positions = np.flatnonzero(labels.rounds == number).tolist()
        keys = [self.keys[p] for p in positions]
        shown = self.describe(keys)
        rows = []
        for position, key in zip(positions, keys, strict=True):
            grade = labels.reference[position]
            row = shown[key]
            rows.append(
                LabellingRow(
                    row.query_id,
                    row.query,
                    row.result_id,
                    row.fields,
                    row.images,
                    None if np.isnan(grade) else float(grade),
                )
            )
        paths = write_labelling_files(self.folder, number, rows)
        return GradeRequest(number, len(rows), int(labels.waiting(number).size), paths)

    def _rounds_with_files(self) -> list[int]:
        found = set()
        for path in (self.folder / LABELLING_DIR).glob("round-*.*"):
            number = path.stem.removeprefix("round-")
            if number.isdigit():
                found.add(int(number))
        return sorted(found)


def described_items(
    cell: GridCell, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], LabellingRow]:
    """What an assessor sees of each item of ``keys`` (one pass over the dataset, its HTML
    converted to text as judges see it): the rows of a race's labelling file."""
    from mmjudge.data.loading import load_dataset
    from mmjudge.engine.cell import typed_config

    cfg = typed_config(cell.config)
    wanted = set(keys)
    found: dict[tuple[str, str], LabellingRow] = {}
    for e in load_dataset(cfg.dataset, seed=cfg.seed):
        key = (e.query_id, e.result_id)
        if key in wanted:
            found[key] = LabellingRow(e.query_id, e.query, e.result_id, e.fields, e.images, None)
    return found


def label_source(grid: Grid, keys: Sequence[ItemKey], scale: Sequence[float]) -> LabelOracle:
    """Where a race with ``race.labels=ask`` gets people's grades: the file
    ``race.label_oracle`` names, or labelling files people fill in its sweep folder."""
    from mmjudge.engine.cell import typed_config

    cell = grid.cells[0]
    settings = typed_config(cell.config).race
    if settings.label_oracle is not None:
        return FileOracle(settings.label_oracle, keys, scale)
    return LabellingDesk(grid.folder, keys, scale, lambda wanted: described_items(cell, wanted))


def asked_records(labels: AskedLabels, keys: Sequence[ItemKey]) -> list[AskedGrade]:
    """What ``asked_grades.json`` keeps of ``labels``: every asked item, in race order."""
    return [
        AskedGrade(
            int(labels.rounds[p]),
            keys[p][0],
            keys[p][1],
            float(labels.probabilities[p]),
            None if np.isnan(labels.reference[p]) else float(labels.reference[p]),
        )
        for p in np.flatnonzero(labels.rounds > 0).tolist()
    ]


def restored_labels(
    records: Sequence[AskedGrade], keys: Sequence[ItemKey], decided: int, where: Path
) -> AskedLabels:
    """The asked grades of a race taken up, from its ``asked_grades.json`` (``where``, for
    messages): its ``decided`` rounds closed, a round it waited on kept with its draw."""
    position_of = {key: position for position, key in enumerate(keys)}
    labels = AskedLabels.empty(len(keys))
    for record in records:
        position = position_of.get((record.query_id, record.result_id))
        if position is None:
            raise MMJudgeError(
                f"{where}: asks for query {record.query_id!r}, result {record.result_id!r}, "
                "which this race's dataset lacks; race into a new folder (hydra.sweep.dir=…)"
            )
        labels.rounds[position] = record.round
        labels.probabilities[position] = record.probability
        labels.reference[position] = np.nan if record.grade is None else record.grade
        labels.drawn = max(labels.drawn, record.round)
    labels.drawn = max(labels.drawn, decided)
    for number in range(1, decided + 1):
        if labels.waiting(number).size:
            raise MMJudgeError(
                f"{where}: round {number} was decided without all of its grades; the file "
                "was changed by hand — race into a new folder (hydra.sweep.dir=…)"
            )
        labels.close(number)
    return labels


@dataclass
class AskedLabels:
    """The people's grades a race with ``race.labels=ask`` has asked for, round by round: which
    round asked for each item and with what probability, each item's grade and weight, and how
    many each decided round asked for."""

    reference: FloatArray
    """Each item's person's grade, in race order (``nan`` where not asked, or not given yet)."""
    weights: FloatArray
    """Each item's weight 1/π once its round has every grade it asked for; 0 otherwise."""
    rounds: IntArray
    """The round that asked for each item (0: never asked)."""
    probabilities: FloatArray
    """Each asked item's inclusion probability π (``nan`` where not asked)."""
    drawn: int = 0
    """The last round whose items were drawn."""
    per_round: list[int] = field(default_factory=list)
    """Grades each decided round asked for."""

    @classmethod
    def empty(cls, n_items: int) -> AskedLabels:
        """No item asked for yet, over a race of ``n_items`` items."""
        return cls(
            np.full(n_items, np.nan),
            np.zeros(n_items),
            np.zeros(n_items, dtype=np.int64),
            np.full(n_items, np.nan),
        )

    def waiting(self, round_number: int) -> IntArray:
        """Positions round ``round_number`` asked for whose grade has not come."""
        return np.flatnonzero((self.rounds == round_number) & np.isnan(self.reference))

    def close(self, round_number: int) -> None:
        """Round ``round_number`` has every grade it asked for: weigh its items 1/π and count
        them."""
        asked = self.rounds == round_number
        self.weights[asked] = 1.0 / self.probabilities[asked]
        self.per_round.append(int(asked.sum()))


def ask_round(
    labels: AskedLabels,
    oracle: LabelOracle,
    codes: IntArray,
    start: int,
    judging: Sequence[int],
    leader: int | None,
    seed: int,
    number: int,
    uniform_share: float = UNIFORM_SHARE,
) -> int:
    """Choose which of round ``number``'s new items (from ``start`` of the race's order;
    ``codes`` the cells' grade codes on them) a person grades — once: a round drawn before,
    by a race stopped while it waited for grades, keeps its draw — and get from ``oracle`` the
    grades not yet held. ``uniform_share`` is the π of an item every judging cell grades alike.
    Returns how many are still missing; with none, the round is closed (its items weighed
    1/π in ``labels``)."""
    if labels.drawn < number:
        pi = inclusion_probabilities(codes, judging, leader, uniform_share)
        draw = draw_labels(pi, seed, number)
        positions = start + np.flatnonzero(draw.asked)
        labels.rounds[positions] = number
        labels.probabilities[positions] = draw.probabilities[draw.asked]
        labels.drawn = number
    waiting = labels.waiting(number)
    if waiting.size:
        labels.reference[waiting] = oracle.grades(waiting.tolist())
    missing = int(labels.waiting(number).size)
    if missing == 0:
        labels.close(number)
    return missing


def round_uniform_share(
    labels: AskedLabels,
    grades: FloatArray,
    scale: Sequence[float],
    judging: Sequence[int],
    leader: int | None,
    prices: Sequence[float],
    label_usd: float,
) -> float:
    """The even share of the next round's draw (:func:`~mmjudge.studies.race_labels.
    priced_uniform_share`) from the items earlier rounds drew: ``grades`` ``(K, start)`` every
    cell's grades on them, ``prices`` each cell's dollars per judgment."""
    start = grades.shape[1]
    return priced_uniform_share(
        grade_codes(labels.reference[:start], scale),
        labels.weights[:start],
        grade_codes(grades, scale),
        judging,
        leader,
        float(sum(prices[c] for c in judging)),
        label_usd,
        len(scale),
    )


def human_labels(labels: AskedLabels, asks: bool, rounds: Sequence[RoundDecision]) -> HumanLabels:
    """The people's grades a race has needed so far, per round and in all: those it asked
    for, or (a uniform race) every item each round's prefix added."""
    if asks:
        per_round = tuple(labels.per_round)
        return HumanLabels("ask", per_round, sum(per_round))
    reached = [0, *(decision.prefix for decision in rounds)]
    per_round = tuple(b - a for a, b in itertools.pairwise(reached))
    return HumanLabels("uniform", per_round, sum(per_round))
