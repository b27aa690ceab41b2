"""``judgments.jsonl``: a run's rows, written as they are judged and read back (whole rows,
records keyed by item, a data frame for the figures, or offsets for readers that stream)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas loads with the first summary, not before the first call
    import pandas as pd

from mmjudge.records import JudgmentRecord

JUDGMENTS = "judgments.jsonl"
SUMMARY = "summary.json"

#: Columns kept from each row (everything the metrics and report need; not raw prompts).
COLUMNS = (
    "dataset",
    "query_id",
    "result_id",
    "modality",
    "provider",
    "model",
    "prompt_id",
    "label",
    "explanation",
    "raw_output",
    "parse_error",
    "error",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "image_cost_usd",
    "latency_s",
    "cached",
    "truncated",
    "resent",
)


def iter_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of a judgments file, skipping a partial last line left by a killed run."""
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


#: The columns a run's summary reads (:func:`mmjudge.agreement.summarise.summarise_run`):
#: no answer texts, so a large run's summary holds only small values per row.
SUMMARY_COLUMNS = (
    "query_id",
    "result_id",
    "label",
    "error",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "image_cost_usd",
    "latency_s",
    "cached",
    "truncated",
    "resent",
)


def load_judgments(path: Path, keep: Sequence[str] = COLUMNS) -> pd.DataFrame:
    """One row per judgment; human grades become ``human:<annotator>`` columns and image
    tokens an ``image_tokens`` column. ``keep``: which of :data:`COLUMNS` to read."""
    import numpy as np
    import pandas as pd

    names = tuple(name for name in COLUMNS if name in keep)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    columns["image_tokens"] = []
    humans: dict[str, list[Any]] = {}
    if not path.exists():  # a run stopped before its first judgment
        path = Path(os.devnull)
    for n, row in enumerate(iter_rows(path)):
        for name in names:
            columns[name].append(row.get(name))
        columns["image_tokens"].append((row.get("usage") or {}).get("image_tokens", 0))
        for annotator, grade in (row.get("human_labels") or {}).items():
            values = humans.get(annotator)
            if values is None:  # first grade from this annotator: pad the rows before it
                values = humans[annotator] = [None] * n
            values.append(grade)
        for values in humans.values():
            if len(values) < n + 1:
                values.append(None)
    frame = pd.DataFrame(columns)
    for annotator, values in sorted(humans.items()):
        frame[f"human:{annotator}"] = pd.array(values, dtype="Int64")
    if "label" in frame:
        frame["label"] = pd.array(frame["label"].tolist(), dtype="Int64")
    for name, (missing, dtype) in _NUMBERS.items():
        if name in frame:
            frame[name] = frame[name].fillna(missing).astype(np.dtype(dtype))
    return frame


#: Numeric columns of :func:`load_judgments`: the value of a missing cell and the dtype.
_NUMBERS: dict[str, tuple[Any, str]] = {
    "input_tokens": (0, "int64"),
    "output_tokens": (0, "int64"),
    "image_tokens": (0, "int64"),
    "cost_usd": (0.0, "float64"),
    "image_cost_usd": (0.0, "float64"),
    "latency_s": (0.0, "float64"),
    "cached": (False, "bool"),
    "truncated": (False, "bool"),
    "resent": (0, "int64"),
}


def annotators(frame: pd.DataFrame) -> list[str]:
    return [c.split(":", 1)[1] for c in frame.columns if c.startswith("human:")]


def judgments_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / JUDGMENTS


def rows_with_offsets(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(byte offset, row)`` for each readable row of a judgments file, for readers that come
    back for a few whole rows later (:func:`rows_at`); a partial last line is skipped."""
    if not path.is_file():
        return
    loads = json.loads
    position = 0
    with path.open("rb") as handle:
        for line in handle:
            start = position
            position += len(line)
            try:
                row = loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield start, row


def rows_at(path: Path, offsets: Iterable[int]) -> Iterator[dict[str, Any]]:
    """The whole rows at the given byte offsets of a judgments file (``{}`` for a row that
    cannot be read)."""
    with path.open("rb") as handle:
        for offset in offsets:
            handle.seek(offset)
            try:
                row = json.loads(handle.readline())
            except ValueError:
                row = None
            yield row if isinstance(row, dict) else {}


def keep_finished_rows(run_dir: Path) -> set[str]:
    """Keys (``query_id<TAB>result_id``) already judged without error in a run folder, which
    a resumed run does not send again; failed rows are retried.

    A run killed mid-write can leave a partial last line: it is dropped, as are error rows,
    and the file is rewritten with the complete rows only.
    """
    records_path = run_dir / JUDGMENTS
    if not records_path.exists():
        return set()
    kept: list[str] = []
    keys: set[str] = set()
    with records_path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("error"):
                continue
            kept.append(line if line.endswith("\n") else line + "\n")
            keys.add(f"{row['query_id']}\t{row['result_id']}")
    tmp = records_path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(kept), encoding="utf-8")
    os.replace(tmp, records_path)
    return keys


@contextlib.contextmanager
def appending_rows(run_dir: Path) -> Iterator[Callable[[JudgmentRecord], None]]:
    """Append rows to a run's ``judgments.jsonl`` as they come, each flushed at once, so a
    run killed at any moment keeps every finished row (the file exists from the start)."""
    path = run_dir / JUDGMENTS
    path.touch()
    with path.open("a", encoding="utf-8") as out:

        def write(record: JudgmentRecord) -> None:
            out.write(record.to_json() + "\n")
            out.flush()

        yield write


def write_rows(run_dir: Path, records: Iterable[JudgmentRecord]) -> None:
    """Write a whole ``judgments.jsonl`` at once, atomically (virtual runs)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    tmp = run_dir / (JUDGMENTS + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(record.to_json() + "\n")
    os.replace(tmp, run_dir / JUDGMENTS)


def read_records(run_dir: Path) -> dict[tuple[str, str], JudgmentRecord]:
    """A run's rows as records keyed by (query, result), in file order; an item written
    twice (a resumed run) keeps its last row."""
    path = run_dir / JUDGMENTS
    if not path.is_file():
        return {}
    out: dict[tuple[str, str], JudgmentRecord] = {}
    for row in iter_rows(path):
        record = JudgmentRecord.from_dict(row)
        out[(str(record.query_id), str(record.result_id))] = record
    return out
