"""How much a perturbation moves a judge: its labels on perturbed results against its own
labels on the same results clean, and its agreement with people under both.

Definitions (one place for every view):

- **Items**: those where the clean and the perturbed cell both gave a grade on the scale.
- **Changed share**: the share of those items whose grade differs between the two cells,
  with a percentile interval from resampling whole queries
  (:func:`mmjudge.metrics.resampling.bootstrap_ci`).
- **Inflation**: the mean of perturbed grade − clean grade on those items (positive: the
  perturbation pushed grades up), with its interval on the same resamples.
- **Δκ**: κ(perturbed) − κ(clean) against the human reference on the items all three have,
  with the paired interval of :func:`mmjudge.metrics.scoring.compare_judges`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mmjudge.metrics.labels import FloatArray, as_labels
from mmjudge.metrics.resampling import BootstrapResult, bootstrap_ci_many
from mmjudge.metrics.scoring import (
    LEVEL,
    N_BOOT,
    SEED,
    PairedComparison,
    compare_judges,
    scored_items,
)


def changed_share(clean: FloatArray, perturbed: FloatArray) -> float:
    """The share of items whose grade differs (``nan`` without items)."""
    return float(np.mean(clean != perturbed)) if clean.size else float("nan")


def inflation(clean: FloatArray, perturbed: FloatArray) -> float:
    """The mean of perturbed − clean grade (``nan`` without items)."""
    return float(np.mean(perturbed - clean)) if clean.size else float("nan")


@dataclass(frozen=True)
class Robustness:
    """One judge's labels under a perturbation against its clean labels."""

    changed: BootstrapResult
    """Share of items whose grade changed, with its interval."""
    inflation: BootstrapResult
    """Mean grade change (perturbed − clean), with its interval."""
    kappa: PairedComparison | None
    """κ(perturbed) − κ(clean) against people (None: no item has a human grade)."""
    n_items: int
    """Items both cells graded on the scale."""


def robustness(
    query_ids: Any,
    reference: Any,
    clean: Any,
    perturbed: Any,
    grades: Sequence[float],
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
    level: float = LEVEL,
) -> Robustness | None:
    """The changed share, inflation and Δκ of ``perturbed`` against ``clean`` (one judge's
    grades of the same items, aligned); None when no item has both grades on the scale."""
    ref, before, after = as_labels(reference), as_labels(clean), as_labels(perturbed)
    queries = np.asarray(query_ids)
    if not ref.size == before.size == after.size == queries.size:
        raise ValueError("query ids, reference and label arrays differ in length")
    scale = np.asarray([float(g) for g in grades])
    keep, _ = scored_items(scale, before, after)
    if not keep.any():
        return None
    changed, inflated = bootstrap_ci_many(
        [changed_share, inflation],
        queries[keep],
        before[keep],
        after[keep],
        n_boot=n_boot,
        seed=seed,
        level=level,
    )
    kappa = compare_judges(
        queries, ref, after, before, grades, n_boot=n_boot, seed=seed, level=level
    )
    return Robustness(changed, inflated, kappa, int(keep.sum()))
