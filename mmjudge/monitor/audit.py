"""Audits of production labels: a period's judge labels sampled by query and grade for people
to grade again, and the people's grades scored against the judge's, period after period.

- **Sampling** (:func:`stratified_sample`): the labels fall into strata, one per (query,
  grade); up to ``per_stratum`` items are drawn from each, with a seed, so every query and
  every grade the judge gave is looked at, rare grades included. Each sampled item carries
  its weight, the number of labels its stratum holds over the number drawn from it.
- **Scoring** (:func:`score_period`): the disagreement rate is the weighted share of sampled
  items whose person's grade differs from the judge's, which estimates the share over all
  the period's labels; its 95% interval resamples whole queries. The confusion table (rows:
  the judge's grade, columns: the person's) is of the sampled items, unweighted.
- **Change** (:func:`change_test`): this period's rate against the earlier periods' (pooled
  by their weights), a two-sided normal test on the difference, each standard error read off
  its bootstrap interval; and a χ² test (``statsmodels``' ``Table.test_nominal_association``)
  of whether the disagreements fall in the same cells
  of the confusion table as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge import metrics
from mmjudge.data.qrels import Qrels, read_qrels
from mmjudge.errors import DatasetError
from mmjudge.files import read_jsonl
from mmjudge.metrics.resampling import bootstrap_ci
from mmjudge.metrics.scoring import N_BOOT, SEED, none_if_nan

#: A z value of a two-sided 95% interval (to read a standard error off an interval).
Z95 = 1.959963984540054


def read_labels(path: Path) -> Qrels:
    """A period's judge labels, ``{query_id: {result_id: grade}}``: a TREC qrels file, or
    JSONL (``.jsonl``) with ``query_id``, ``result_id`` and ``label`` on each line (rows
    without a label, e.g. failed calls, are left out)."""
    if path.suffix != ".jsonl":
        return read_qrels(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such labels file")
    labels: Qrels = {}
    for line_no, row in read_jsonl(path):
        for field in ("query_id", "result_id"):
            if not isinstance(row, dict) or row.get(field) in (None, ""):
                raise DatasetError(f"{path}:{line_no}: field '{field}' is missing")
        label = row.get("label")
        if label is None:
            continue
        if isinstance(label, bool) or not isinstance(label, int | float) or label % 1:
            raise DatasetError(
                f"{path}:{line_no}: field 'label' must be a whole grade, got {label!r}"
            )
        labels.setdefault(str(row["query_id"]), {})[str(row["result_id"])] = int(label)
    return labels


def stratified_sample(labels: Qrels, per_stratum: int, seed: int) -> list[dict[str, Any]]:
    """Up to ``per_stratum`` items from each (query, grade) stratum, drawn with ``seed``:
    ``{query_id, result_id, label, weight}`` each, in query and grade order."""
    rng = np.random.default_rng(seed)
    sample = []
    for query in sorted(labels):
        strata: dict[int, list[str]] = {}
        for result, grade in labels[query].items():
            strata.setdefault(int(grade), []).append(result)
        for grade in sorted(strata):
            results = sorted(strata[grade])
            drawn = rng.choice(len(results), size=min(per_stratum, len(results)), replace=False)
            weight = len(results) / len(drawn)
            for index in sorted(drawn.tolist()):
                sample.append(
                    {
                        "query_id": query,
                        "result_id": results[index],
                        "label": grade,
                        "weight": weight,
                    }
                )
    return sample


def _weighted_share(disagree: Any, weight: Any) -> float:
    total = float(np.sum(weight))
    return float(np.sum(disagree * weight) / total) if total else math.nan


def score_period(
    sample: Sequence[dict[str, Any]],
    assessed: Qrels,
    grades: Sequence[int],
    *,
    n_boot: int = N_BOOT,
    seed: int = SEED,
) -> dict[str, Any]:
    """A period's sampled judge labels against the people's grades (``assessed``).

    Keys: n (sampled items the people graded), n_sampled, disagreement
    (``{estimate, low, high}``, weighted, 95% interval resampling queries), disagreement_se
    (its standard error, read off the interval), n_disagree, confusion (rows: the judge's
    grade, columns: the person's; on ``grades``)."""
    graded = [s for s in sample if s["result_id"] in assessed.get(s["query_id"], {})]
    judge = np.array([float(s["label"]) for s in graded])
    person = np.array([float(assessed[s["query_id"]][s["result_id"]]) for s in graded])
    weight = np.array([float(s.get("weight", 1.0)) for s in graded])
    queries = np.array([str(s["query_id"]) for s in graded])
    disagree = (judge != person).astype(float)
    rate: dict[str, float | None] = {"estimate": None, "low": None, "high": None}
    se = None
    if graded:
        ci = bootstrap_ci(_weighted_share, queries, disagree, weight, n_boot=n_boot, seed=seed)
        rate = {k: none_if_nan(getattr(ci, k)) for k in rate}
        if math.isfinite(ci.low) and math.isfinite(ci.high):
            se = (ci.high - ci.low) / (2 * Z95)
    scale = [float(g) for g in grades]
    return {
        "n": len(graded),
        "n_sampled": len(sample),
        "n_disagree": int(disagree.sum()),
        "disagreement": rate,
        "disagreement_se": se,
        "confusion": np.asarray(metrics.confusion_matrix(judge, person, scale)).tolist(),
        "grades": list(grades),
    }


def change_test(now: dict[str, Any], earlier: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """This period's figures (:func:`score_period`) against the earlier periods': the
    difference in disagreement rate with a two-sided p-value, and the χ² test of the
    confusion pattern (where the disagreements fall). None without an earlier period."""
    before = [e for e in earlier if (e.get("disagreement") or {}).get("estimate") is not None]
    if not before or now["disagreement"]["estimate"] is None:
        return None
    weights = np.array([float(e["n"]) for e in before])
    rates = np.array([float(e["disagreement"]["estimate"]) for e in before])
    ses = np.array([float(e.get("disagreement_se") or 0.0) for e in before])
    pooled = float(np.sum(weights * rates) / np.sum(weights))
    pooled_se = float(math.sqrt(np.sum((weights * ses) ** 2)) / np.sum(weights))
    difference = float(now["disagreement"]["estimate"]) - pooled
    spread = math.sqrt(float(now.get("disagreement_se") or 0.0) ** 2 + pooled_se**2)
    p_rate = math.erfc(abs(difference) / spread / math.sqrt(2)) if spread > 0 else None
    return {
        "earlier_periods": len(before),
        "earlier_disagreement": pooled,
        "difference": difference,
        "p": p_rate if p_rate is None or math.isfinite(p_rate) else None,
        "pattern_p": _pattern_p(now, before),
    }


def _off_diagonal(confusion: Any) -> np.ndarray:
    table = np.asarray(confusion, dtype=float)
    return table[~np.eye(len(table), dtype=bool)]


def _pattern_p(now: dict[str, Any], before: Sequence[dict[str, Any]]) -> float | None:
    """χ² test of homogeneity of the disagreement cells, this period against the earlier
    ones pooled (None where too few disagreements leave nothing to test)."""
    from statsmodels.stats.contingency_tables import Table

    current = _off_diagonal(now["confusion"])
    if any(len(e.get("confusion") or []) != len(now["confusion"]) for e in before):
        return None
    pooled = sum((_off_diagonal(e["confusion"]) for e in before), np.zeros_like(current))
    table = np.vstack([current, pooled])
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2 or (table.sum(axis=1) == 0).any():
        return None
    p = float(Table(table, shift_zeros=False).test_nominal_association().pvalue)
    return p if math.isfinite(p) else None


def audit_rows(
    sample: Sequence[dict[str, Any]],
    texts: dict[tuple[str, str], dict[str, str]],
    dataset: str,
    grades: Sequence[int],
    period: str,
) -> list[dict[str, Any]]:
    """The sample as rows of the review file (:mod:`mmjudge.api.review`'s layout): the
    judge's label under ``judges`` as ``production``, the grade to give in
    ``corrected_grade``."""
    rows = []
    for item in sample:
        text = texts.get((item["query_id"], item["result_id"]), {})
        rows.append(
            {
                "dataset": dataset,
                "query_id": item["query_id"],
                "query": text.get("query", ""),
                "result_id": item["result_id"],
                "result_text": text.get("result_text", ""),
                "image": text.get("image", ""),
                "thumbnail": "",
                "grades": ",".join(str(g) for g in grades),
                "human": {},
                "consensus": None,
                "judges": {"production": item["label"]},
                "reasons": [
                    f"audit {period}: stratum of query {item['query_id']}, grade {item['label']}"
                ],
                "entries": [],
                "bank": "",
                "bank_version": "",
                "corrected_grade": "",
                "add_entries": "",
                "remove_entries": "",
                "note": "",
            }
        )
    return rows
