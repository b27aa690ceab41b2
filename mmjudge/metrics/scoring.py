"""A judge's labels scored against human labels: one definition for every view.

``summary.json``, the report, ``mmjudge agree`` and ``mmjudge frontier``
all score through the functions here, so one judge on one set of items gets the same
numbers, intervals included, wherever they are shown. Which numbers those are is the measure
catalogue's to say (:mod:`mmjudge.metrics.catalogue`): nothing here names a measure.

Definitions
-----------

- **Items.** A judge is scored on the items that have both a judge grade and a human
  reference grade on the scale. The reference is the annotators' consensus (their lower
  median, :func:`mmjudge.metrics.consensus`) in a sweep, or the human file in ``agree``.
  Unparseable answers and failed calls are not items; callers count them beside the scores.
  A grade outside the scale leaves its item out too, and is counted (``n_off_scale``).
- **Measures**: every measure of the catalogue, reference against judge on those items, with
  the scale's grades as categories (κ unweighted, linear and quadratic, binarised κ, α,
  accuracy, MAE). A judge answering at random gets α ≈ 0 however well the humans agree
  with one another. ``agreement_summary`` also gives each measure's other comparisons: the
  pooled α (the judge and every annotator as raters) beside the humans-only α on the same
  items, so the judge's own effect is the difference between the two, and κ against each
  annotator and between annotators.
- **Intervals**: percentile intervals (95% by default) from ``N_BOOT`` resamples of whole
  queries with seed ``SEED``, for the measures that declare one. Only queries with at least
  one scored item take part, and queries are numbered in sorted order of their ids before
  resampling, so an interval depends only on the labels, never on the order of rows in a
  file.
- **A comparison** of two judges uses the items both graded (that have a reference): κ of
  each on those items, Δκ = κ(a) − κ(b), a paired query-bootstrap interval for Δκ (the same
  resamples for both judges) and a two-sided p-value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from mmjudge import metrics
from mmjudge.metrics import FloatArray, as_labels, catalogue
from mmjudge.metrics.catalogue import Comparison, Measure, ScoringScale
from mmjudge.metrics.kappa import kappa_metric as kappa_metric
from mmjudge.store.agreement import Agreement

N_BOOT = 1000
"""Bootstrap resamples behind every interval unless a caller asks for another number."""
SEED = 0
"""Seed of every bootstrap, so the same labels always give the same interval."""
LEVEL = 0.95
"""Coverage of every interval."""


class Interval(NamedTuple):
    """An estimate with its bootstrap interval (``nan`` bounds where none was computed)."""

    estimate: float
    low: float
    high: float

    @property
    def known(self) -> bool:
        return math.isfinite(self.estimate)

    def overlaps(self, other: Interval) -> bool:
        """True unless both intervals are known and disjoint."""
        bounds = (self.low, self.high, other.low, other.high)
        if not all(math.isfinite(x) for x in bounds):
            return True
        return not (self.low > other.high or other.low > self.high)

    @property
    def above_chance(self) -> bool:
        """The whole interval lies above 0, the κ of a judge answering at random; False
        without an interval (nothing then shows the judge beats chance)."""
        return math.isfinite(self.low) and math.isfinite(self.high) and self.low > 0

    def as_dict(self) -> dict[str, float | None]:
        """JSON-ready, undefined values as ``None``."""
        return {key: none_if_nan(value) for key, value in self._asdict().items()}


NO_INTERVAL = Interval(math.nan, math.nan, math.nan)


def none_if_nan(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


# --------------------------------------------------------------------------- one judge


@dataclass(frozen=True)
class JudgeScore:
    """One judge (or annotator) against a reference, on the items both graded.

    Each measure of the catalogue reads by its name: ``score["kappa_linear"]`` is its
    :class:`Interval` (``nan`` bounds for a measure without one), and, as before the catalogue,
    ``score.kappa_linear`` is that interval for a measure with intervals and ``score.alpha``
    the bare value for one without."""

    n_items: int
    """Items with a grade on the scale from both: the items every number here is on."""
    n_queries: int
    """Queries among those items (what the bootstrap resamples)."""
    n_off_scale: int
    """Items left out because a grade lies outside the scale."""
    values: Mapping[str, Interval] = field(default_factory=dict, hash=False)
    """Every measure of the catalogue by name, with its interval where it has one."""

    @property
    def kappa(self) -> Interval:
        """Unweighted Cohen's κ with its interval: the headline measure."""
        return self[catalogue.HEADLINE]

    def __getitem__(self, name: str) -> Interval:
        """The value of measure ``name`` (``nan`` when this score lacks it)."""
        return self.values.get(name, NO_INTERVAL)

    def __getattr__(self, name: str) -> Interval | float:
        # only for names that are not attributes: a measure's value by its name
        values = self.__dict__.get("values")
        if name.startswith("_") or values is None or name not in values:
            raise AttributeError(f"{type(self).__name__!s} has no attribute or measure {name!r}")
        found: Interval = values[name]
        try:
            with_interval = catalogue.measure(name).interval
        except KeyError:  # a measure taken out of the catalogue since
            return found
        return found if with_interval else found.estimate

    def estimate(self, name: str) -> float:
        """The value of measure ``name`` alone."""
        return self[name].estimate

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: intervals as objects, undefined values as ``None``."""
        out: dict[str, Any] = {
            "n_items": self.n_items,
            "n_queries": self.n_queries,
            "n_off_scale": self.n_off_scale,
        }
        for m in catalogue.measures(Comparison.CONSENSUS):
            value = self[m.name]
            out[m.name] = value.as_dict() if m.interval else none_if_nan(value.estimate)
        return out


def _scale(grades: Sequence[float] | None, *observed: FloatArray) -> FloatArray:
    if grades is not None:
        return np.asarray([float(g) for g in grades])
    values = np.concatenate([x[~np.isnan(x)] for x in observed]) if observed else np.empty(0)
    return np.unique(values)


def relevance_threshold(scale: FloatArray, relevant_from: float | None) -> float:
    """``relevant_from`` as given, else the lowest grade of the scale's upper half."""
    if relevant_from is not None:
        return float(relevant_from)
    return metrics.default_relevant_from(scale.tolist()) if scale.size else math.nan


