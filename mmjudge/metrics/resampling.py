"""Bootstrap intervals that resample queries, not rows (results of one query share its
difficulty), for one metric, several at once, and the paired difference of two judges."""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.metrics.kappa import (
    accuracy,
    binarise,
    binary_kappa,
    cohen_kappa,
    kappa_from_tables,
    mean_absolute_error,
)
from mmjudge.metrics.labels import (
    FloatArray,
    LabelSet,
    Weights,
    as_labels,
    confusion_tables,
    label_space,
    query_codes,
)
from mmjudge.metrics.pairwise import (
    pair_counts,
    pairwise_from_counts,
    pairwise_preference_agreement,
)


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
        label_set = label_space(labels, a[both], b[both])
        state["labels"] = label_set
        k = label_set.size
        return confusion_tables(a, b, label_set, groups, n_groups).reshape(n_groups, k * k)

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
    return _table_metric(lambda t, _: kappa_from_tables(t, weights, undefined), labels)


def _binary_kappa_form(relevant_from: float, undefined: float = math.nan) -> _Additive:
    return _table_metric(
        lambda t, _: kappa_from_tables(t, None, undefined),
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
        return pair_counts(groups, n_groups, arrays[0], arrays[1])

    return _Additive(stats, pairwise_from_counts)


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


#: Query codes drawn, or resample-by-query counts built, at once: a whole block of resamples
#: (4,000,000 codes) would take several copies of 32 MB at 100,000 items.
_COUNT_CELLS = 250_000


def _resamples(
    rng: np.random.Generator, n_groups: int, n_boot: int
) -> Iterator[npt.NDArray[np.intp]]:
    """Blocks of resamples, each row n_groups query codes drawn with replacement.

    The random stream is that of drawing up to 4,000,000 codes per call (the intervals
    depend on it); each such draw is handed out in pieces of an even number of rows, at most
    :data:`_COUNT_CELLS` codes each, which the generator draws exactly as it would the whole
    (a call of an even number of codes leaves none of its 64-bit draws half used), so memory
    stays small however many queries there are.
    """
    block = max(1, min(n_boot, 4_000_000 // max(n_groups, 1)))
    piece = max(2, _COUNT_CELLS // max(n_groups, 1) // 2 * 2)
    for start in range(0, n_boot, block):
        rows = min(block, n_boot - start)
        for first in range(0, rows, piece):
            yield rng.integers(0, n_groups, size=(min(piece, rows - first), n_groups))


def _resample_counts(draws: npt.NDArray[np.intp], n_groups: int) -> npt.NDArray[np.int64]:
    """How often each query was drawn in each resample: (B, Q)."""
    b = draws.shape[0]
    offset = (np.arange(b) * n_groups)[:, None]
    counts = np.bincount((draws + offset).ravel(), minlength=b * n_groups)
    return counts.reshape(b, n_groups)


CountBlocks = Sequence[npt.NDArray[np.integer[Any]]]
"""Resample-by-query counts, a few resamples (rows) per block, in the order drawn."""

#: Counts kept for the next interval with the same seed, number of queries and number of
#: resamples, which are then the same counts: every interval of a report is drawn with one
#: seed and one number of resamples, and most of a dataset's on its every query. At most
#: this many counts are kept (one byte each while no query is drawn more than 255 times).
_KEPT_CELLS = 16_000_000
_kept: OrderedDict[tuple[int, int, int], CountBlocks] = OrderedDict()
_kept_lock = threading.Lock()


def _narrow(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.integer[Any]]:
    """The counts in the smallest unsigned type that holds them."""
    largest = int(counts.max()) if counts.size else 0
    return counts.astype(np.min_scalar_type(largest))


def _count_blocks(seed: int, n_groups: int, n_boot: int) -> Iterable[npt.NDArray[np.integer[Any]]]:
    """The resample counts of ``n_boot`` resamples drawn from ``default_rng(seed)``
    (:func:`_resamples`), computed once and kept for the intervals that follow when they
    fit in :data:`_KEPT_CELLS`, else counted again a block at a time (small memory)."""
    key = (seed, n_groups, n_boot)
    cacheable = type(seed) is int and n_groups * n_boot <= _KEPT_CELLS
    if cacheable:
        with _kept_lock:
            if key in _kept:
                _kept.move_to_end(key)
                return _kept[key]
    rng = np.random.default_rng(seed)
    blocks = (_narrow(_resample_counts(d, n_groups)) for d in _resamples(rng, n_groups, n_boot))
    if not cacheable:
        return blocks
    kept = list(blocks)
    with _kept_lock:
        _kept[key] = kept
        while sum(k[1] * k[2] for k in _kept) > _KEPT_CELLS:
            _kept.popitem(last=False)
    return kept


@functools.cache
def _blas_threads() -> Any:
    """The BLAS libraries numpy loaded (looked up once; imported here, not at start-up)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def _resampled_sums(
    blocks: Iterable[npt.NDArray[np.integer[Any]]], stats: Sequence[FloatArray]
) -> list[FloatArray]:
    """Each per-query statistic (Q, m) summed over every resample: (B, m) each.

    The statistics are counts (whole numbers), so every sum is exact and the same whichever
    rows are summed together. The products are small (a few resamples at a time): the BLAS
    is held to one thread for them, since starting its threads costs more than they save
    (twenty times more on a busy machine).
    """
    parts: list[list[FloatArray]] = [[] for _ in stats]
    with _blas_threads().limit(limits=1, user_api="blas"):
        for block in blocks:
            counts = block.astype(np.float64)
            for part, stat in zip(parts, stats, strict=True):
                part.append(counts @ stat)
    empty = [np.zeros((0, stat.shape[1])) for stat in stats]
    return [np.concatenate(part) if part else e for part, e in zip(parts, empty, strict=True)]


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


def _grouped(
    query_ids: Any, arrays: Sequence[Any]
) -> tuple[tuple[FloatArray, ...], npt.NDArray[np.intp], int]:
    """The label arrays (checked to be one length) with their dense query codes and count."""
    labels = tuple(as_labels(a) for a in arrays)
    n = labels[0].size if labels else 0
    if any(a.size != n for a in labels):
        raise ValueError("label arrays differ in length")
    groups, n_groups = query_codes(query_ids, n)
    return labels, groups, n_groups


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
    labels, groups, n_groups = _grouped(query_ids, arrays)
    form = _additive_form(metric_fn)
    if form is not None:
        stats = form.stats(groups, n_groups, labels)
        estimate = float(form.finish(stats.sum(axis=0)[None, :])[0])
        blocks = _count_blocks(seed, n_groups, n_boot)
        values = form.finish(_resampled_sums(blocks, [stats])[0])
    else:
        estimate = float(metric_fn(*labels))
        rng = np.random.default_rng(seed)
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
    labels, groups, n_groups = _grouped(query_ids, arrays)
    ready = [form for form in forms if form is not None]
    stats = [form.stats(groups, n_groups, labels) for form in ready]
    sums = _resampled_sums(_count_blocks(seed, n_groups, n_boot), stats)
    out = []
    for form, stat, summed in zip(ready, stats, sums, strict=True):
        estimate = float(form.finish(stat.sum(axis=0)[None, :])[0])
        low, high, undefined = _interval(form.finish(summed), level)
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
    groups, n_groups = query_codes(query_ids, h.size)
    est_a, est_b, diffs = _paired_differences(metric_fn, groups, n_groups, (h, a, b), seed, n_boot)
    difference = est_a - est_b
    low, high, _ = _interval(diffs, level)
    p_value = _two_sided_p(diffs, difference)
    return PairedBootstrapResult(
        difference, low, high, p_value, est_a, est_b, level, n_boot, n_groups
    )


def _paired_differences(
    metric_fn: Callable[..., Any],
    groups: npt.NDArray[np.intp],
    n_groups: int,
    labels: tuple[FloatArray, FloatArray, FloatArray],
    seed: int,
    n_boot: int,
) -> tuple[float, float, FloatArray]:
    """Both judges' estimates and ``metric(human, a) − metric(human, b)`` on each resample
    (the fast path when the metric has one, else the metric on each resample's rows)."""
    h, a, b = labels
    form = _additive_form(metric_fn)
    if form is None:
        diffs = _generic_values(
            lambda hh, aa, bb: float(metric_fn(hh, aa)) - float(metric_fn(hh, bb)),
            groups,
            n_groups,
            labels,
            np.random.default_rng(seed),
            n_boot,
        )
        return float(metric_fn(h, a)), float(metric_fn(h, b)), diffs
    form_b = _additive_form(metric_fn)
    assert form_b is not None
    stats_a = form.stats(groups, n_groups, (h, a))
    stats_b = form_b.stats(groups, n_groups, (h, b))
    est_a = float(form.finish(stats_a.sum(axis=0)[None, :])[0])
    est_b = float(form_b.finish(stats_b.sum(axis=0)[None, :])[0])
    blocks = _count_blocks(seed, n_groups, n_boot)
    sum_a, sum_b = _resampled_sums(blocks, [stats_a, stats_b])
    return est_a, est_b, form.finish(sum_a) - form_b.finish(sum_b)


def _two_sided_p(diffs: FloatArray, difference: float) -> float:
    """Twice the share of resampled differences that are zero or of the opposite sign,
    capped at 1 (1 when there is no difference or nothing defined to compare)."""
    finite = diffs[np.isfinite(diffs)]
    if finite.size == 0 or not math.isfinite(difference) or difference == 0:
        return 1.0
    flipped = finite <= 0 if difference > 0 else finite >= 0
    return min(1.0, 2.0 * float(np.mean(flipped)))
