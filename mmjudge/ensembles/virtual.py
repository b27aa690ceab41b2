"""Virtual runs: an ensemble's rows, combined from the rows its members paid for, written as a
run folder (``judgments.jsonl`` and ``summary.json`` in the layout of real runs) so the
report and the commands read it like any other run.

Cost of an ensemble judgment: the sum of the costs of the member rows it used (text and
image parts alike, failed calls included); tokens and usage buckets add up the same way. An
item no member labels stays unlabelled: an error when every member's call failed, else
unparseable.

Members judged with ``runner.samples`` above 1 give the ensemble samples of its own: its
sample k is formed, by the same rule, from the members' sample-k rows (:func:`sample_views`)
and written to its ``samples.jsonl``, so its summary has a ``stability`` block of its own
(κ between its samples, its unstable items) and its repeats are priced from the members'
repeats. It has as many samples as its member with the fewest.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from mmjudge.engine.summarise import RunEnd, summarise_run
from mmjudge.metrics import default_relevant_from
from mmjudge.records import SCHEMA_VERSION, JudgmentRecord
from mmjudge.store import (
    CellInfo,
    CellStatus,
    Ensemble,
    Key,
    Member,
    RunSummary,
    SavedRun,
    SummaryParts,
    write_rows,
    write_sample_rows,
)
from mmjudge.studies.members import joined


class Combined(NamedTuple):
    """What an ensemble decided for one item."""

    label: float
    """The grade (``nan``: none)."""
    explanation: str
    """How it was reached (the members' votes, the escalation)."""
    latency_s: float
    """Its latency."""


def _sum_usage(rows: Iterable[JudgmentRecord]) -> dict[str, int]:
    total: dict[str, int] = {}
    for row in rows:
        for key, value in (row.usage or {}).items():
            total[key] = total.get(key, 0) + int(value or 0)
    return total


def combined_record(
    run_id: str,
    runs: Sequence[SavedRun],
    key: Key,
    rows: Sequence[JudgmentRecord | None],
    *,
    provider: str,
    model: str,
    combined: Combined,
) -> JudgmentRecord:
    """One virtual row from the rows its members paid for (``None``: not paid for)."""
    paid = [row for row in rows if row is not None]
    first = next(run.rows[key] for run in runs if key in run.rows)
    parse_error = error = None
    label = combined.label
    if math.isnan(label):
        if paid and all(row.error for row in paid):
            error = f"no member answered ({paid[0].error})"
        else:
            parse_error = "no member gave a parseable grade"
    images = list(dict.fromkeys(h for row in paid for h in row.image_sha256s or []))
    return JudgmentRecord(
        run_id=run_id,
        dataset=str(first.dataset),
        query_id=key[0],
        result_id=key[1],
        modality=joined(row.modality for row in paid) or str(first.modality),
        provider=provider,
        model=model,
        prompt_id=joined(row.prompt_id for row in paid) or str(first.prompt_id),
        prompt_hash=None,
        image_sha256s=images,
        raw_output=None,
        label=None if math.isnan(label) else int(label),
        explanation=combined.explanation,
        parse_error=parse_error,
        human_labels=dict(first.human_labels or {}),
        input_tokens=sum(int(row.input_tokens or 0) for row in paid),
        output_tokens=sum(int(row.output_tokens or 0) for row in paid),
        cost_usd=sum(float(row.cost_usd or 0.0) for row in paid),
        latency_s=round(combined.latency_s, 6),
        cached=bool(paid) and all(bool(row.cached) for row in paid),
        error=error,
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        usage=_sum_usage(paid),
        image_cost_usd=sum(float(row.image_cost_usd or 0.0) for row in paid),
        truncated=any(bool(row.truncated) for row in paid),
        schema_version=SCHEMA_VERSION,
    )


def sample_views(runs: Sequence[SavedRun]) -> list[list[SavedRun]]:
    """The members once per sample: ``[runs at sample 0, runs at sample 1, ...]``, as many
    samples as the member with the fewest has (one for members without repeats)."""
    each = [run.samples() for run in runs]
    count = min(len(samples) for samples in each)
    return [[samples[k] for samples in each] for k in range(count)]


def member(run: SavedRun, out_dir: Path, role: str) -> Member:
    """How an ensemble's summary lists one of its runs."""
    try:
        where = os.path.relpath(run.run_dir, out_dir)
    except ValueError:  # another drive
        where = str(run.run_dir)
    cell = run.summary.cell
    return Member(
        role=role,
        run_id=run.summary.run_id or run.run_dir.name,
        run_dir=where,
        model=cell.model,
        prompt_id=cell.prompt_id,
        modality=cell.modality,
        kappa=run.summary.metrics.kappa,
        usd_per_million=run.usd_per_million,
    )


def write_virtual_run(
    out_dir: Path,
    records: Sequence[JudgmentRecord],
    runs: Sequence[SavedRun],
    *,
    kind: str,
    model: str,
    grades: list[int],
    relevant_from: float | None,
    ensemble: Ensemble,
    repeats: Mapping[int, Sequence[JudgmentRecord]] | None = None,
) -> RunSummary:
    """Write ``records`` (and ``repeats``, the rows of samples 1, 2, ... by sample number)
    and a summary computed from them, in the layout of real runs."""
    write_rows(out_dir, records)
    write_sample_rows(out_dir, repeats or {})
    threshold = relevant_from if relevant_from is not None else default_relevant_from(grades)
    cell = CellInfo(
        dataset=runs[0].summary.cell.dataset,
        model=model,
        model_id=model,
        provider=kind,
        modality=joined(run.summary.cell.modality for run in runs),
        prompt_id=joined(run.summary.cell.prompt_id for run in runs),
        pricing_sheet=joined(run.summary.cell.pricing_sheet for run in runs),
        grades=grades,
        kind=kind,
    )
    return summarise_run(
        out_dir,
        cell,
        relevant_from=int(threshold),
        config={"ensemble": {"kind": kind, **ensemble.settings(kind)}},
        end=RunEnd(status=CellStatus()),
        parts=SummaryParts(ensemble=ensemble),
    )
