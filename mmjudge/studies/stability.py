"""Test–retest stability: how often a judge gives the same item the same grade when it is
asked again (``runner.samples``), as pure functions of the samples' label arrays.

The headline is Cohen's κ between samples: for two samples, κ between them; for more, the
mean of κ over every pair of samples. Its interval resamples whole queries, like every
interval of :mod:`mmjudge.metrics.scoring`, except where resampling has nothing to vary:
where every sample of every item agrees (κ is 1 in every resample), and, for two samples,
where they disagree on every item or the resampled interval is zero-width for another reason
(one query only). The interval is then exact, the same one the canary check gives κ between
two checks (:mod:`mmjudge.metrics.exact`): the Clopper–Pearson interval of the unstable
items' share carried through κ's formula, chance agreement held at the samples' paired
grades, so 0 unstable items in 240 on four grades used evenly read κ 1.000 [0.980, 1.000].
With more than two samples and some unstable items, κ is a mean over pairs that the share of
unstable items does not fix, so the resampled interval stands.

An item is *unstable* when its answered samples do not all carry the same grade; items with
fewer than two answered samples are left out of every figure here.

Read beside the human–human κ of the same run (``metrics.human_human_kappa``): a judge
cannot agree with people more steadily than it agrees with itself.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mmjudge import metrics
from mmjudge.metrics.exact import exact_share, kappa_from_share
from mmjudge.metrics.resampling import bootstrap_ci
from mmjudge.metrics.scoring import N_BOOT, SEED, kappa_metric, none_if_nan
from mmjudge.store.blocks import Stability, UnstableItem
from mmjudge.store.bounds import Bounds

#: Unstable items listed by name in a summary (the count covers all of them).
UNSTABLE_LISTED = 200


def mean_pair_kappa(*samples: Any, grades: Sequence[float]) -> float:
    """Mean Cohen's κ over every pair of samples (each pair on the items both answered);
    ``nan`` when no pair's κ is defined."""
    pairs = itertools.combinations(samples, 2)
    values = [metrics.cohen_kappa(a, b, labels=list(grades)) for a, b in pairs]
    defined = [v for v in values if not math.isnan(v)]
    return float(np.mean(defined)) if defined else math.nan


def unstable_mask(samples: np.ndarray) -> np.ndarray:
    """For each item (a column of ``samples``, one row per sample): True when at least two
    samples answered and they differ."""
    answered = ~np.isnan(samples)
    low = np.where(answered, samples, np.inf).min(axis=0)
    high = np.where(answered, samples, -np.inf).max(axis=0)
    return (answered.sum(axis=0) >= 2) & (low != high)


def stability_summary(
    samples: Sequence[Any],
    query_ids: Any,
    result_ids: Any,
    *,
    grades: Sequence[float],
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> Stability:
    """The ``stability`` block of a run's summary (the repeats' cost is the caller's to add).

    ``samples``: one label array per sample (sample 0 first), aligned item by item with
    ``query_ids`` and ``result_ids``; a missing answer is ``nan``.

    Keys: samples (how many), n_items (items with at least two answered samples),
    kappa ({estimate, low, high}: κ between samples, the mean over pairs for more than
    two), kappa_pairs (κ of each pair, ``"0 vs 1"``...), n_unstable, unstable_share and
    unstable (up to :data:`UNSTABLE_LISTED` items: query_id, result_id and each sample's
    label, ``None`` where it gave none).
    """
    table = np.vstack([np.asarray(s, dtype=float) for s in samples])
    queries = np.asarray(query_ids).astype(str)
    results = np.asarray(result_ids).astype(str)
    enough = (~np.isnan(table)).sum(axis=0) >= 2
    kept = table[:, enough]
    n_items = int(enough.sum())
    scale = [float(g) for g in grades]
    if len(samples) == 2:
        metric: Any = kappa_metric(scale)
    else:

        def metric(*labels: Any) -> float:
            return mean_pair_kappa(*labels, grades=scale)

    interval = kappa_interval(metric, queries[enough], kept, scale, n_boot=n_boot, seed=seed)
    unstable = unstable_mask(table)
    return Stability(
        samples=len(samples),
        n_items=n_items,
        kappa=Bounds(**interval),
        kappa_pairs={
            f"{i} vs {j}": none_if_nan(metrics.cohen_kappa(kept[i], kept[j], labels=scale))
            for i, j in itertools.combinations(range(len(samples)), 2)
        },
        n_unstable=int(unstable.sum()),
        unstable_share=none_if_nan(unstable.sum() / n_items if n_items else math.nan),
        unstable=_listed(table, unstable, queries, results),
    )


def kappa_interval(
    metric: Any,
    query_ids: np.ndarray,
    kept: np.ndarray,
    grades: Sequence[float],
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict[str, float | None]:
    """κ between samples with its interval (``{estimate, low, high}``), ``kept`` holding one
    row per sample and only items with at least two answered samples: resampled by query, or
    exact where resampling has nothing to vary (see the module notes)."""
    n_items = kept.shape[1]
    if not n_items:
        return {"estimate": None, "low": None, "high": None}
    unstable = int(unstable_mask(kept).sum())
    two = len(kept) == 2
    if unstable == 0 or (two and unstable == n_items):
        return exact_kappa(kept, unstable, grades)
    ci = bootstrap_ci(metric, query_ids, *kept, n_boot=n_boot, seed=seed)
    interval = {k: none_if_nan(getattr(ci, k)) for k in ("estimate", "low", "high")}
    if two and interval["low"] is not None and interval["low"] == interval["high"]:
        return exact_kappa(kept, unstable, grades)
    return interval


def exact_kappa(
    kept: np.ndarray, unstable: int, grades: Sequence[float]
) -> dict[str, float | None]:
    """The exact interval of κ between samples: ``unstable`` of the kept items as a share
    with its Clopper–Pearson interval, carried through κ's formula with chance agreement from
    the paired grades of every pair of samples (each pair on the items both answered)."""
    scale = list(grades)
    pairs = itertools.combinations(range(len(kept)), 2)
    table = sum(
        np.asarray(metrics.confusion_matrix(kept[i], kept[j], scale), dtype=float) for i, j in pairs
    )
    return kappa_from_share(np.asarray(table, dtype=float), exact_share(unstable, kept.shape[1]))


def _listed(
    table: np.ndarray, unstable: np.ndarray, queries: np.ndarray, results: np.ndarray
) -> list[UnstableItem]:
    """The first :data:`UNSTABLE_LISTED` unstable items with each sample's label."""
    return [
        UnstableItem(
            query_id=str(queries[i]),
            result_id=str(results[i]),
            labels=[None if math.isnan(v) else _grade(v) for v in table[:, i]],
        )
        for i in np.flatnonzero(unstable)[:UNSTABLE_LISTED]
    ]


def _grade(value: float) -> float | int:
    return int(value) if float(value).is_integer() else float(value)
