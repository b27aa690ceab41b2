"""κ on binarised grades: both raters' grades cut at ``relevant_from`` (relevant or not),
then unweighted κ (:func:`mmjudge.metrics.binary_kappa`). What a judge is worth to a metric
that only asks whether a result is relevant, such as precision."""

from __future__ import annotations

import functools

from mmjudge.metrics.catalogue import Measure, register
from mmjudge.metrics.kappa import binary_kappa

KAPPA_BINARY = register(
    Measure(
        name="kappa_binary",
        label="κ binary",
        description="Cohen's κ on grades cut at relevant_from: relevant or not",
        statistic=lambda scale: functools.partial(binary_kappa, relevant_from=scale.relevant_from),
        order=40,
        low=-1.0,
        high=1.0,
        chance=0.0,
        short="kappa_bin",
    )
)
