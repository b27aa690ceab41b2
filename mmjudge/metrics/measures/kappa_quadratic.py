"""Cohen's κ with quadratic weights: a disagreement costs the square of its distance on the
scale, so near misses cost little and far ones much (:func:`mmjudge.metrics.cohen_kappa` with
``weights="quadratic"``)."""

from __future__ import annotations

from mmjudge.metrics.catalogue import Measure, register
from mmjudge.metrics.kappa import kappa_metric

KAPPA_QUADRATIC = register(
    Measure(
        name="kappa_quadratic",
        label="κ quadratic",
        description="Cohen's κ, a disagreement weighted by its squared distance on the scale",
        statistic=lambda scale: kappa_metric(scale.grades, "quadratic"),
        order=30,
        interval=True,
        low=-1.0,
        high=1.0,
        chance=0.0,
        short="kappa_quad",
    )
)
