"""What a frontier's judges are scored against: the dataset's own grades (the annotators'
consensus, with the query bootstrap), or, on the folder of a race over a dataset without
grades, the grades the race asked for (``race.labels=ask``), each weighted 1/π, with the
design's intervals (:mod:`mmjudge.studies.asked_agreement`). Both answer the same two
questions, a judge's own κ and a paired κ difference, so the frontier is written once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mmjudge.errors import MMJudgeError
from mmjudge.metrics import scoring
from mmjudge.store import Key, SavedRun, common_scored_keys
from mmjudge.studies.asked_agreement import (
    AskedReference,
    asked_reference,
    has_dataset_grades,
    judge_kappas,
    paired_difference,
    run_labels,
)
from mmjudge.studies.members import human_consensus


def _queries(keys: Sequence[Key]) -> np.ndarray:
    return np.array([key[0] for key in keys], dtype=object)


def own_score(run: SavedRun, *, n_boot: int, seed: int, level: float) -> scoring.JudgeScore:
    """A run against the consensus on the items it graded (as in its summary and the
    report): a trained judge's without the items it learnt from."""
    keys = run.scored_keys
    return scoring.score_judge(
        _queries(keys),
        human_consensus([run], keys),
        run.labels(keys),
        run.grades,
        relevant_from=run.relevant_from,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )


def compare_runs(
    best: SavedRun, other: SavedRun, *, n_boot: int, seed: int, level: float
) -> scoring.PairedComparison | None:
    """``best`` against ``other`` on the items both graded and score (``None`` without any):
    never on an item a trained judge of the two learnt from."""
    keys = common_scored_keys([best, other])
    return scoring.compare_judges(
        _queries(keys),
        human_consensus([best, other], keys),
        best.labels(keys),
        other.labels(keys),
        best.grades,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )


class OwnKappa(NamedTuple):
    """A judge's κ against the people's grades on the items it graded."""

    kappa: scoring.Interval
    """κ with its interval."""
    alpha: float | None
    """Its Krippendorff's α (None where undefined or not computed)."""
    n_items: int
    """Items it graded that have a person's grade."""
    n_queries: int
    """Queries among those items."""


class DatasetGrades:
    """Judges scored against the dataset's own grades (the annotators' consensus), with the
    query bootstrap."""

    line = "human grades from the dataset (the annotators' consensus)"

    def __init__(self, *, seed: int, level: float) -> None:
        self.seed, self.level = seed, level

    def own(self, run: SavedRun, n_boot: int) -> OwnKappa:
        """``run``'s κ on the items it graded (:func:`own_score`)."""
        score = own_score(run, n_boot=n_boot, seed=self.seed, level=self.level)
        alpha = scoring.none_if_nan(score.estimate("alpha"))
        return OwnKappa(score.kappa, alpha, score.n_items, score.n_queries)

    def compare(
        self, best: SavedRun, other: SavedRun, n_boot: int
    ) -> scoring.PairedComparison | None:
        """κ(best) − κ(other) on the items both graded (:func:`compare_runs`)."""
        return compare_runs(best, other, n_boot=n_boot, seed=self.seed, level=self.level)


class AskedGrades:
    """Judges scored against the grades a race asked for (``race.labels=ask``), each weighted
    1/π, with the design's intervals (:mod:`mmjudge.studies.asked_agreement`); no bootstrap."""

    def __init__(self, reference: AskedReference, *, level: float) -> None:
        self.reference, self.level = reference, level
        self.line = reference.draw.line()

    def own(self, run: SavedRun, n_boot: int) -> OwnKappa:
        """``run``'s κ over the asked items it graded, weighted 1/π."""
        (found,) = judge_kappas(self.reference, [run_labels(self.reference, run)], self.level)
        return OwnKappa(found.kappa, None, found.n_items, found.n_queries)

    def compare(
        self, best: SavedRun, other: SavedRun, n_boot: int
    ) -> scoring.PairedComparison | None:
        """κ(best) − κ(other) on the asked items both graded, weighted 1/π."""
        return paired_difference(
            self.reference,
            run_labels(self.reference, best),
            run_labels(self.reference, other),
            self.level,
        )


Grades = DatasetGrades | AskedGrades


class ChosenGrades(NamedTuple):
    """What the judges are scored against, and the grades left unread."""

    grades: Grades
    """The grades read."""
    not_read: str | None
    """The folder's grades not read, and why (None when there are none)."""


def grades_for(
    root: Path | None, runs: Sequence[SavedRun], *, seed: int, level: float
) -> ChosenGrades:
    """What the judges of ``runs`` are scored against: the dataset's own grades where it has
    any (they cover the items the race asked about and the rest, so they are the better
    reference), else the grades the race in ``root`` asked for, weighted 1/π, where it asked
    for some."""
    dataset = DatasetGrades(seed=seed, level=level)
    asked = None if root is None else asked_reference(root)
    if asked is None:
        return ChosenGrades(dataset, None)
    if has_dataset_grades(runs):
        return ChosenGrades(dataset, not_read_line(asked))
    return ChosenGrades(AskedGrades(asked, level=level), None)


def not_read_line(asked: AskedReference) -> str:
    """Why a race's asked grades are not read where the dataset has grades of its own."""
    return (
        f"the {asked.draw.graded:,} grades the race asked for are not read: the dataset's own "
        "grades cover every item, a better reference than a weighted sample of them"
    )


def uniform_pilot(root: Path, runs: Sequence[SavedRun]) -> str | None:
    """For a command that plans from a pilot of uniformly drawn grades (``mmjudge plan``): the
    line saying a race's asked grades in ``root`` are not read where the dataset has grades of
    its own (None when there are none to leave out).

    Raises:
        MMJudgeError: the dataset has no grades and the race asked for some: a count of labels
            needed planned from grades that over-represent the judges' disagreements would be
            wrong, and no weighted plan is computed (the message says where to go instead)."""
    asked = asked_reference(root)
    if asked is None:
        return None
    if has_dataset_grades(runs):
        return not_read_line(asked)
    raise MMJudgeError(
        f"{root}: its people's grades were asked adaptively by its race ({asked.draw.graded:,} "
        f"over {asked.draw.rounds} rounds, each weighted 1/π), and plan counts the labels "
        "needed from a uniformly drawn pilot, which these are not; the race asks for what its "
        f"decision needs (mmjudge race, race.labels=ask), `mmjudge frontier {root}` and "
        f"`mmjudge agree {root}` give each judge's weighted κ with its interval"
    )
