"""The files of an audit of production labels (``mmjudge monitor audit``): a period's labels
as the production system gives them (:func:`read_labels`), and the sample drawn from them for
people to grade again (:class:`SampledLabel`, kept as ``sample.jsonl`` in the period's folder
by :func:`write_sample` and read back by :func:`read_sample`). The people's grades come back
as TREC qrels (:mod:`mmjudge.data.qrels`) through the review file.

Layout versions of ``sample.jsonl`` (``schema_version``, on each line):

1. The first layout. Lines written before the version key existed lack it and read the
   same.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mmjudge.data.qrels import Qrels, read_qrels
from mmjudge.errors import DatasetError
from mmjudge.files import read_jsonl, write_atomic

#: A period's sample, in its folder.
SAMPLE = "sample.jsonl"
#: The sample's layout version (see the module docstring).
SAMPLE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SampledLabel:
    """One of a period's judge labels, drawn for people to grade again."""

    query_id: str
    """The item's query."""
    result_id: str
    """The item's result."""
    label: int
    """The judge's grade."""
    weight: float = 1.0
    """Labels its stratum holds over labels drawn from it."""


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


def write_sample(folder: Path, sample: Sequence[SampledLabel]) -> Path:
    """Write a period's sample into its folder (made when new), atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = "".join(
        json.dumps({"schema_version": SAMPLE_SCHEMA_VERSION, **dataclasses.asdict(s)}) + "\n"
        for s in sample
    )
    return write_atomic(folder / SAMPLE, lines)


def read_sample(folder: Path) -> list[SampledLabel]:
    """A period's sample, in the order drawn; a line that is not a sampled label is a
    :class:`~mmjudge.errors.DatasetError` naming the file and the line."""
    path = folder / SAMPLE
    sample = []
    for line_no, row in read_jsonl(path):
        try:
            sample.append(
                SampledLabel(
                    query_id=str(row["query_id"]),
                    result_id=str(row["result_id"]),
                    label=int(row["label"]),
                    weight=float(row.get("weight", 1.0)),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            raise DatasetError(
                f"{path}:{line_no}: not a sampled label (query_id, result_id, label, weight); "
                "draw the period's sample again"
            ) from None
    return sample
