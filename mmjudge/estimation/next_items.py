"""Which items people should label next, drawn so that every estimate can weight them.

The pool is the items the sweep's judges graded that have no human grade yet. Each item gets
a size: 1 plus the number of different grades the judges gave it beyond the first (items the
judges disagree on are worth more). Inclusion probabilities are proportional to size,
``π_i = N · size_i / Σ size`` with any above 1 set to 1 and the rest scaled again, so they sum
to N. The N items are then drawn by systematic sampling with those probabilities over the
pool ordered by query (and at random within a query): every item is drawn with exactly its
``π_i``, the sample always has N items, and each query gets close to its share (the order
stratifies by query implicitly).

An estimate from such a sample weights each labelled item by ``1 / π_i``
(``mmjudge estimate --sample``), which keeps it unbiased for the whole pool although items
were not drawn equally.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.metrics.labels import FloatArray


def inclusion_probabilities(sizes: Sequence[float] | FloatArray, n: int) -> FloatArray:
    """``π`` proportional to ``sizes`` summing to ``n``, none above 1."""
    size = np.asarray(sizes, dtype=float)
    if not 0 < n <= size.size:
        raise ValueError(f"cannot draw {n} of {size.size} items")
    pi = np.zeros(size.size)
    certain = np.zeros(size.size, dtype=bool)
    while True:
        left = n - int(certain.sum())
        rest = ~certain
        pi[rest] = left * size[rest] / size[rest].sum()
        pi[certain] = 1.0
        over = rest & (pi >= 1.0)
        if not over.any():
            return pi
        certain |= over


def systematic_sample(pi: FloatArray, seed: int) -> npt.NDArray[np.intp]:
    """Indices drawn by systematic sampling: item ``i`` with probability ``pi[i]``, exactly
    ``round(sum(pi))`` items, in the given order."""
    total = float(pi.sum())
    count = round(total)
    start = np.random.default_rng(seed).random()
    points = start + np.arange(count)
    bounds = np.concatenate([[0.0], np.cumsum(pi)])
    bounds[-1] = max(bounds[-1], total)
    picked = np.searchsorted(bounds, points, side="right") - 1
    return np.unique(np.clip(picked, 0, pi.size - 1))


class Drawn(NamedTuple):
    """Items drawn for labelling, with their inclusion probabilities."""

    keys: list[tuple[str, str]]
    """``(query_id, result_id)`` of each drawn item."""
    probabilities: list[float]
    pool: int
    """Items there were to draw from."""


def draw_next(
    keys: Sequence[tuple[str, str]], judge_grades: FloatArray, n: int, seed: int
) -> Drawn:
    """Draw ``n`` of ``keys`` (the unlabelled pool); ``judge_grades`` is items × judges
    (``nan`` where a judge has no grade)."""
    distinct = np.array(
        [len({g for g in row if g == g}) for row in np.atleast_2d(judge_grades)], dtype=float
    )
    size = 1.0 + np.maximum(distinct - 1.0, 0.0)
    rng = np.random.default_rng(seed)
    order = sorted(range(len(keys)), key=lambda i: keys[i][0])
    jitter = rng.permutation(len(keys))
    order = sorted(order, key=lambda i: (keys[i][0], jitter[i]))
    pi = inclusion_probabilities(size[order], n)
    picked = systematic_sample(pi, seed + 1)
    return Drawn([keys[order[i]] for i in picked], [float(pi[i]) for i in picked], len(keys))
