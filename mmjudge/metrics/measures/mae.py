"""Mean absolute error: how many grades apart the two are on average
(:func:`mmjudge.metrics.mean_absolute_error`); 0 is perfect and the worst is the scale's
width, so it reads in grades, not beyond chance."""

from __future__ import annotations

import math

from mmjudge.metrics.catalogue import Measure, register
from mmjudge.metrics.kappa import mean_absolute_error

MAE = register(
    Measure(
        name="mae",
        label="MAE",
        description="mean absolute grade difference (at most the scale's width)",
        statistic=lambda _: mean_absolute_error,
        order=70,
        low=0.0,
        high=math.inf,
        higher_is_better=False,
    )
)
