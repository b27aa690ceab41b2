"""Prediction-powered estimates: a judge's labels on every item, human labels on a random
subset, and intervals that stay valid however wrong the judge is.

Every quantity estimated here is written as the mean, over all items, of one column of
numbers per item (:class:`Columns`): ``Y`` computed from the item's human grade and ``Yhat``
from the judge's grade. The mean grade and the share of relevant results are such means
directly. A system's P@10 is one too: it is a fixed weighted sum of the items' relevance
(an item counts ``1/(10·Q)`` for every system that ranks it in a query's top ten).

A system's nDCG@10 is not linear in the labels (its ideal DCG sorts a query's grades), so it
is linearised around a first guess of the human grades (:func:`pilot`: per judge grade, moved
per query by the query's labelled residuals): ``nDCG(y) ≈ nDCG(g₀) + Σ_i ∂nDCG/∂g_i ·
(g_i(y) − g_i(g₀))``, the ideal DCG taken as a function of the counts at or above each grade
and averaged over the counts the guess leaves uncertain. The column is the item's derivative
times its gain, scaled by the number of items, plus the expansion's constant. The remainder
is of second order in the guess's errors; the coverage tests in
``tests/estimation/test_prediction.py`` measure it on real label files.

Each column's mean is then estimated by ``ppi_py.ppi_mean_ci`` and
``ppi_py.ppi_mean_pointestimate`` (PPI++: the weight on the judge is tuned from the data, per
column), beside the human-only interval (the same functions at ``lam=0``, the classical
interval) and the judge-only value (the judge's labels on everything: no interval, since its
error is bias that more items do not shrink). With a draw of equal chances the mean grade and
the share relevant may be estimated per query, and each system's columns in its top tens and
the rest apart (:mod:`mmjudge.estimation.strata`); estimated over all items, they count two
pseudo-items so that a handful of labels gives honest intervals
(:mod:`mmjudge.estimation.small_sample`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.data.qrels import top_documents
from mmjudge.errors import MMJudgeError
from mmjudge.estimation import small_sample, strata
from mmjudge.estimation.estimate_record import Estimate
from mmjudge.estimation.expansion import Pilot, discounts, ideal_linear, pilot
from mmjudge.metrics.labels import FloatArray

LEVEL = 0.95
DEPTH = 10


class ItemLabels(NamedTuple):
    """The items both the humans and the judge graded, in one order."""

    queries: list[str]
    """Query id of each item."""
    docs: list[str]
    """Document id of each item."""
    human: FloatArray
    """The human grade of each item."""
    judge: FloatArray
    """The judge's grade of each item."""


def shared_items(
    human: Mapping[str, Mapping[str, int]], judge: Mapping[str, Mapping[str, int]]
) -> ItemLabels:
    """The (query, doc) pairs both qrels grade, in the human file's order."""
    queries, docs, h, j = [], [], [], []
    for query, graded in human.items():
        theirs = judge.get(query, {})
        for doc, grade in graded.items():
            if doc in theirs:
                queries.append(query)
                docs.append(doc)
                h.append(float(grade))
                j.append(float(theirs[doc]))
    return ItemLabels(queries, docs, np.asarray(h, dtype=float), np.asarray(j, dtype=float))


class Columns(NamedTuple):
    """Per-item columns whose means (plus an offset) are the quantities estimated."""

    names: list[str]
    """One name per column, e.g. ``mean grade`` or ``nDCG@10 sysA``."""
    table: FloatArray
    """items × columns × grades: an item's value in a column if it had each grade."""
    grades: FloatArray
    """The grade scale, in the order of the table's last axis."""
    offset: FloatArray
    """Per column: added to the column's mean."""

    def values(self, grades: FloatArray, rows: Any = slice(None)) -> FloatArray:
        """items × columns: the column values of the items ``rows`` picks out, given their
        ``grades`` (on the scale)."""
        picked = self.table[rows]
        at = np.searchsorted(self.grades, grades)
        at = np.minimum(at, self.grades.size - 1)
        if not np.array_equal(self.grades[at], grades):
            raise ValueError("a grade is off the scale the columns were built for")
        return picked[np.arange(grades.size), :, at]


