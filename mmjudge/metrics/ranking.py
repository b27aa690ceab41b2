"""System rankings: Spearman's ρ, Kendall's τ, rank-biased overlap, and how the ranking of
systems under a judge's labels compares with the ranking under human labels."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from mmjudge.metrics.labels import FloatArray, as_labels


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

    Every run (``{query: {doc: score}}``, as ``mmjudge.data.qrels.read_run`` returns) is scored
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
