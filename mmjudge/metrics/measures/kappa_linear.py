"""Cohen's κ with linear weights: a disagreement costs its distance on the scale, so grading 2
for a 3 costs a third of grading 0 for it (on 0–3). Weights follow positions on the scale
(:func:`mmjudge.metrics.cohen_kappa` with ``weights="linear"``)."""

from __future__ import annotations

from mmjudge.metrics.catalogue import Measure, register
from mmjudge.metrics.kappa import kappa_metric

KAPPA_LINEAR = register(
    Measure(
        name="kappa_linear",
        label="κ linear",
        description="Cohen's κ, a disagreement weighted by its distance on the scale",
        statistic=lambda scale: kappa_metric(scale.grades, "linear"),
        order=20,
        interval=True,
        low=-1.0,
        high=1.0,
        chance=0.0,
        short="kappa_lin",
    )
)