class Design(NamedTuple):
    """What the columns need from the items and the systems, computed once."""

    grades: FloatArray
    relevant_from: float
    codes: npt.NDArray[np.intp]
    """Query number of each item."""
    n_queries: int
    systems: list[str]
    dcg: FloatArray
    """items × systems: the discount of the item's place in the system's top ``depth``."""
    precision: FloatArray
    """items × systems: the weight of the item's relevance in the system's mean P@depth."""
    in_run: npt.NDArray[np.bool_]
    """queries × systems: the system ranked the query (it counts in the system's mean)."""
    depth: int


def prepare(
    items: ItemLabels,
    systems: Mapping[str, Mapping[str, Mapping[str, float]]] | None,
    grades: Sequence[float],
    relevant_from: float,
    depth: int = DEPTH,
) -> Design:
    """Each system's top ``depth`` per query, as weights on the items."""
    order = list(dict.fromkeys(items.queries))
    number = {q: k for k, q in enumerate(order)}
    codes = np.asarray([number[q] for q in items.queries], dtype=np.intp)
    row = {(q, d): i for i, (q, d) in enumerate(zip(items.queries, items.docs, strict=True))}
    names = list(systems or {})
    size = len(items.queries)
    dcg = np.zeros((size, len(names)))
    precision = np.zeros((size, len(names)))
    in_run = np.zeros((len(order), len(names)), dtype=bool)
    disc = discounts(depth)
    for s, name in enumerate(names):
        run = (systems or {})[name]
        ranked = [q for q in order if q in run]
        for query in ranked:
            in_run[number[query], s] = True
            for place, doc in enumerate(top_documents(run[query], depth)):
                i = row.get((query, doc))
                if i is not None:
                    dcg[i, s] = disc[place]
                    precision[i, s] = 1.0 / (depth * len(ranked))
    return Design(
        np.asarray(sorted(grades), dtype=float),
        float(relevant_from),
        codes,
        len(order),
        names,
        dcg,
        precision,
        in_run,
        depth,
    )


def measure_names(system: str, depth: int = DEPTH) -> tuple[str, str]:
    """The column names of a system's two measures."""
    return f"nDCG@{depth} {system}", f"P@{depth} {system}"


def build_columns(design: Design, guess: Pilot) -> Columns:
    """The columns for the mean grade, the share of relevant items and, per system, P and
    nDCG at the design's depth (nDCG linearised at ``guess``)."""
    grades = design.grades
    size = design.codes.size
    gain = np.maximum(grades, 0.0)
    relevant = (grades >= design.relevant_from).astype(float)
    names = ["mean grade", "share relevant"]
    blocks = [
        np.broadcast_to(grades, (size, grades.size)),
        np.broadcast_to(relevant, (size, grades.size)),
    ]
    offset = [0.0, 0.0]
    ideal, slope_at, constant = ideal_linear(design, guess)
    for s, name in enumerate(design.systems):
        ndcg_name, p_name = measure_names(name, design.depth)
        n_ranked = max(int(design.in_run[:, s].sum()), 1)
        counted = design.in_run[design.codes, s] & (ideal[design.codes] > 0)
        safe = np.where(ideal > 0, ideal, 1.0)
        dcg_hat = np.bincount(
            design.codes, weights=design.dcg[:, s] * guess.gain, minlength=design.n_queries
        )
        ratio = dcg_hat / safe**2
        per_item = (
            design.dcg[:, s, None] * gain[None, :] / safe[design.codes, None]
            - ratio[design.codes, None] * slope_at[design.codes, :]
        )
        blocks.append(np.where(counted[:, None], per_item, 0.0) * size / n_ranked)
        used = design.in_run[:, s] & (ideal > 0)
        offset.append(float((ratio * constant)[used].sum() / n_ranked))
        blocks.append(design.precision[:, s, None] * relevant[None, :] * size)
        offset.append(0.0)
        names += [ndcg_name, p_name]
    table = np.stack(blocks, axis=1)
    return Columns(names, table, grades, np.asarray(offset, dtype=float))


