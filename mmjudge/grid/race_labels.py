"""People's grades asked round by round in a race (``race.labels=ask``): where the race gets
them (an oracle), what it holds of them, and one round's asking — the design itself, pure, is
:mod:`mmjudge.studies.race_labels`; the schedule that calls this is
:class:`mmjudge.grid.race.RaceRounds`."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from mmjudge.store.race_file import HumanLabels, RoundDecision
from mmjudge.studies.race_labels import draw_labels, inclusion_probabilities
from mmjudge.studies.race_pairs import FloatArray, IntArray


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


@dataclass
class AskedLabels:
    """The people's grades a race with ``race.labels=ask`` has asked for, round by round: each
    item's grade and weight, and how many each round asked for."""

    reference: FloatArray
    """Each item's person's grade, in race order (``nan`` where not asked)."""
    weights: FloatArray
    """Each item's weight 1/π where asked, 0 where not."""
    per_round: list[int] = field(default_factory=list)
    """Grades each round asked for."""


def ask_round(
    labels: AskedLabels,
    oracle: LabelOracle,
    codes: IntArray,
    start: int,
    judging: Sequence[int],
    leader: int | None,
    seed: int,
    number: int,
) -> None:
    """Choose which of round ``number``'s new items (from ``start`` of the race's order;
    ``codes`` the cells' grade codes on them) a person grades, get their grades from
    ``oracle`` and keep them, with their weights, in ``labels``."""
    draw = draw_labels(inclusion_probabilities(codes, judging, leader), seed, number)
    positions = start + np.flatnonzero(draw.asked)
    labels.reference[positions] = oracle.grades(positions.tolist())
    labels.weights[positions] = 1.0 / draw.probabilities[draw.asked]
    labels.per_round.append(int(positions.size))


def human_labels(labels: AskedLabels, asks: bool, rounds: Sequence[RoundDecision]) -> HumanLabels:
    """The people's grades a race has needed so far, per round and in all: those it asked
    for, or (a uniform race) every item each round's prefix added."""
    if asks:
        per_round = tuple(labels.per_round)
        return HumanLabels("ask", per_round, sum(per_round))
    reached = [0, *(decision.prefix for decision in rounds)]
    per_round = tuple(b - a for a, b in itertools.pairwise(reached))
    return HumanLabels("uniform", per_round, sum(per_round))