def scored_items(scale: FloatArray, *arrays: FloatArray) -> tuple[np.ndarray, int]:
    """Mask of the items where every array has a grade on ``scale``, and how many items
    were left out only because some grade lay off the scale."""
    present = np.ones(arrays[0].shape, dtype=bool)
    on_scale = np.ones(arrays[0].shape, dtype=bool)
    for x in arrays:
        present &= ~np.isnan(x)
        on_scale &= np.isin(x, scale)
    return present & on_scale, int((present & ~on_scale).sum())


def _measured(
    scale: ScoringScale,
    queries: np.ndarray,
    x: FloatArray,
    y: FloatArray,
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, Interval]:
    """Every measure of the catalogue, reference ``x`` against judge ``y`` (the scored
    items); the intervals of those that have one from one set of resamples (``n_boot`` 0:
    none)."""
    every = catalogue.measures(Comparison.CONSENSUS)
    boot = [m for m in every if m.interval] if n_boot > 0 and x.size else []
    found = (
        metrics.bootstrap_ci_many(
            [m.statistic(scale) for m in boot], queries, x, y, n_boot=n_boot, seed=seed, level=level
        )
        if boot
        else []
    )
    out = {m.name: Interval(r.estimate, r.low, r.high) for m, r in zip(boot, found, strict=True)}
    for m in every:
        if m.name not in out:
            value = float(m.statistic(scale)(x, y)) if x.size else math.nan
            out[m.name] = Interval(value, math.nan, math.nan)
    return {m.name: out[m.name] for m in every}


def score_judge(
    query_ids: Any,
    reference: Any,
    judge: Any,
    grades: Sequence[float] | None = None,
    *,
    relevant_from: float | None = None,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    level: float = LEVEL,
) -> JudgeScore:
    """Score ``judge`` against ``reference`` (aligned arrays, ``nan`` = no grade) on every
    measure of the catalogue.

    ``grades`` is the scale (default: the sorted grades seen); ``relevant_from`` the lowest
    relevant grade for the binarised κ (default: the lowest grade of the scale's upper
    half). ``n_boot=0`` computes no intervals.
    """
    ref, lab = as_labels(reference), as_labels(judge)
    queries = np.asarray(query_ids)
    if not ref.size == lab.size == queries.size:
        raise ValueError("query ids, reference and judge labels differ in length")
    scale = _scale(grades, ref, lab)
    keep, n_off_scale = scored_items(scale, ref, lab)
    x, y, q = ref[keep], lab[keep], queries[keep]
    on = ScoringScale(tuple(scale.tolist()), relevance_threshold(scale, relevant_from))
    return JudgeScore(
        n_items=int(x.size),
        n_queries=len(set(q.tolist())),
        n_off_scale=n_off_scale,
        values=_measured(on, q, x, y, n_boot, seed, level),
    )