def exact_values(design: Design, grades: FloatArray) -> dict[str, float]:
    """Each column's quantity computed exactly from ``grades`` on every item (no estimate):
    the truth when ``grades`` are the human labels, the judge-only value when the judge's."""
    out = {
        "mean grade": float(grades.mean()),
        "share relevant": float((grades >= design.relevant_from).mean()),
    }
    gain = np.maximum(grades, 0.0)
    disc = discounts(design.depth)
    ideal = np.zeros(design.n_queries)
    for q in range(design.n_queries):
        top = np.sort(gain[design.codes == q])[::-1][: design.depth]
        ideal[q] = float(top @ disc[: top.size])
    for s, name in enumerate(design.systems):
        ndcg_name, p_name = measure_names(name, design.depth)
        dcg = np.bincount(design.codes, weights=design.dcg[:, s] * gain, minlength=design.n_queries)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_query = np.where(ideal > 0, dcg / ideal, 0.0)
        ranked = design.in_run[:, s]
        out[ndcg_name] = float(per_query[ranked].mean()) if ranked.any() else math.nan
        out[p_name] = float(design.precision[:, s] @ (grades >= design.relevant_from))
    return out


def estimate(
    design: Design,
    items: ItemLabels,
    labelled: npt.NDArray[np.bool_],
    level: float = LEVEL,
    probabilities: FloatArray | None = None,
) -> list[Estimate]:
    """Every quantity estimated from the human grades of the ``labelled`` items and the
    judge's grades on all items. ``probabilities``: each labelled item's inclusion
    probability when they were not drawn equally (see :func:`estimate_columns`)."""
    columns = build_columns(design, pilot(design, items.human, items.judge, labelled))
    inside = top_ten_items(design, columns)
    return estimate_columns(columns, items, labelled, level, probabilities, design.codes, inside)


def top_ten_items(design: Design, columns: Columns) -> npt.NDArray[np.bool_]:
    """items × columns: whether the item is in a top ten of the column's system (no item
    marked for a column that is not a system's)."""
    inside = np.zeros((design.codes.size, len(columns.names)), dtype=bool)
    for s, system in enumerate(design.systems):
        for name in measure_names(system, design.depth):
            inside[:, columns.names.index(name)] = design.dcg[:, s] > 0
    return inside


def estimate_columns(
    columns: Columns,
    items: ItemLabels,
    labelled: npt.NDArray[np.bool_],
    level: float = LEVEL,
    probabilities: FloatArray | None = None,
    queries: npt.NDArray[np.intp] | None = None,
    inside: npt.NDArray[np.bool_] | None = None,
) -> list[Estimate]:
    """Each column's mean (plus its offset) three ways: human-only, judge-only and PPI++.

    With ``queries`` (each item's query number) and a draw with equal chances, the columns
    :data:`mmjudge.estimation.strata.COLUMNS` are estimated per query and combined when
    :func:`mmjudge.estimation.strata.usable` says every query has labels enough. With
    ``inside`` (:func:`top_ten_items`), each system column is estimated in its top tens and
    outside them apart, human-only and PPI++ alike, each part's labelled items weighed as
    below (:func:`mmjudge.estimation.strata.split_by_top_ten`).

    With equal chances (a simple random sample), ppi_py's ``Yhat_unlabeled`` is the judge on
    the unlabelled items, and the means estimated over all items count the two pseudo-items
    of :mod:`mmjudge.estimation.small_sample`. With ``probabilities`` (one per labelled item,
    in item order) each labelled item weighs ``1 / π`` (ppi_py's ``w``), and
    ``Yhat_unlabeled`` is the judge on every item, since the unlabelled ones are then no
    random part of the pool."""
    ppi_py = load_ppi()
    y = columns.values(items.human[labelled], labelled)
    yhat = columns.values(items.judge[labelled], labelled)
    rest = ~labelled if probabilities is None else np.ones_like(labelled)
    values = (y, yhat, columns.values(items.judge[rest], rest))
    alpha = 1.0 - level
    w = None if probabilities is None else 1.0 / np.asarray(probabilities, dtype=float)
    ways = _pooled(ppi_py, values, alpha, w)
    split = np.zeros(len(columns.names), dtype=bool)
    if inside is not None:
        marked = (inside[labelled], inside[rest])
        parts = strata.split_by_top_ten(ppi_py, tuned_weights, values, marked, alpha, w)
        split = parts.split
        _overwrite(ways, parts, split)
    by_query = _by_query(values, labelled, alpha, probabilities, queries)
    if by_query is not None:
        _overwrite(ways, by_query, np.isin(columns.names, strata.COLUMNS))
    elif probabilities is None:
        small_sample.apply(columns.names, columns.grades, ways, values, alpha)
    judge = columns.values(items.judge).mean(axis=0)
    counts = [_strata_count(name, by_query, bool(split[k])) for k, name in enumerate(columns.names)]
    return _as_estimates(columns, ways, judge, int(labelled.sum()), counts, labelled.size)


