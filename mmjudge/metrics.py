"""Agreement between a judge's labels and human labels: pure functions of label arrays.

Conventions shared by every function here:

- A label array is one-dimensional and numeric (whole-number grades). ``None``, ``NaN`` and
  ``pd.NA`` mean "no label" (an unparseable judge answer, an item an annotator skipped).
- Two-rater metrics (κ, accuracy, MAE, confusion matrix) use only the items where both
  labels are present; the caller reports how many were dropped (``scoring.agreement_summary``
  does, as ``n_unparseable`` and ``unparseable_rate``).
- Undefined values (no items, or κ when chance agreement is already perfect) are ``nan``.
- Everything is vectorised with numpy, so a million rows cost a fraction of a second.

Bootstrap intervals resample *queries*, not rows: results of one query share the query's
difficulty, so treating them as independent would make intervals too narrow.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt
import pandas as pd

FloatArray = npt.NDArray[np.float64]
Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval", "ratio"]
#: A list of categories (grades), in the order κ's weights and matrices should use.
LabelSet = Sequence[float] | npt.NDArray[Any]

__all__ = [
    "BootstrapResult",
    "PairedBootstrapResult",
    "PairwiseAgreement",
    "RankingAgreement",
    "accuracy",
    "binarise",
    "binary_kappa",
    "bootstrap_ci",
    "bootstrap_ci_many",
    "cohen_kappa",
    "confusion_matrix",
    "consensus",
    "default_relevant_from",
    "kendall_tau",
    "krippendorff_alpha",
    "label_distribution",
    "mean_absolute_error",
    "paired_bootstrap",
    "pairwise_preference_agreement",
    "rank_biased_overlap",
    "spearman_rho",
    "system_ranking_agreement",
    "system_ranking_on_shared_items",
]


# --------------------------------------------------------------------------- inputs


def as_labels(values: Any) -> FloatArray:
    """A 1-D float array with ``nan`` for every missing label (None, NaN, pd.NA)."""
    if hasattr(values, "to_numpy"):
        array = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        try:
            array = np.asarray(values, dtype=float)
        except TypeError:  # pd.NA inside a plain list
            array = pd.Series(list(values), dtype="Float64").to_numpy(dtype=float, na_value=np.nan)
    if array.ndim != 1:
        raise ValueError(f"label arrays must be one-dimensional, got shape {array.shape}")
    return array


def _pair(a: Any, b: Any) -> tuple[FloatArray, FloatArray]:
    """Both arrays, restricted to the items where both labels are present."""
    x, y = as_labels(a), as_labels(b)
    if x.shape != y.shape:
        raise ValueError(f"label arrays differ in length: {x.size} and {y.size}")
    keep = ~(np.isnan(x) | np.isnan(y))
    return x[keep], y[keep]


def _label_set(labels: Any, *observed: FloatArray) -> FloatArray:
    """``labels`` as given (order kept), or the sorted values seen in ``observed``."""
    if labels is not None:
        return np.asarray(labels, dtype=float).ravel()
    if not observed:
        return np.empty(0)
    return np.unique(np.concatenate(observed))


def _codes(values: FloatArray, labels: FloatArray) -> npt.NDArray[np.intp]:
    """Position of each value in ``labels`` (which need not be sorted), -1 when absent."""
    if labels.size == 0:
        return np.full(values.shape, -1, dtype=np.intp)
    order = np.argsort(labels, kind="stable")
    ordered = labels[order]
    pos = np.clip(np.searchsorted(ordered, values), 0, ordered.size - 1)
    return np.where(ordered[pos] == values, order[pos], -1)


def _query_codes(query_ids: Any, n: int) -> tuple[npt.NDArray[np.intp], int]:
    """Dense query codes 0..Q-1 and Q. Codes follow the sorted order of the ids, so a
    bootstrap over the same labels gives the same interval whatever the order of rows."""
    ids = np.asarray(query_ids)
    if ids.shape != (n,):
        raise ValueError(f"query_ids has {ids.size} entries for {n} labels")
    try:
        codes, uniques = pd.factorize(ids, sort=True)
    except TypeError:  # ids that cannot be ordered (mixed types): first-seen order
        codes, uniques = pd.factorize(ids)
    return codes.astype(np.intp), len(uniques)


def _tables(
    a: FloatArray,
    b: FloatArray,
    labels: FloatArray,
    groups: npt.NDArray[np.intp] | None = None,
    n_groups: int = 1,
) -> FloatArray:
    """Contingency tables (rows: ``a``'s label, columns: ``b``'s), one per group.

    Items with a missing label, or a label outside ``labels``, are left out.
    Shape ``(n_groups, k, k)``.
    """
    k = labels.size
    keep = ~(np.isnan(a) | np.isnan(b))
    ia, ib = _codes(a[keep], labels), _codes(b[keep], labels)
    ok = (ia >= 0) & (ib >= 0)
    cell = ia[ok] * k + ib[ok]
    if groups is not None:
        cell = groups[keep][ok] * (k * k) + cell
    counts = np.bincount(cell, minlength=n_groups * k * k)
    return counts.reshape(n_groups, k, k).astype(np.float64)


# --------------------------------------------------------------------------- κ family


def _weight_matrix(k: int, weights: Weights) -> FloatArray:
    index = np.arange(k, dtype=np.float64)
    distance = np.abs(index[:, None] - index[None, :])
    if weights is None:
        return (distance > 0).astype(np.float64)
    if weights == "linear":
        return distance
    if weights == "quadratic":
        return distance**2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def _kappa_from_tables(tables: FloatArray, weights: Weights, undefined: float) -> FloatArray:
    """κ for a stack of contingency tables ``(..., k, k)``."""
    k = tables.shape[-1]
    w = _weight_matrix(k, weights)
    n = tables.sum(axis=(-2, -1))
    rows, cols = tables.sum(axis=-1), tables.sum(axis=-2)
    observed = (tables * w).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = np.einsum("...i,ij,...j->...", rows, w, cols) / n
        kappa = 1.0 - observed / expected
    return np.where((n > 0) & (expected > 0), kappa, undefined)


def cohen_kappa(
    a: Any,
    b: Any,
    labels: LabelSet | None = None,
    weights: Weights = None,
    *,
    undefined: float = math.nan,
) -> float:
    """Cohen's κ between two raters, unweighted or with linear/quadratic weights.

    Items where either label is missing are dropped. ``labels`` fixes the categories and
    their order (items with a label outside it are dropped); by default it is the sorted
    union of the labels seen. As in scikit-learn, weights use the *position* of a label in
    that list, so pass the full grade scale when some grade might be unused.

    κ is undefined when there is nothing to compare or when chance agreement is already
    perfect (both raters gave every item one and the same label, so observed agreement is
    perfect too); ``undefined`` (default ``nan``, as scikit-learn's default) is returned then.
    Matches ``sklearn.metrics.cohen_kappa_score`` wherever that is defined.
    """
    x, y = _pair(a, b)
    label_set = _label_set(labels, x, y)
    if label_set.size == 0:
        return undefined
    return float(_kappa_from_tables(_tables(x, y, label_set)[0], weights, undefined))


def default_relevant_from(grades: Sequence[float]) -> float:
    """The lowest grade of the upper half of a scale: 2 on 0–3, 1 on 0–2, 3 on 1–4."""
    ordered = sorted(grades)
    if not ordered:
        raise ValueError("cannot pick a relevance threshold on an empty scale")
    return float(ordered[len(ordered) // 2])


def binarise(labels: Any, relevant_from: float) -> FloatArray:
    """1.0 where the grade is at least ``relevant_from``, 0.0 below it, ``nan`` kept."""
    x = as_labels(labels)
    out = (x >= relevant_from).astype(np.float64)
    out[np.isnan(x)] = np.nan
    return out


def binary_kappa(a: Any, b: Any, relevant_from: float, *, undefined: float = math.nan) -> float:
    """Unweighted κ after binarising both raters' grades at ``relevant_from``."""
    return cohen_kappa(
        binarise(a, relevant_from), binarise(b, relevant_from), [0, 1], undefined=undefined
    )


def accuracy(a: Any, b: Any) -> float:
    """Fraction of items (both labels present) where the two labels are equal."""
    x, y = _pair(a, b)
    return float(np.mean(x == y)) if x.size else math.nan


def mean_absolute_error(a: Any, b: Any) -> float:
    """Mean absolute grade difference over items where both labels are present."""
    x, y = _pair(a, b)
    return float(np.mean(np.abs(x - y))) if x.size else math.nan


def confusion_matrix(a: Any, b: Any, labels: LabelSet | None = None) -> npt.NDArray[np.int64]:
    """Counts with rows for ``a``'s label and columns for ``b``'s, in ``labels`` order.

    Same layout and defaults as ``sklearn.metrics.confusion_matrix(a, b, labels=labels)``;
    items with a missing label or a label outside ``labels`` are not counted.
    """
    x, y = _pair(a, b)
    label_set = _label_set(labels, x, y)
    return _tables(x, y, label_set)[0].astype(np.int64)


def label_distribution(labels: Any, grades: LabelSet | None = None) -> dict[float, int]:
    """How many items got each grade (missing labels not counted), in grade order.

    Every grade in ``grades`` is listed, with 0 when unused; grades seen outside the scale
    are listed too. Whole-number grades are returned as ``int`` keys.
    """
    x = as_labels(labels)
    x = x[~np.isnan(x)]
    values, counts = np.unique(x, return_counts=True)
    found = dict(zip(values.tolist(), counts.tolist(), strict=True))
    keys = sorted(set(found) | {float(g) for g in ([] if grades is None else grades)})
    return {_plain(key): int(found.get(key, 0)) for key in keys}


def _plain(value: float) -> float:
    return int(value) if float(value).is_integer() else float(value)


# --------------------------------------------------------------------------- Krippendorff α


def krippendorff_alpha(reliability: Any, level: Level = "ordinal") -> float:
    """Krippendorff's α for a raters × items matrix (``nan``/``None`` = not rated).

    Built from the coincidence matrix: every item rated by m ≥ 2 raters adds each ordered
    pair of its ratings (from different raters) with weight 1/(m − 1). α = 1 − D_o/D_e with
    the difference function of ``level`` (nominal, ordinal, interval, ratio); the ordinal
    difference uses the marginal totals of the coincidence matrix, as Krippendorff defines it.
    Returns ``nan`` when fewer than two distinct values or no item with two ratings exist
    (the ``krippendorff`` package raises in those cases).
    """
    data = _matrix(reliability)
    if data.ndim != 2:
        raise ValueError(f"reliability data must be raters × items, got shape {data.shape}")
    present = ~np.isnan(data)
    values = np.unique(data[present])
    v = values.size
    if v < 2:
        return math.nan
    items = np.broadcast_to(np.arange(data.shape[1]), data.shape)[present]
    codes = np.searchsorted(values, data[present])
    counts = np.bincount(items * v + codes, minlength=data.shape[1] * v).reshape(-1, v)
    m = counts.sum(axis=1)
    pairable = m >= 2
    if not pairable.any():
        return math.nan
    counts = counts[pairable].astype(np.float64)
    scaled = counts / (m[pairable] - 1.0)[:, None]
    coincidence = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    n_c = coincidence.sum(axis=0)
    n = n_c.sum()
    delta = _alpha_distance(values, n_c, level)
    expected = (np.outer(n_c, n_c) * delta).sum()
    if expected == 0:
        return math.nan
    return float(1.0 - (n - 1.0) * (coincidence * delta).sum() / expected)


def _matrix(reliability: Any) -> FloatArray:
    """A raters × items float matrix with ``nan`` for every missing rating."""
    if hasattr(reliability, "to_numpy"):
        return np.asarray(reliability.to_numpy(dtype=float, na_value=np.nan), dtype=float)
    try:
        return np.asarray(reliability, dtype=float)
    except TypeError:  # pd.NA inside nested lists
        return np.vstack([as_labels(row) for row in reliability])


def _alpha_distance(values: FloatArray, n_c: FloatArray, level: Level) -> FloatArray:
    if level == "nominal":
        return 1.0 - np.eye(values.size)
    if level == "ordinal":
        cum = np.cumsum(n_c)
        lo = np.minimum.outer(np.arange(values.size), np.arange(values.size))
        hi = np.maximum.outer(np.arange(values.size), np.arange(values.size))
        between = cum[hi] - cum[lo] + n_c[lo]
        return (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if level == "ratio":
        total = values[:, None] + values[None, :]
        diff = values[:, None] - values[None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(total != 0, (diff / total) ** 2, 0.0)
    raise ValueError(f"level must be nominal, ordinal, interval or ratio, got {level!r}")


# --------------------------------------------------------------------------- pairwise preference


class PairwiseAgreement(NamedTuple):
    """How often the judge orders two results of one query the way the humans do."""

    agreement: float
    """(concordant + judge_ties / 2) / n_pairs; ``nan`` without any pair."""
    n_pairs: int
    """Pairs of results of the same query with different human grades."""
    concordant: int
    """Pairs the judge orders the same way as the humans."""
    discordant: int
    """Pairs the judge orders the opposite way."""
    judge_ties: int
    """Pairs the judge grades equally (counted as half an agreement)."""


def _pair_counts(
    groups: npt.NDArray[np.intp], n_groups: int, human: FloatArray, judge: FloatArray
) -> FloatArray:
    """Per query: (concordant, judge ties, discordant) over human-ordered pairs.

    Works on per-query contingency tables, so the cost is linear in the rows plus
    queries × grades², with no pair ever listed. Queries are processed in blocks to bound
    memory.
    """
    keep = ~(np.isnan(human) | np.isnan(judge))
    g, h, j = groups[keep], human[keep], judge[keep]
    h_values, h_codes = np.unique(h, return_inverse=True)
    j_values, j_codes = np.unique(j, return_inverse=True)
    kh, kj = max(h_values.size, 1), max(j_values.size, 1)
    out = np.zeros((n_groups, 3))
    block = max(1, 4_000_000 // (kh * kj))
    order = np.argsort(g, kind="stable")
    g, h_codes, j_codes = g[order], h_codes[order], j_codes[order]
    for start in range(0, n_groups, block):
        stop = min(n_groups, start + block)
        lo, hi = np.searchsorted(g, [start, stop])
        cells = (g[lo:hi] - start) * (kh * kj) + h_codes[lo:hi] * kj + j_codes[lo:hi]
        t = np.bincount(cells, minlength=(stop - start) * kh * kj)
        t = t.reshape(stop - start, kh, kj).astype(np.float64)
        below = np.cumsum(t, axis=1) - t  # same judge grade, lower human grade
        below_left = np.cumsum(below, axis=2) - below  # lower human and lower judge grade
        ties = (t * below).sum(axis=(1, 2))
        concordant = (t * below_left).sum(axis=(1, 2))
        rows = t.sum(axis=2)
        pairs = (rows * (np.cumsum(rows, axis=1) - rows)).sum(axis=1)
        out[start:stop] = np.column_stack([concordant, ties, pairs - concordant - ties])
    return out


def _pairwise_from_counts(counts: FloatArray) -> FloatArray:
    concordant, ties, discordant = counts[..., 0], counts[..., 1], counts[..., 2]
    total = concordant + ties + discordant
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (concordant + 0.5 * ties) / total, math.nan)


def pairwise_preference_agreement(query_ids: Any, human: Any, judge: Any) -> PairwiseAgreement:
    """Agreement on preferences: for every pair of results of the same query that the
    humans grade differently, does the judge prefer the same one?

    A pair the judge grades equally counts as half an agreement (and is reported
    separately as ``judge_ties``). Items missing either label take part in no pair.
    """
    h, j = as_labels(human), as_labels(judge)
    if h.shape != j.shape:
        raise ValueError(f"label arrays differ in length: {h.size} and {j.size}")
    groups, n_groups = _query_codes(query_ids, h.size)
    totals = _pair_counts(groups, n_groups, h, j).sum(axis=0)
    concordant, ties, discordant = (int(x) for x in totals.tolist())
    return PairwiseAgreement(
        agreement=float(_pairwise_from_counts(totals)),
        n_pairs=concordant + ties + discordant,
        concordant=concordant,
        discordant=discordant,
        judge_ties=ties,
    )


# --------------------------------------------------------------------------- consensus


def consensus(labels_by_annotator: Mapping[str, Any]) -> FloatArray:
    """One grade per item from several annotators: the median of the grades given.

    With an even number of grades the two middle ones may differ; the lower one is taken
    (the more conservative grade), so the consensus is always a grade somebody gave and
    never a half grade. Missing grades are ignored; an item nobody graded gets ``nan``.
    Deterministic and independent of annotator order.
    """
    if not labels_by_annotator:
        raise ValueError("consensus needs at least one annotator")
    arrays = [as_labels(v) for v in labels_by_annotator.values()]
    sizes = {a.size for a in arrays}
    if len(sizes) != 1:
        raise ValueError(f"annotators' label arrays differ in length: {sorted(sizes)}")
    stacked = np.sort(np.vstack(arrays), axis=0)  # nan sorts last
    given = (~np.isnan(stacked)).sum(axis=0)
    lower_middle = np.maximum(given - 1, 0) // 2
    out = np.take_along_axis(stacked, lower_middle[None, :], axis=0)[0]
    out[given == 0] = np.nan
    return out


# --------------------------------------------------------------------------- bootstrap


class BootstrapResult(NamedTuple):
    """A point estimate with a percentile interval from resampling queries."""

    estimate: float
    """The metric on all the data."""
    low: float
    """Lower end of the interval."""
    high: float
    """Upper end of the interval."""
    level: float
    """Coverage of the interval, e.g. 0.95."""
    n_boot: int
    """Number of resamples drawn."""
    n_queries: int
    """Number of queries (clusters) resampled."""
    n_undefined: int
    """Resamples where the metric was undefined (``nan``); left out of the interval."""


class PairedBootstrapResult(NamedTuple):
    """Difference metric(judge_a) − metric(judge_b) on the same items and resamples."""

    difference: float
    """estimate_a − estimate_b on all the data."""
    low: float
    """Lower end of the interval for the difference."""
    high: float
    """Upper end of the interval for the difference."""
    p_value: float
    """Two-sided: twice the fraction of resamples whose difference is zero or of the other
    sign, capped at 1."""
    estimate_a: float
    """The metric for judge_a."""
    estimate_b: float
    """The metric for judge_b."""
    level: float
    """Coverage of the interval."""
    n_boot: int
    """Number of resamples drawn."""
    n_queries: int
    """Number of queries (clusters) resampled."""


class _Additive(NamedTuple):
    """A metric that is a function of per-query statistics summed over queries."""

    stats: Callable[[npt.NDArray[np.intp], int, tuple[FloatArray, ...]], FloatArray]
    """(query codes, number of queries, label arrays) → per-query statistics (Q, m)."""
    finish: Callable[[FloatArray], FloatArray]
    """Summed statistics (B, m) → metric values (B,)."""


def _table_metric(
    finish_tables: Callable[[FloatArray, FloatArray], FloatArray],
    labels: LabelSet | None = None,
    transform: Callable[[FloatArray], FloatArray] | None = None,
) -> _Additive:
    """A metric of the contingency table: per-query tables are the statistics. The label
    set is taken from the full data when ``stats`` runs, and kept for every resample."""
    state: dict[str, FloatArray] = {}

    def stats(
        groups: npt.NDArray[np.intp], n_groups: int, arrays: tuple[FloatArray, ...]
    ) -> FloatArray:
        if len(arrays) != 2:
            raise ValueError(f"this metric takes two label arrays, got {len(arrays)}")
        a, b = arrays
        if transform is not None:
            a, b = transform(a), transform(b)
        both = ~(np.isnan(a) | np.isnan(b))
        label_set = _label_set(labels, a[both], b[both])
        state["labels"] = label_set
        k = label_set.size
        return _tables(a, b, label_set, groups, n_groups).reshape(n_groups, k * k)

    def finish(summed: FloatArray) -> FloatArray:
        label_set = state["labels"]
        k = label_set.size
        if k == 0:
            return np.full(summed.shape[0], math.nan)
        return finish_tables(summed.reshape(-1, k, k), label_set)

    return _Additive(stats, finish)


def _kappa_form(
    labels: LabelSet | None = None, weights: Weights = None, undefined: float = math.nan
) -> _Additive:
    return _table_metric(lambda t, _: _kappa_from_tables(t, weights, undefined), labels)


def _binary_kappa_form(relevant_from: float, undefined: float = math.nan) -> _Additive:
    return _table_metric(
        lambda t, _: _kappa_from_tables(t, None, undefined),
        [0.0, 1.0],
        lambda x: binarise(x, relevant_from),
    )


def _accuracy_tables(t: FloatArray, _: FloatArray) -> FloatArray:
    n = t.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, np.trace(t, axis1=-2, axis2=-1) / n, math.nan)


def _mae_tables(t: FloatArray, labels: FloatArray) -> FloatArray:
    n = t.sum(axis=(-2, -1))
    gap = np.abs(labels[:, None] - labels[None, :])
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, (t * gap).sum(axis=(-2, -1)) / n, math.nan)


def _pairwise_form() -> _Additive:
    def stats(
        groups: npt.NDArray[np.intp], n_groups: int, arrays: tuple[FloatArray, ...]
    ) -> FloatArray:
        if len(arrays) != 2:
            raise ValueError("pairwise_preference_agreement takes (human, judge) arrays here")
        return _pair_counts(groups, n_groups, arrays[0], arrays[1])

    return _Additive(stats, _pairwise_from_counts)


#: Metrics whose resamples are computed from summed per-query statistics (fast path).
#: ``functools.partial`` objects over them with keyword arguments are recognised too.
_ADDITIVE: dict[Callable[..., Any], Callable[..., _Additive]] = {
    cohen_kappa: _kappa_form,
    binary_kappa: _binary_kappa_form,
    accuracy: lambda: _table_metric(_accuracy_tables),
    mean_absolute_error: lambda: _table_metric(_mae_tables),
    pairwise_preference_agreement: _pairwise_form,
}


def _additive_form(metric_fn: Callable[..., Any]) -> _Additive | None:
    fn, kwargs = metric_fn, {}
    if isinstance(metric_fn, functools.partial):
        if metric_fn.args:
            return None
        fn, kwargs = metric_fn.func, dict(metric_fn.keywords)
    build = _ADDITIVE.get(fn)
    if build is None:
        return None
    return build(**kwargs)


def _resamples(
    rng: np.random.Generator, n_groups: int, n_boot: int
) -> Iterator[npt.NDArray[np.intp]]:
    """Blocks of resamples, each row n_groups query codes drawn with replacement."""
    block = max(1, min(n_boot, 4_000_000 // max(n_groups, 1)))
    for start in range(0, n_boot, block):
        yield rng.integers(0, n_groups, size=(min(block, n_boot - start), n_groups))


def _resample_counts(draws: npt.NDArray[np.intp], n_groups: int) -> FloatArray:
    """How often each query was drawn in each resample: (B, Q)."""
    b = draws.shape[0]
    offset = (np.arange(b) * n_groups)[:, None]
    counts = np.bincount((draws + offset).ravel(), minlength=b * n_groups)
    return counts.reshape(b, n_groups).astype(np.float64)


def _expand(
    draws: npt.NDArray[np.intp], starts: npt.NDArray[np.intp], lengths: npt.NDArray[np.intp]
) -> npt.NDArray[np.intp]:
    """Row positions (into query-sorted rows) of the queries in one resample."""
    size = lengths[draws]
    total = int(size.sum())
    begin = np.repeat(starts[draws], size)
    within = np.arange(total) - np.repeat(np.cumsum(size) - size, size)
    return begin + within


def _generic_values(
    metric_fn: Callable[..., Any],
    groups: npt.NDArray[np.intp],
    n_groups: int,
    arrays: tuple[FloatArray, ...],
    rng: np.random.Generator,
    n_boot: int,
) -> FloatArray:
    order = np.argsort(groups, kind="stable")
    sorted_arrays = tuple(a[order] for a in arrays)
    lengths = np.bincount(groups, minlength=n_groups)
    starts = np.cumsum(lengths) - lengths
    values = []
    for block in _resamples(rng, n_groups, n_boot):
        for draws in block:
            rows = _expand(draws, starts, lengths)
            values.append(float(metric_fn(*(a[rows] for a in sorted_arrays))))
    return np.asarray(values)


def _interval(values: FloatArray, level: float) -> tuple[float, float, int]:
    finite = values[np.isfinite(values)]
    undefined = int(values.size - finite.size)
    if finite.size == 0:
        return math.nan, math.nan, undefined
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high), undefined


def _check_level(level: float, n_boot: int) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie between 0 and 1, got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")


def bootstrap_ci(
    metric_fn: Callable[..., Any],
    query_ids: Any,
    *arrays: Any,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> BootstrapResult:
    """Percentile interval for ``metric_fn(*arrays)``, resampling whole queries.

    Each resample draws as many queries as there are, with replacement, and keeps all rows
    of each drawn query (a query drawn twice counts twice). The same ``seed`` always gives
    the same interval.

    ``cohen_kappa``, ``binary_kappa``, ``accuracy``, ``mean_absolute_error`` and
    ``pairwise_preference_agreement`` (also wrapped in ``functools.partial`` with keyword
    arguments, e.g. ``partial(cohen_kappa, weights="linear")``) take a fast path: per-query
    statistics are computed once and every resample is a weighted sum of them. Their label
    set is fixed from the full data, so each resample weighs grade distances alike. Any
    other callable is evaluated on each resample's rows (slower, same resamples).
    ``pairwise_preference_agreement`` gets the query ids itself: pass only (human, judge).
    Resamples where the metric is undefined are left out of the interval and counted.
    """
    _check_level(level, n_boot)
    labels = tuple(as_labels(a) for a in arrays)
    n = labels[0].size if labels else 0
    if any(a.size != n for a in labels):
        raise ValueError("label arrays differ in length")
    groups, n_groups = _query_codes(query_ids, n)
    rng = np.random.default_rng(seed)
    form = _additive_form(metric_fn)
    if form is not None:
        stats = form.stats(groups, n_groups, labels)
        estimate = float(form.finish(stats.sum(axis=0)[None, :])[0])
        values = np.concatenate(
            [
                form.finish(_resample_counts(block, n_groups) @ stats)
                for block in _resamples(rng, n_groups, n_boot)
            ]
        )
    else:
        estimate = float(metric_fn(*labels))
        values = _generic_values(metric_fn, groups, n_groups, labels, rng, n_boot)
    low, high, undefined = _interval(values, level)
    return BootstrapResult(estimate, low, high, level, n_boot, n_groups, undefined)


def bootstrap_ci_many(
    metric_fns: Sequence[Callable[..., Any]],
    query_ids: Any,
    *arrays: Any,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[BootstrapResult]:
    """:func:`bootstrap_ci` for several metrics of the same arrays, on the same resamples.

    Each result equals ``bootstrap_ci(fn, query_ids, *arrays, n_boot=…, seed=…)``; when
    every metric takes the fast path, the resamples are drawn and counted once for all of
    them (κ unweighted, linear and quadratic cost little more than κ alone).
    """
    forms = [_additive_form(fn) for fn in metric_fns]
    if any(form is None for form in forms):
        return [
            bootstrap_ci(fn, query_ids, *arrays, n_boot=n_boot, seed=seed, level=level)
            for fn in metric_fns
        ]
    _check_level(level, n_boot)
    labels = tuple(as_labels(a) for a in arrays)
    n = labels[0].size if labels else 0
    if any(a.size != n for a in labels):
        raise ValueError("label arrays differ in length")
    groups, n_groups = _query_codes(query_ids, n)
    rng = np.random.default_rng(seed)
    ready = [form for form in forms if form is not None]
    stats = [form.stats(groups, n_groups, labels) for form in ready]
    parts: list[list[FloatArray]] = [[] for _ in ready]
    for block in _resamples(rng, n_groups, n_boot):
        counts = _resample_counts(block, n_groups)
        for part, form, stat in zip(parts, ready, stats, strict=True):
            part.append(form.finish(counts @ stat))
    out = []
    for form, stat, part in zip(ready, stats, parts, strict=True):
        estimate = float(form.finish(stat.sum(axis=0)[None, :])[0])
        low, high, undefined = _interval(np.concatenate(part), level)
        out.append(BootstrapResult(estimate, low, high, level, n_boot, n_groups, undefined))
    return out


def paired_bootstrap(
    metric_fn: Callable[..., Any],
    query_ids: Any,
    human: Any,
    judge_a: Any,
    judge_b: Any,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> PairedBootstrapResult:
    """Is judge_a better than judge_b? metric(human, a) − metric(human, b) with a query
    bootstrap interval and a two-sided p-value.

    Both judges are scored on the same items (rows where the human or either judge label is
    missing are dropped for both) and on the same resamples. The p-value is twice the
    fraction of resamples whose difference is zero or has the sign opposite to the observed
    one, capped at 1 (so identical judges get 1).
    """
    _check_level(level, n_boot)
    h, a, b = as_labels(human), as_labels(judge_a), as_labels(judge_b)
    if not h.size == a.size == b.size:
        raise ValueError("label arrays differ in length")
    dropped = np.isnan(h) | np.isnan(a) | np.isnan(b)
    h = np.where(dropped, np.nan, h)
    groups, n_groups = _query_codes(query_ids, h.size)
    rng = np.random.default_rng(seed)
    form = _additive_form(metric_fn)
    if form is not None:
        form_b = _additive_form(metric_fn)
        assert form_b is not None
        stats_a = form.stats(groups, n_groups, (h, a))
        stats_b = form_b.stats(groups, n_groups, (h, b))
        est_a = float(form.finish(stats_a.sum(axis=0)[None, :])[0])
        est_b = float(form_b.finish(stats_b.sum(axis=0)[None, :])[0])
        parts = []
        for block in _resamples(rng, n_groups, n_boot):
            counts = _resample_counts(block, n_groups)
            parts.append(form.finish(counts @ stats_a) - form_b.finish(counts @ stats_b))
        diffs = np.concatenate(parts)
    else:
        est_a, est_b = float(metric_fn(h, a)), float(metric_fn(h, b))
        diffs = _generic_values(
            lambda hh, aa, bb: float(metric_fn(hh, aa)) - float(metric_fn(hh, bb)),
            groups,
            n_groups,
            (h, a, b),
            rng,
            n_boot,
        )
    difference = est_a - est_b
    low, high, _ = _interval(diffs, level)
    finite = diffs[np.isfinite(diffs)]
    if finite.size == 0 or not math.isfinite(difference) or difference == 0:
        p_value = 1.0
    else:
        flipped = finite <= 0 if difference > 0 else finite >= 0
        p_value = min(1.0, 2.0 * float(np.mean(flipped)))
    return PairedBootstrapResult(
        difference, low, high, p_value, est_a, est_b, level, n_boot, n_groups
    )


# --------------------------------------------------------------------------- rankings


def _average_ranks(x: FloatArray) -> FloatArray:
    """Ranks 1..n, tied values sharing the mean of their ranks."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return ((ends - counts + 1 + ends) / 2.0)[inverse]


def spearman_rho(x: Any, y: Any) -> float:
    """Spearman's ρ: Pearson correlation of the average ranks (as ``scipy.stats.spearmanr``)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("spearman_rho needs two 1-D arrays of the same length")
    if a.size < 2:
        return math.nan
    ra, rb = _average_ranks(a), _average_ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = math.sqrt(float((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / denominator) if denominator > 0 else math.nan


def kendall_tau(x: Any, y: Any) -> float:
    """Kendall's τ-b, which corrects for ties (as ``scipy.stats.kendalltau``'s default).

    Compares all pairs in blocks; meant for system rankings (hundreds or a few thousand
    systems), not for millions of items.
    """
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("kendall_tau needs two 1-D arrays of the same length")
    n = a.size
    if n < 2:
        return math.nan
    score = tied_a = tied_b = 0.0
    block = max(1, 2_000_000 // n)
    for start in range(0, n, block):
        sa = np.sign(a[start : start + block, None] - a[None, :])
        sb = np.sign(b[start : start + block, None] - b[None, :])
        score += float((sa * sb).sum())
        tied_a += float((sa == 0).sum())
        tied_b += float((sb == 0).sum())
    pairs = n * (n - 1) / 2.0
    # every ordered pair was seen twice and the diagonal once
    score /= 2.0
    tied_a = (tied_a - n) / 2.0
    tied_b = (tied_b - n) / 2.0
    denominator = math.sqrt((pairs - tied_a) * (pairs - tied_b))
    return score / denominator if denominator > 0 else math.nan


def rank_biased_overlap(first: Sequence[Any], second: Sequence[Any], p: float = 0.9) -> float:
    """Rank-biased overlap, extrapolated form (Webber, Moffat & Zobel 2010, eq. 32).

    ``first`` and ``second`` are rankings, best first, without repeated items; they may
    differ in length and content. ``p`` sets how top-heavy the comparison is (the first d
    ranks carry weight 1 − p^d). 1 for identical rankings, 0 for disjoint ones.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie strictly between 0 and 1, got {p}")
    short, long = (list(first), list(second))
    if len(short) > len(long):
        short, long = long, short
    s, ell = len(short), len(long)
    if len(set(short)) != s or len(set(long)) != ell:
        raise ValueError("rankings must not repeat an item")
    if s == 0:
        return 0.0
    rank_long = {item: i + 1 for i, item in enumerate(long)}
    # an item in both lists joins the overlap at the depth where both have listed it
    joins = [max(i + 1, rank_long[item]) for i, item in enumerate(short) if item in rank_long]
    overlap = np.cumsum(np.bincount(np.asarray(joins, dtype=np.intp), minlength=ell + 1))[1:]
    depth = np.arange(1, ell + 1, dtype=np.float64)
    weight = p**depth
    x_s, x_l = float(overlap[s - 1]), float(overlap[ell - 1])
    first_sum = float((overlap / depth * weight).sum())
    tail = depth[s:]
    second_sum = float((x_s * (tail - s) / (s * tail) * weight[s:]).sum())
    return (1.0 - p) / p * (first_sum + second_sum) + ((x_l - x_s) / ell + x_s / s) * p**ell


class RankingAgreement(NamedTuple):
    """How similarly two sets of qrels order the same systems under one measure."""

    measure: str
    """The ir_measures measure, e.g. ``nDCG@10``."""
    kendall_tau: float
    """τ-b between the systems' scores under the two qrels."""
    spearman_rho: float
    """ρ between the systems' scores."""
    rbo: float
    """Extrapolated rank-biased overlap between the two system orderings."""
    human_scores: dict[str, float]
    """Mean score per system under the human qrels."""
    judge_scores: dict[str, float]
    """Mean score per system under the judge's qrels."""


def _system_order(scores: Mapping[str, float]) -> list[str]:
    return sorted(scores, key=lambda name: (-scores[name], name))


def system_ranking_agreement(
    human_qrels: Mapping[str, Mapping[str, int]],
    judge_qrels: Mapping[str, Mapping[str, int]],
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    measures: Sequence[Any] | None = None,
    relevant_from: int = 2,
    rbo_p: float = 0.9,
) -> dict[str, RankingAgreement]:
    """Would the judge's qrels rank retrieval systems the way the human qrels do?

    Every run (``{query: {doc: score}}``, as ``mmjudge.qrels.read_run`` returns) is scored
    under both qrels with ``ir_measures``; systems are then compared by τ-b, ρ and RBO
    (systems ordered by score, ties by name). Default measures: nDCG@10 (graded) and
    P@10 counting grades ≥ ``relevant_from`` as relevant. Measures may be ir_measures
    objects or strings such as ``"AP(rel=2)"``.
    """
    import ir_measures

    if measures is None:
        measures = [ir_measures.nDCG @ 10, ir_measures.P(rel=relevant_from) @ 10]
    parsed = [ir_measures.parse_measure(m) if isinstance(m, str) else m for m in measures]
    names = list(runs)
    human: dict[str, dict[str, float]] = {str(m): {} for m in parsed}
    judged: dict[str, dict[str, float]] = {str(m): {} for m in parsed}
    # ir_measures takes plain dicts of dicts.
    plain_human = {q: dict(docs) for q, docs in human_qrels.items()}
    plain_judge = {q: dict(docs) for q, docs in judge_qrels.items()}
    for name in names:
        run = {q: dict(docs) for q, docs in runs[name].items()}
        for scores, qrels in ((human, plain_human), (judged, plain_judge)):
            values = ir_measures.calc_aggregate(parsed, qrels, run)
            for measure in parsed:
                scores[str(measure)][name] = float(values.get(measure, math.nan))
    out = {}
    for measure in parsed:
        key = str(measure)
        h = np.array([human[key][name] for name in names])
        j = np.array([judged[key][name] for name in names])
        out[key] = RankingAgreement(
            measure=key,
            kendall_tau=kendall_tau(h, j),
            spearman_rho=spearman_rho(h, j),
            rbo=rank_biased_overlap(_system_order(human[key]), _system_order(judged[key]), rbo_p),
            human_scores=human[key],
            judge_scores=judged[key],
        )
    return out


def system_ranking_on_shared_items(
    query_ids: Any,
    doc_ids: Any,
    human: Any,
    judge: Any,
    runs: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    measures: Sequence[Any] | None = None,
    relevant_from: int = 2,
    rbo_p: float = 0.9,
) -> dict[str, RankingAgreement]:
    """:func:`system_ranking_agreement` from aligned label arrays (one entry per
    (query, doc) pair, ``nan`` = no grade).

    Both qrels hold only the pairs that both the humans and the judge graded (the items the
    judge's κ is on): a pair the judge failed to grade counts against neither ranking, and
    both rank the systems on the same pairs.
    """
    h, j = as_labels(human), as_labels(judge)
    queries, docs = np.asarray(query_ids), np.asarray(doc_ids)
    if not h.size == j.size == queries.size == docs.size:
        raise ValueError("query ids, doc ids and label arrays differ in length")
    keep = ~(np.isnan(h) | np.isnan(j))
    human_qrels: dict[str, dict[str, int]] = {}
    judge_qrels: dict[str, dict[str, int]] = {}
    for query, doc, grade_h, grade_j in zip(
        queries[keep].tolist(), docs[keep].tolist(), h[keep].tolist(), j[keep].tolist(), strict=True
    ):
        human_qrels.setdefault(str(query), {})[str(doc)] = int(grade_h)
        judge_qrels.setdefault(str(query), {})[str(doc)] = int(grade_j)
    return system_ranking_agreement(
        human_qrels,
        judge_qrels,
        runs,
        measures=measures,
        relevant_from=relevant_from,
        rbo_p=rbo_p,
    )
