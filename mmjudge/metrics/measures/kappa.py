"""Cohen's κ, unweighted: agreement beyond chance on the grade itself, every disagreement
counting alike. The headline measure: judges are ranked, charted and chosen by it.

κ = (p_o − p_e) / (1 − p_e), with p_o the share of items graded the same and p_e the share
expected from the two raters' grade frequencies alone; the scale's grades are the categories
(:func:`mmjudge.metrics.cohen_kappa`, which matches scikit-learn's ``cohen_kappa_score``)."""

from __future__ import annotations

from mmjudge.metrics.catalogue import Comparison, Measure, register
from mmjudge.metrics.kappa import kappa_metric

KAPPA = register(
    Measure(
        name="kappa",
        label="κ",
        description="Cohen's κ, unweighted: agreement on the grade beyond chance",
        statistic=lambda scale: kappa_metric(scale.grades),
        order=10,
        compares=frozenset(
            {Comparison.CONSENSUS, Comparison.EACH_ASSESSOR, Comparison.HUMAN_HUMAN}
        ),
        interval=True,
        low=-1.0,
        high=1.0,
        chance=0.0,
    )
)