def _as_estimates(
    columns: Columns,
    ways: _Ways,
    judge: FloatArray,
    n: int,
    strata_counts: list[int],
    judge_size: int,
) -> list[Estimate]:
    """One :class:`Estimate` per column, each value moved by the column's offset;
    ``judge_size`` items estimated over."""
    out = []
    for k, name in enumerate(columns.names):
        shift = float(columns.offset[k])
        bounds = small_sample.value_range(name, columns.grades)
        human, ppi = (
            small_sample.fit(
                (float(centre[k]) + shift, float(low[k]) + shift, float(high[k]) + shift), *bounds
            )
            for centre, low, high in (
                (ways.human_point, ways.human_low, ways.human_high),
                (ways.point, ways.low, ways.high),
            )
        )
        out.append(
            Estimate(
                name=name,
                human_only=human.values,
                judge_only=float(judge[k]) + shift,
                ppi=ppi.values,
                lam=float(ways.lam[k]),
                n_labelled=n,
                strata=strata_counts[k],
                population=judge_size,
                clipped=human.clipped or ppi.clipped,
                outside=human.outside or ppi.outside,
                no_width=human.no_width or ppi.no_width,
                human_se=float(ways.human_se[k]),
                ppi_se=float(ways.se[k]),
            )
        )
    return out


class _Ways(NamedTuple):
    """Per column, PPI++ and human-only (fields named as in
    :class:`mmjudge.estimation.strata.TopTenSplit` and ``Stratified``): arrays the split,
    stratified and small-sample estimates overwrite."""

    point: FloatArray
    low: FloatArray
    high: FloatArray
    lam: FloatArray
    se: FloatArray
    human_point: FloatArray
    human_low: FloatArray
    human_high: FloatArray
    human_se: FloatArray


def _overwrite(
    ways: _Ways, found: strata.TopTenSplit | strata.Stratified, where: npt.NDArray[np.bool_]
) -> None:
    """Each of ``ways``' arrays overwritten by ``found``'s of the same name at ``where``."""
    for field in _Ways._fields:
        getattr(ways, field)[where] = getattr(found, field)[where]


