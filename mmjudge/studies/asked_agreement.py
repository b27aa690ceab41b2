"""Judges scored against the people's grades a race asked for (``race.labels=ask``), for every
command that reads a race's folder: the report's race section, ``mmjudge frontier``,
``mmjudge agree`` and ``mmjudge estimate``.

The grades a race asks for over-represent the items its judges disagree on, each drawn with a
known inclusion probability π (:mod:`mmjudge.studies.race_labels`). Counted alike they
understate every judge's κ; weighted 1/π they estimate the κ over all the items the decided
rounds reached. This module reads them once (:func:`asked_reference`: the decided rounds'
grades with their weights, and how they were drawn) and scores judges on them through the
race's own estimator: each judge's κ with the delete-one jackknife's interval
(:func:`~mmjudge.studies.race_labels.asked_kappas`) and a pair's κ difference with its
interval (:func:`~mmjudge.studies.race_labels.weighted_pair_stats`). There is no second κ
here: every number comes from the weighted confusion tables of ``race_labels``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mmjudge.metrics import scoring
from mmjudge.store import Key, SavedRun
from mmjudge.store.asked_grades import ASKED_GRADES_FILE, is_known, read_asked_grades
from mmjudge.store.race_file import read_race_file
from mmjudge.studies.race_labels import asked_kappas, weighted_own, weighted_pair_stats
from mmjudge.studies.race_pairs import FloatArray, grade_codes


@dataclass(frozen=True)
class AskedDraw:
    """How a race's people's grades were drawn: what every command that reads them says."""

    graded: int
    """Grades given in the race's decided rounds (the ones read)."""
    rounds: int
    """Decided rounds that asked for grades."""
    waiting: int
    """Grades asked for by a round the race still waits on (not read)."""

    def line(self) -> str:
        """The sentence saying how the grades were drawn and how they are read."""
        waiting = (
            f"; {self.waiting:,} more asked by the round the race waits on are not read"
            if self.waiting
            else ""
        )
        return (
            f"human grades asked adaptively by the race ({ASKED_GRADES_FILE}): "
            f"{self.graded:,} grades over {self.rounds} round{'s' * (self.rounds != 1)}, "
            "each weighted 1/π, its inclusion probability (the grades over-represent the "
            f"items the judges disagree on){waiting}"
        )


class AskedReference(NamedTuple):
    """The people's grades a race's decided rounds asked for, with their weights."""

    keys: list[Key]
    """The graded items, (query id, result id)."""
    grades: FloatArray
    """Each item's person's grade."""
    weights: FloatArray
    """Each item's weight, 1/π."""
    draw: AskedDraw
    """How they were drawn."""


def asked_reference(folder: Path) -> AskedReference | None:
    """The grades the race in ``folder`` asked for in the rounds it decided, with their
    weights; None when it asked for none (or ``folder`` holds no race that asks)."""
    race = read_race_file(folder)
    records = read_asked_grades(folder)
    if not records:
        return None
    decided = 0 if race is None else len(race.rounds)
    read = [r for r in records if r.round <= decided and is_known(r.grade)]
    waiting = sum(1 for r in records if r.round > decided)
    if not read:
        return None
    draw = AskedDraw(graded=len(read), rounds=len({r.round for r in read}), waiting=waiting)
    return AskedReference(
        [(r.query_id, r.result_id) for r in read],
        np.asarray([r.grade for r in read], dtype=np.float64),
        np.asarray([1.0 / r.probability for r in read], dtype=np.float64),
        draw,
    )


class AskedCodes(NamedTuple):
    """The asked grades and some judges' grades on the same items, as codes on one scale."""

    reference: np.ndarray
    """The people's grade codes ``(N,)``."""
    codes: np.ndarray
    """Each judge's grade codes ``(K, N)``, −1 where it gave none."""
    k: int
    """Grades on the scale."""


def asked_codes(reference: AskedReference, labels: Sequence[FloatArray]) -> AskedCodes:
    """The people's and the judges' grades (``labels``: one array per judge over
    ``reference.keys``, ``nan`` where it gave none) as codes on the grades seen among them,
    as the race codes them."""
    grades = np.asarray(labels, dtype=np.float64).reshape(len(labels), reference.grades.size)
    seen = np.concatenate([reference.grades, grades.ravel()])
    scale = [float(g) for g in np.unique(seen[~np.isnan(seen)])]
    return AskedCodes(
        grade_codes(reference.grades, scale), grade_codes(grades, scale), max(len(scale), 1)
    )