# --------------------------------------------------------------------------- two judges


class PairedComparison(NamedTuple):
    """κ(a) − κ(b) against the reference on the items both judges graded."""

    kappa_a: float
    """κ of judge a on the shared items."""
    kappa_b: float
    """κ of judge b on the shared items."""
    difference: float
    """kappa_a − kappa_b."""
    low: float
    """Lower end of the paired interval for the difference."""
    high: float
    """Upper end of the paired interval for the difference."""
    p_value: float
    """Two-sided p-value of the paired bootstrap."""
    n_items: int
    """Shared items: both judges and the reference have a grade on the scale."""
    n_queries: int
    """Queries among the shared items (what the bootstrap resamples)."""

    @property
    def distinguishable(self) -> bool:
        """True when the interval for the difference excludes 0."""
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return False
        return self.low > 0 or self.high < 0


def compare_judges(
    query_ids: Any,
    reference: Any,
    judge_a: Any,
    judge_b: Any,
    grades: Sequence[float],
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    level: float = LEVEL,
) -> PairedComparison | None:
    """Is judge a better than judge b on the items both graded? ``None`` without any."""
    ref, a, b = as_labels(reference), as_labels(judge_a), as_labels(judge_b)
    queries = np.asarray(query_ids)
    if not ref.size == a.size == b.size == queries.size:
        raise ValueError("query ids, reference and judge labels differ in length")
    scale = _scale(grades)
    keep, _ = scored_items(scale, ref, a, b)
    if not keep.any():
        return None
    q = queries[keep]
    result = metrics.paired_bootstrap(
        kappa_metric(scale),
        q,
        ref[keep],
        a[keep],
        b[keep],
        n_boot=n_boot,
        seed=seed,
        level=level,
    )
    return PairedComparison(
        kappa_a=result.estimate_a,
        kappa_b=result.estimate_b,
        difference=result.difference,
        low=result.low,
        high=result.high,
        p_value=result.p_value,
        n_items=int(keep.sum()),
        n_queries=result.n_queries,
    )


# --------------------------------------------------------------------------- summary.json