def _pooled(
    ppi_py: Any,
    values: tuple[FloatArray, FloatArray, FloatArray],
    alpha: float,
    w: FloatArray | None,
) -> _Ways:
    """Every column over all items at once: ppi_py's PPI++ (weight tuned per column) and its
    classical interval (``lam=0``)."""
    y, yhat, yhat_rest = values
    # a column whose judge values do not vary has no weight to tune: NaN, shown as undefined
    with np.errstate(divide="ignore", invalid="ignore"):
        point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_rest, lam_optim_mode="element", w=w)
        low, high = ppi_py.ppi_mean_ci(
            y, yhat, yhat_rest, alpha=alpha, lam_optim_mode="element", w=w
        )
    c_low, c_high = ppi_py.ppi_mean_ci(y, yhat, yhat_rest, alpha=alpha, lam=0, w=w)
    scaled = np.ones(y.shape[0]) if w is None else w / w.sum() * w.size
    low, high, c_low, c_high = (np.ravel(a).copy() for a in (low, high, c_low, c_high))
    z = small_sample.critical(alpha)
    return _Ways(
        point=np.ravel(point).copy(),
        low=low,
        high=high,
        lam=tuned_weights(y, yhat, yhat_rest, w),
        se=(high - low) / (2 * z),
        human_point=(scaled[:, None] * y).mean(axis=0),
        human_low=c_low,
        human_high=c_high,
        human_se=(c_high - c_low) / (2 * z),
    )


def _strata_count(name: str, by_query: strata.Stratified | None, split: bool) -> int:
    if split:
        return 2
    return 1 if by_query is None or name not in strata.COLUMNS else by_query.strata


def _by_query(
    values: tuple[FloatArray, FloatArray, FloatArray],
    labelled: npt.NDArray[np.bool_],
    alpha: float,
    probabilities: FloatArray | None,
    queries: npt.NDArray[np.intp] | None,
) -> strata.Stratified | None:
    """The per-query estimates of the mean columns, or ``None`` where the rule says pool."""
    if queries is None or probabilities is not None or not queries.size:
        return None
    if not strata.usable(queries, labelled, int(queries.max()) + 1):
        return None
    return strata.stratified_means(load_ppi(), tuned_weights, values, queries, labelled, alpha)


def load_ppi() -> Any:
    """The ``ppi_py`` module, or an :class:`MMJudgeError` that says how to install it."""
    try:
        import ppi_py
    except ImportError:
        raise MMJudgeError(
            "prediction-powered estimates need the ppi-python package: "
            "pip install 'mmjudge[estimate]'"
        ) from None
    return ppi_py


def tuned_weights(
    y: FloatArray, yhat: FloatArray, yhat_rest: FloatArray, w: FloatArray | None = None
) -> FloatArray:
    """The PPI++ weight per column, as ``ppi_mean_ci`` tunes it for one column (the
    covariance of the weighted ``Y`` and ``Yhat`` around the plain PPI estimate over
    ``(1 + n/N)`` times the variance of ``Yhat`` on all items, clipped to [0, 1]); reported
    beside each estimate."""
    n, big_n = y.shape[0], yhat_rest.shape[0]
    scaled = (np.ones(n) if w is None else w / w.sum() * n)[:, None]
    first = yhat_rest.mean(0) + (scaled * (y - yhat)).mean(0)
    grads, grads_hat = scaled * (y - first), scaled * (yhat - first)
    cov = ((grads - grads.mean(0)) * (grads_hat - grads_hat.mean(0))).mean(0)
    var = np.concatenate([grads_hat, yhat_rest - first]).var(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = cov / ((1 + n / big_n) * var)
    return np.clip(np.nan_to_num(lam, nan=0.0), 0.0, 1.0)


def draw_labelled(size: int, n: int, seed: int) -> npt.NDArray[np.bool_]:
    """A simple random sample of ``n`` of ``size`` items, as a mask."""
    mask = np.zeros(size, dtype=bool)
    mask[np.random.default_rng(seed).choice(size, size=n, replace=False)] = True
    return mask


def system_names(columns: Columns, measure: str) -> list[str]:
    """The systems with a column for ``measure`` (``nDCG@10`` or ``P@10``), in order."""
    prefix = measure + " "
    return [name[len(prefix) :] for name in columns.names if name.startswith(prefix)]


def pick(estimates: Sequence[Estimate], measure: str) -> dict[str, Estimate]:
    """The estimates of ``measure`` by system."""
    prefix = measure + " "
    return {e.name[len(prefix) :]: e for e in estimates if e.name.startswith(prefix)}
