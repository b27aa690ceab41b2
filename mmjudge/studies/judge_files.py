"""Judges given as label files (TREC qrels) against human qrels: the labels aligned pair by pair,
each judge and any panel scored with the definitions the sweep uses
(:func:`mmjudge.metrics.scoring.score_judge`), and, with system runs, how the rankings of the
systems under each judge's labels compare with the ranking under the human labels."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge import metrics
from mmjudge.data.qrels import Qrels, Run
from mmjudge.errors import MMJudgeError
from mmjudge.metrics import scoring
from mmjudge.metrics.scoring import JudgeScore
from mmjudge.studies.slices import SliceScores, score_slices

FloatArray = npt.NDArray[np.float64]

#: Combines the aligned judge matrix (judges × pairs, ``nan`` = no label) into one label
#: per pair (``nan`` where the panel gives none).
Panel = Callable[[FloatArray], FloatArray]


class Alignment(NamedTuple):
    """Human labels and every judge's labels on the human file's (query, doc) pairs."""

    query_ids: npt.NDArray[np.object_]
    """Query of each human pair, in human-file order."""
    doc_ids: npt.NDArray[np.object_]
    """Document of each human pair."""
    human: FloatArray
    """Human grade of each pair."""
    judges: FloatArray
    """Judges × pairs; ``nan`` where a judge did not label the pair."""
    names: list[str]
    """Judge names, one per row of ``judges``."""


def align(human: Qrels, judges: Mapping[str, Qrels]) -> Alignment:
    """Line every judge's labels up with the human pairs (pairs only a judge has are
    ignored: there is nothing to compare them with)."""
    pairs = [(query, doc, grade) for query, docs in human.items() for doc, grade in docs.items()]
    query_ids = np.array([p[0] for p in pairs], dtype=object)
    doc_ids = np.array([p[1] for p in pairs], dtype=object)
    labels = np.array([p[2] for p in pairs], dtype=np.float64)
    matrix = np.full((len(judges), len(pairs)), np.nan)
    for row, qrels in enumerate(judges.values()):
        matrix[row] = [qrels.get(query, {}).get(doc, math.nan) for query, doc, _ in pairs]
    return Alignment(query_ids, doc_ids, labels, matrix, list(judges))


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge's agreement with the human labels."""

    name: str
    """Judge (file stem, or ``panel:<name>``)."""
    missing: int
    """Human pairs the judge has no label for."""
    score: JudgeScore
    """κ with intervals, α, accuracy... on the pairs both label."""
    off_scale: int = 0
    """Grades in the judge's file outside the scale (refused, dropped, clipped or kept)."""
    rankings: Mapping[str, metrics.RankingAgreement] | None = None
    """System-ranking agreement per measure (with ``--runs``)."""

    @property
    def n(self) -> int:
        """Pairs both the human file and the judge label (on the scale)."""
        return self.score.n_items

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: intervals as objects, undefined values as ``None``."""
        score = self.score.as_dict()
        out: dict[str, Any] = {
            "name": self.name,
            "n": self.n,
            "n_queries": score.pop("n_queries"),
            "missing": self.missing,
            "off_scale": self.off_scale,
            **{k: v for k, v in score.items() if k not in ("n_items", "n_off_scale")},
        }
        if self.rankings is not None:
            out["rankings"] = {
                measure: {
                    "kendall_tau": _json_number(r.kendall_tau),
                    "spearman_rho": _json_number(r.spearman_rho),
                    "rbo": _json_number(r.rbo),
                    "human_scores": r.human_scores,
                    "judge_scores": r.judge_scores,
                }
                for measure, r in self.rankings.items()
            }
        return out


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else value


def score_labels(
    name: str,
    query_ids: Any,
    human: Any,
    judge: Any,
    *,
    grades: Sequence[float] | None = None,
    relevant_from: float | None = None,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    level: float = scoring.LEVEL,
) -> JudgeAgreement:
    """Agreement of one judge's labels (``nan`` = none) with aligned human labels, by
    :func:`mmjudge.metrics.scoring.score_judge`. ``n_boot=0`` skips the bootstrap."""
    h, j = metrics.as_labels(human), metrics.as_labels(judge)
    score = scoring.score_judge(
        query_ids,
        h,
        j,
        grades,
        relevant_from=relevant_from,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )
    return JudgeAgreement(name, int((~np.isnan(h) & np.isnan(j)).sum()), score)


def score_alignment(
    alignment: Alignment,
    *,
    panels: Mapping[str, Panel] | None = None,
    grades: Sequence[float] | None = None,
    relevant_from: float | None = None,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    level: float = scoring.LEVEL,
    off_scale: Mapping[str, int] | None = None,
    systems: Mapping[str, Run] | None = None,
    measures: Sequence[Any] | None = None,
) -> list[JudgeAgreement]:
    """Score every judge row of ``alignment``, then every panel's combined labels; with
    ``systems`` (TREC runs by name), also the system-ranking agreement of each."""
    scale = list(grades) if grades is not None else whole_scale(alignment)
    threshold = scoring.relevance_threshold(np.asarray(scale, dtype=float), relevant_from)
    rows = [(name, alignment.judges[i]) for i, name in enumerate(alignment.names)]
    rows += [(f"panel:{name}", panel(alignment.judges)) for name, panel in (panels or {}).items()]
    out = []
    for name, labels in rows:
        row = score_labels(
            name,
            alignment.query_ids,
            alignment.human,
            labels,
            grades=scale,
            relevant_from=threshold,
            n_boot=n_boot,
            seed=seed,
            level=level,
        )
        rankings = None
        if systems is not None:
            rankings = metrics.system_ranking_on_shared_items(
                alignment.query_ids,
                alignment.doc_ids,
                alignment.human,
                labels,
                systems,
                measures=measures,
                relevant_from=math.ceil(threshold),
            )
        out.append(
            dataclasses.replace(row, off_scale=(off_scale or {}).get(name, 0), rankings=rankings)
        )
    return out


def parse_measures(texts: Sequence[str], relevant_from: float) -> list[Any]:
    """ir_measures measures from their names; default nDCG@10 and P@10 at ``relevant_from``."""
    import ir_measures

    if not texts:
        return [ir_measures.nDCG @ 10, ir_measures.P(rel=math.ceil(relevant_from)) @ 10]
    out = []
    for text in texts:
        try:
            out.append(ir_measures.parse_measure(text))
        except (ValueError, NameError, TypeError, SyntaxError):
            raise MMJudgeError(
                f"--measure {text!r} is not an ir_measures measure "
                "(e.g. nDCG@10, P(rel=2)@10, AP(rel=2), RR(rel=2))"
            ) from None
    return out


def whole_scale(alignment: Alignment) -> list[float]:
    """Every whole number from the lowest to the highest grade in the human and run files."""
    values = np.concatenate([alignment.human, alignment.judges.ravel()])
    values = values[~np.isnan(values)]
    if values.size == 0:
        return []
    return [float(g) for g in range(int(values.min()), int(values.max()) + 1)]


def score_by_slice(
    alignment: Alignment,
    names: Sequence[str | None],
    grades: Sequence[float],
    relevant_from: float,
    *,
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    level: float = scoring.LEVEL,
) -> dict[str, SliceScores]:
    """Each judge of ``alignment`` scored slice by slice (``names``: each human pair's
    slice, None for none) by :func:`mmjudge.studies.slices.score_slices`."""
    return {
        name: score_slices(
            alignment.query_ids,
            names,
            alignment.human,
            labels,
            grades,
            relevant_from=relevant_from,
            n_boot=n_boot,
            seed=seed,
            level=level,
        )
        for name, labels in zip(alignment.names, alignment.judges, strict=True)
    }
