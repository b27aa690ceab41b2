"""Krippendorff's α, ordinal: 1 − observed / expected disagreement, a disagreement costing by
how many grades lie between the two (:func:`mmjudge.metrics.krippendorff_alpha`). With the
consensus and the judge as its two raters, a judge answering at random gets α ≈ 0 however well
the assessors agree; over the judge and every assessor (pooled) or the assessors alone, on the
judge's scored items, it shows what the judge does to the assessors' own agreement."""

from __future__ import annotations

import numpy as np

from mmjudge.metrics.alpha import krippendorff_alpha
from mmjudge.metrics.catalogue import Comparison, Measure, RatersStatistic, ScoringScale, register
from mmjudge.metrics.labels import FloatArray


def _raters(_: ScoringScale) -> RatersStatistic:
    return lambda matrix: krippendorff_alpha(matrix, "ordinal")


def _two_raters(reference: FloatArray, judge: FloatArray) -> float:
    return krippendorff_alpha(np.vstack([reference, judge]), "ordinal")


ALPHA = register(
    Measure(
        name="alpha",
        label="α",
        description="Krippendorff's α, ordinal: 1 − observed / expected disagreement",
        statistic=lambda _: _two_raters,
        order=50,
        compares=frozenset({Comparison.CONSENSUS, Comparison.POOLED, Comparison.HUMANS}),
        raters=_raters,
        low=-1.0,
        high=1.0,
        chance=0.0,
    )
)
