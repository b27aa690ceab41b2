"""A run's rows scored against the annotators: the agreement figures of its ``summary.json``,
the same for real runs and virtual ones (the summary is written by
:func:`mmjudge.engine.summarise.summarise_run`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from mmjudge.data.qrels import Qrels
from mmjudge.data.schema import item_key
from mmjudge.metrics import scoring
from mmjudge.store import Agreement, annotators


def scored(keys: Sequence[str], leave_out: frozenset[str]) -> list[bool]:
    """Whether each item (by key) counts in a judge's agreement figures: every item but those
    in ``leave_out``, the items a trained judge learnt from (κ on them is no held-out figure).
    The one rule a run's summary, the report and ``mmjudge agree`` follow."""
    return [key not in leave_out for key in keys]


class HeldOut(NamedTuple):
    """Qrels without the items a trained judge learnt from."""

    qrels: Qrels
    """The pairs left to score."""
    n_left_out: int
    """Pairs taken out."""


def held_out_qrels(qrels: Qrels, leave_out: frozenset[str]) -> HeldOut:
    """``qrels`` less the pairs in ``leave_out`` (by :func:`item_key`), as :func:`scored`
    decides."""
    out: Qrels = {}
    dropped = 0
    for query, docs in qrels.items():
        keep = scored([item_key(query, doc) for doc in docs], leave_out)
        dropped += keep.count(False)
        kept = {doc: grade for (doc, grade), k in zip(docs.items(), keep, strict=True) if k}
        if kept:
            out[query] = kept
    return HeldOut(out, dropped)


def item_keys(frame: pd.DataFrame) -> list[str]:
    """Each row's item key, ``query_id<TAB>result_id`` (as a trained judge's manifest lists
    them)."""
    if not len(frame):
        return []
    return (frame["query_id"].astype(str) + "\t" + frame["result_id"].astype(str)).tolist()


def agreement(
    frame: pd.DataFrame,
    grades: list[int],
    relevant_from: float,
    *,
    leave_out: frozenset[str] = frozenset(),
) -> Agreement:
    """The judge against the annotators' consensus
    (:func:`~mmjudge.metrics.scoring.agreement_summary`: κ with intervals, α, accuracy...),
    with the human–human ceiling. Answered rows only; an item written twice (a resumed run)
    counts once, its last row, as in the report. ``leave_out``: keys of items not to score
    (those a trained judge learnt from: κ on them is no held-out figure); the report leaves
    the same items out (:attr:`mmjudge.store.RunSummary.trained_on`)."""
    if leave_out and len(frame):
        frame = frame[scored(item_keys(frame), leave_out)]
    answered = frame[frame["error"].isna()] if len(frame) else frame
    names = annotators(answered)
    if not names or answered.empty:
        return Agreement(n=0)
    answered = answered.drop_duplicates(["query_id", "result_id"], keep="last")
    human = {
        name: answered[f"human:{name}"].to_numpy(dtype=float, na_value=np.nan) for name in names
    }
    judge = answered["label"].to_numpy(dtype=float, na_value=np.nan)
    return scoring.agreement_summary(
        judge,
        human,
        grades=grades,
        query_ids=answered["query_id"].astype(str).to_numpy(),
        relevant_from=relevant_from,
    )
