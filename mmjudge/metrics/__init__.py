"""Agreement between a judge's labels and human labels: pure functions of label arrays, one
import for all of them (each lives in its own module of :mod:`mmjudge.metrics`).

Conventions shared by every function here:

- A label array is one-dimensional and numeric (whole-number grades). ``None``, ``NaN`` and
  ``pd.NA`` mean "no label" (an unparseable judge answer, an item an annotator skipped).
- Two-rater metrics (κ, accuracy, MAE, confusion matrix) use only the items where both
  labels are present; the caller reports how many were dropped (``scoring.agreement_summary``
  does, as ``n_unparseable`` and ``unparseable_rate``).
- Undefined values (no items, or κ when chance agreement is already perfect) are ``nan``.
- Everything is vectorised with numpy, so a million rows cost a fraction of a second.

Bootstrap intervals resample *queries*, not rows: results of one query share the query's
difficulty, so treating them as independent would make intervals too narrow.
"""

from __future__ import annotations

from mmjudge.metrics.alpha import krippendorff_alpha
from mmjudge.metrics.kappa import (
    accuracy,
    binarise,
    binary_kappa,
    cohen_kappa,
    confusion_matrix,
    default_relevant_from,
    label_distribution,
    mean_absolute_error,
)
from mmjudge.metrics.labels import FloatArray, LabelSet, Level, Weights, as_labels, consensus
from mmjudge.metrics.pairwise import PairwiseAgreement, pairwise_preference_agreement
from mmjudge.metrics.ranking import (
    RankingAgreement,
    kendall_tau,
    rank_biased_overlap,
    spearman_rho,
    system_ranking_agreement,
    system_ranking_on_shared_items,
)
from mmjudge.metrics.resampling import (
    BootstrapResult,
    PairedBootstrapResult,
    bootstrap_ci,
    bootstrap_ci_many,
    paired_bootstrap,
)

__all__ = [
    "BootstrapResult",
    "FloatArray",
    "LabelSet",
    "Level",
    "PairedBootstrapResult",
    "PairwiseAgreement",
    "RankingAgreement",
    "Weights",
    "accuracy",
    "as_labels",
    "binarise",
    "binary_kappa",
    "bootstrap_ci",
    "bootstrap_ci_many",
    "cohen_kappa",
    "confusion_matrix",
    "consensus",
    "default_relevant_from",
    "kendall_tau",
    "krippendorff_alpha",
    "label_distribution",
    "mean_absolute_error",
    "paired_bootstrap",
    "pairwise_preference_agreement",
    "rank_biased_overlap",
    "spearman_rho",
    "system_ranking_agreement",
    "system_ranking_on_shared_items",
]