class AskedKappa(NamedTuple):
    """One judge's κ from the asked grades, weighted 1/π, with the jackknife's interval."""

    kappa: scoring.Interval
    """κ̂ and its interval (``nan`` bounds with fewer than 25 asked items it graded, or where
    the judge matched every asked grade: no interval rather than one of no width)."""
    n_items: int
    """Asked items it graded."""
    n_queries: int
    """Queries among them."""


def judge_kappas(
    reference: AskedReference, labels: Sequence[FloatArray], level: float = scoring.LEVEL
) -> list[AskedKappa]:
    """Each judge's κ over the asked items it graded (``labels`` as in :func:`asked_codes`),
    weighted 1/π, with the interval at ``level`` from the delete-one jackknife's error and
    Student's t with m − 1 degrees of freedom, m the asked items it graded
    (:func:`~mmjudge.studies.race_labels.asked_kappas`: on a few dozen asked items the
    design's linearised error, which the race decides on, gives too narrow an interval)."""
    coded = asked_codes(reference, labels)
    found = asked_kappas(coded.reference, coded.codes, reference.weights, coded.k, level)
    out = []
    for cell in range(coded.codes.shape[0]):
        graded = (coded.codes[cell] >= 0) & (coded.reference >= 0)
        queries = {reference.keys[i][0] for i in np.flatnonzero(graded)}
        out.append(
            AskedKappa(
                scoring.Interval(
                    float(found.kappa[cell]), float(found.low[cell]), float(found.high[cell])
                ),
                int(found.asked[cell]),
                len(queries),
            )
        )
    return out


def paired_difference(
    reference: AskedReference, a: FloatArray, b: FloatArray, level: float = scoring.LEVEL
) -> scoring.PairedComparison | None:
    """κ(a) − κ(b) on the asked items both judges graded, each κ weighted 1/π, with the
    normal interval and two-sided p-value from the design's linearised error of the
    difference (:func:`~mmjudge.studies.race_labels.weighted_pair_stats`); None without a
    shared item. The interval is ``nan`` with fewer than 25 shared asked items."""
    from scipy import stats

    coded = asked_codes(reference, [a, b])
    both = (coded.codes >= 0).all(axis=0) & (coded.reference >= 0)
    if not both.any():
        return None
    shared = np.where(both[None, :], coded.codes, -1)
    everything = np.full(2, shared.shape[1], dtype=np.int64)
    own = weighted_own(coded.reference, shared, everything, reference.weights, coded.k)
    pair = weighted_pair_stats(coded.reference, shared, everything, reference.weights, coded.k)
    difference, se = float(pair.difference[0]), float(pair.se[0])
    z = float(stats.norm.ppf(0.5 + level / 2))
    has_se = math.isfinite(se) and se > 0
    p_value = float(2 * stats.norm.sf(abs(difference) / se)) if has_se else math.nan
    return scoring.PairedComparison(
        kappa_a=float(own.kappa[0]),
        kappa_b=float(own.kappa[1]),
        difference=difference,
        low=difference - z * se if math.isfinite(se) else math.nan,
        high=difference + z * se if math.isfinite(se) else math.nan,
        p_value=p_value,
        n_items=int(both.sum()),
        n_queries=len({reference.keys[i][0] for i in np.flatnonzero(both)}),
    )


def run_labels(reference: AskedReference, run: SavedRun) -> FloatArray:
    """A saved run's grades on the asked items (``nan`` where it gave none or failed), over
    the items its own κ is on (:attr:`~mmjudge.store.SavedRun.scored_keys`)."""
    scored = set(run.scored_keys)
    out = np.full(len(reference.keys), np.nan)
    for i, key in enumerate(reference.keys):
        row = run.rows.get(key)
        if key in scored and row is not None and row.label is not None and not row.error:
            out[i] = float(row.label)
    return out


def has_dataset_grades(runs: Sequence[SavedRun]) -> bool:
    """Whether any of the runs' items carries a grade from the dataset itself."""
    return any(
        any(g is not None for g in (row.human_labels or {}).values())
        for run in runs
        for row in run.rows.values()
    )
