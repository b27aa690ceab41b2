"""Accuracy: the share of items the two graded the same (:func:`mmjudge.metrics.accuracy`).
Easy to read, but it counts agreement that chance alone would give: a judge grading every item
with the commonest grade scores that grade's share."""

from __future__ import annotations

from mmjudge.metrics.catalogue import Measure, register
from mmjudge.metrics.kappa import accuracy

ACCURACY = register(
    Measure(
        name="accuracy",
        label="accuracy",
        description="share of items graded the same",
        statistic=lambda _: accuracy,
        order=60,
        low=0.0,
        high=1.0,
    )
)