def agreement_summary(
    judge: Any,
    human: Mapping[str, Any],
    *,
    grades: Sequence[float] | None = None,
    query_ids: Any = None,
    relevant_from: float | None = None,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> Agreement:
    """Everything about one judge against one or more annotators: the ``metrics`` block of
    ``summary.json`` (:class:`mmjudge.store.Agreement`, which writes it).

    The reference is the annotators' consensus. A missing judge grade is an unparseable
    answer, counted in ``n_unparseable`` / ``unparseable_rate``; every agreement number is
    on the ``n_scored`` items of :func:`score_judge` (in ``n_queries`` queries). Undefined
    values are ``None``.

    Its entries: n, n_scored, n_queries, n_unparseable, n_off_scale, unparseable_rate, grades,
    relevant_from; every measure of the catalogue by name, then its pooled and humans-only
    figures (``alpha_pooled``, ``alpha_humans``); intervals ({measure: {estimate, low,
    high}}), bootstrap (n_boot, seed, level), pairwise (needs ``query_ids``),
    confusion_matrix (rows: consensus grade), label_distribution; then each measure against
    each annotator and between annotators (``kappa_by_annotator``, ``human_human_kappa``).
    """
    judge_labels, humans = _labelled(judge, human)
    n = int(judge_labels.size)
    reference = metrics.consensus(humans)
    scale = _scale(grades, judge_labels, *humans.values())
    queries = np.asarray(query_ids) if query_ids is not None else np.zeros(n, dtype=np.intp)
    score = score_judge(
        queries,
        reference,
        judge_labels,
        scale.tolist(),
        relevant_from=relevant_from,
        n_boot=n_boot if query_ids is not None else 0,
        seed=seed,
    )
    scored, _ = scored_items(scale, reference, judge_labels)
    n_unparseable = int(np.isnan(judge_labels).sum())
    threshold = relevance_threshold(scale, relevant_from)
    on = ScoringScale(tuple(scale.tolist()), threshold)
    block = {
        "n": n,
        "n_scored": score.n_items,
        "n_queries": score.n_queries,
        "n_unparseable": n_unparseable,
        "n_off_scale": score.n_off_scale,
        "unparseable_rate": none_if_nan(n_unparseable / n if n else math.nan),
        "grades": [_plain(g) for g in scale.tolist()],
        "relevant_from": none_if_nan(threshold),
        **{m.name: none_if_nan(score.estimate(m.name)) for m in _consensus()},
        **_many_raters(on, judge_labels, humans, scored),
        **_intervals(score, n_boot if query_ids is not None else 0, seed),
        "pairwise": _pairwise(query_ids, reference, judge_labels),
        **_tables(judge_labels, reference, humans, scale),
        **_by_rater(on, judge_labels, humans),
    }
    return Agreement.from_json(block)


def _labelled(judge: Any, human: Mapping[str, Any]) -> tuple[FloatArray, dict[str, FloatArray]]:
    """The judge's and each annotator's labels, checked to cover the same items."""
    judge_labels = as_labels(judge)
    humans = {name: as_labels(values) for name, values in human.items()}
    if not humans:
        raise ValueError("agreement_summary needs at least one annotator")
    for name, values in humans.items():
        if values.size != judge_labels.size:
            raise ValueError(
                f"annotator {name!r} has {values.size} labels for {judge_labels.size} items"
            )
    return judge_labels, humans


def _intervals(score: JudgeScore, n_boot: int, seed: int) -> dict[str, Any]:
    """The intervals and how they were drawn (``n_boot`` 0: no intervals)."""
    return {
        "intervals": {m.name: score[m.name].as_dict() for m in _consensus() if m.interval},
        "bootstrap": {"n_boot": n_boot, "seed": seed, "level": LEVEL, "resampled": "queries"},
    }


def _consensus() -> tuple[Measure, ...]:
    """The measures of the judge against the consensus: the block's top-level figures."""
    return catalogue.measures(Comparison.CONSENSUS)


def _plain(value: float) -> float:
    return int(value) if float(value).is_integer() else float(value)


def _many_raters(
    scale: ScoringScale, judge: FloatArray, humans: Mapping[str, FloatArray], scored: np.ndarray
) -> dict[str, float | None]:
    """Each measure over the judge and every annotator as raters (pooled) and over the
    annotators alone, on the scored items (undefined with one annotator)."""
    annotators = [humans[name][scored] for name in sorted(humans)]
    out: dict[str, float | None] = {}
    for comparison in (Comparison.POOLED, Comparison.HUMANS):
        for m in catalogue.measures(comparison):
            assert m.raters is not None  # a Measure refuses these comparisons without it
            statistic = m.raters(scale)
            if comparison is Comparison.POOLED:
                value = statistic(np.vstack([judge[scored], *annotators]))
            else:
                value = statistic(np.vstack(annotators)) if len(annotators) > 1 else math.nan
            out[comparison.key(m.name)] = none_if_nan(value)
    return out


def _by_rater(
    scale: ScoringScale, judge: FloatArray, humans: Mapping[str, FloatArray]
) -> dict[str, dict[str, float | None]]:
    """Each measure of the judge against each annotator, and between each pair of them (the
    ceiling), on the items both graded."""
    names = sorted(humans)
    out: dict[str, dict[str, float | None]] = {}
    for m in catalogue.measures():
        statistic = m.statistic(scale)
        if Comparison.EACH_ASSESSOR in m.compares:
            out[Comparison.EACH_ASSESSOR.key(m.name)] = {
                n: none_if_nan(statistic(humans[n], judge)) for n in names
            }
        if Comparison.HUMAN_HUMAN in m.compares:
            out[Comparison.HUMAN_HUMAN.key(m.name)] = {
                f"{x} vs {y}": none_if_nan(statistic(humans[x], humans[y]))
                for x, y in itertools.combinations(names, 2)
            }
    return out


def _pairwise(query_ids: Any, reference: FloatArray, judge: FloatArray) -> dict[str, Any] | None:
    if query_ids is None:
        return None
    result = metrics.pairwise_preference_agreement(query_ids, reference, judge)
    return {**result._asdict(), "agreement": none_if_nan(result.agreement)}


def _tables(
    judge: FloatArray, reference: FloatArray, humans: Mapping[str, FloatArray], scale: FloatArray
) -> dict[str, Any]:
    names = sorted(humans)
    return {
        "confusion_matrix": metrics.confusion_matrix(reference, judge, scale).tolist(),
        "label_distribution": {
            "judge": metrics.label_distribution(judge, scale),
            "consensus": metrics.label_distribution(reference, scale),
            **{f"human:{n}": metrics.label_distribution(humans[n], scale) for n in names},
        },
    }
