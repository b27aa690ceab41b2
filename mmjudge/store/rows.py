"""``judgments.jsonl``: a run's rows, written as they are judged and read back (whole rows,
records keyed by item, a data frame for the figures, or offsets for readers that stream)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

if TYPE_CHECKING:  # pandas loads with the first summary, not before the first call
    import pandas as pd

import msgspec

from mmjudge.files import atomic_file, read_jsonl, write_atomic
from mmjudge.records import SCHEMA_VERSION, JudgmentRecord

JUDGMENTS = "judgments.jsonl"
#: The repeated answers of a run with ``runner.samples`` above 1: rows of the same layout
#: with a ``sample`` number (1, 2, ...); sample 0 is the run's own row in ``judgments.jsonl``,
#: so every reader of that file sees one row per item, as without samples.
SAMPLES = "samples.jsonl"
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
    "possibly_billed",
    "possibly_billed_usd",
    "instructions",
    "call_id",
    "call_position",
    "call_size",
    "reasked",
)


def iter_rows(path: Path) -> Iterator[dict[str, Any]]:
    """Rows of a judgments file, skipping a partial last line left by a killed run (read by
    :func:`mmjudge.files.read_jsonl`, leniently)."""
    for _, row in read_jsonl(path, strict=False):
        yield row


#: Columns that name the cell (the same on every row) or hold answer texts.
_NOT_SCORED = frozenset(
    {"dataset", "modality", "provider", "model", "prompt_id", "explanation", "raw_output"}
    | {"parse_error", "call_id"}
)

#: The columns a run's summary reads (:func:`mmjudge.engine.summarise.summarise_run`):
#: no answer texts, so a large run's summary holds only small values per row.
SUMMARY_COLUMNS = tuple(name for name in COLUMNS if name not in _NOT_SCORED)


#: Buckets of a row's ``usage`` that :func:`load_judgments` gives a column each.
USAGE_COLUMNS = (
    "image_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
)


def load_judgments(path: Path, keep: Sequence[str] = COLUMNS) -> pd.DataFrame:
    """One row per judgment; human grades become ``human:<annotator>`` columns, the usage
    buckets of :data:`USAGE_COLUMNS` a column each and whether the call went through a
    batch API a ``batch`` column. ``keep``: which of :data:`COLUMNS` to read."""
    import numpy as np
    import pandas as pd

    names = tuple(name for name in COLUMNS if name in keep)
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for bucket in USAGE_COLUMNS:
        columns[bucket] = []
    columns["batch"] = []
    humans: dict[str, list[Any]] = {}
    if not path.exists():  # a run stopped before its first judgment
        path = Path(os.devnull)
    for n, row in enumerate(iter_rows(path)):
        for name in names:
            columns[name].append(row.get(name))
        usage = row.get("usage") or {}
        for bucket in USAGE_COLUMNS:
            columns[bucket].append(usage.get(bucket, 0))
        columns["batch"].append(bool(row.get("batch")))
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
    for whole in ("label", "call_position", "call_size"):  # null where a row has none
        if whole in frame:
            frame[whole] = pd.array(frame[whole].tolist(), dtype="Int64")
    for name, (missing, dtype) in _NUMBERS.items():
        if name in frame:
            frame[name] = frame[name].fillna(missing).astype(np.dtype(dtype))
    return frame


#: Numeric columns of :func:`load_judgments`: the value of a missing cell and the dtype.
_NUMBERS: dict[str, tuple[Any, str]] = {
    "input_tokens": (0, "int64"),
    "output_tokens": (0, "int64"),
    "image_tokens": (0, "int64"),
    "cached_input_tokens": (0, "int64"),
    "cache_write_tokens": (0, "int64"),
    "cache_write_1h_tokens": (0, "int64"),
    "batch": (False, "bool"),
    "cost_usd": (0.0, "float64"),
    "image_cost_usd": (0.0, "float64"),
    "latency_s": (0.0, "float64"),
    "cached": (False, "bool"),
    "truncated": (False, "bool"),
    "resent": (0, "int64"),
    "possibly_billed": (0, "int64"),
    "possibly_billed_usd": (0.0, "float64"),
    "reasked": (False, "bool"),
}


def annotators(frame: pd.DataFrame) -> list[str]:
    return [c.split(":", 1)[1] for c in frame.columns if c.startswith("human:")]


def judgments_path(run_dir: str | Path) -> Path:
    return Path(run_dir) / JUDGMENTS


#: What the statistics read from each row.
LABEL_FIELDS = ("query_id", "result_id", "label", "human_labels", "error")
_WRITTEN_HERE = f', "schema_version": {SCHEMA_VERSION}}}'.encode()
_WRITTEN_HERE_LINE = _WRITTEN_HERE + b"\n"


class _LabelFields(msgspec.Struct, gc=False):
    """The ``LABEL_FIELDS`` of a row: msgspec decodes these and skips every other value
    without building it."""

    query_id: Any = None
    result_id: Any = None
    label: Any = None
    human_labels: msgspec.Raw = msgspec.Raw(b"null")
    """Kept as JSON text: most rows' items are known already (:func:`human_grades`)."""
    error: Any = None


_decode_label_fields = msgspec.json.Decoder(_LabelFields).decode

LabelRow = tuple[Any, Any, Any, Any, Any]
"""A row's ``LABEL_FIELDS`` values (``None`` where the row lacks one)."""


def label_rows(path: Path) -> Iterator[tuple[int, LabelRow]]:
    """``(byte offset, LABEL_FIELDS values)`` for each readable row of a judgments file; a
    partial last line is skipped. The same values as decoding each whole row gives, in
    about a third of the time on rows this version wrote: only these five fields are
    decoded (by msgspec, which skips the others without building them), and the human
    grades may come as JSON text, which :func:`human_grades` reads (most rows' items are
    known already, so their grades are never needed).

    Rows this version wrote (they end with the schema version, as ``to_json`` writes them:
    one object, no key twice) go to msgspec; any other row, and one msgspec refuses (``NaN``,
    ``Infinity`` or a number beyond a float's range, which ``json.loads`` reads), is decoded
    whole with ``json.loads``."""
    if not path.is_file():
        return
    position = 0
    decode = _decode_label_fields
    with path.open("rb") as handle:
        for raw in handle:
            start = position
            position += len(raw)
            if raw.endswith(_WRITTEN_HERE_LINE) or raw.endswith(_WRITTEN_HERE):
                try:
                    row = decode(raw)
                except msgspec.MsgspecError:
                    pass
                else:
                    yield (
                        start,
                        (row.query_id, row.result_id, row.label, row.human_labels, row.error),
                    )
                    continue
            values = _label_values_decoded(raw)
            if values is not None:
                yield start, values


def human_grades(value: Any) -> Any:
    """A row's ``human_labels`` from :func:`label_rows`, decoded (as ``json.loads`` reads it)
    where it was kept as JSON text."""
    if not isinstance(value, msgspec.Raw):
        return value
    try:
        return msgspec.json.decode(value)
    except msgspec.MsgspecError:  # NaN, Infinity, 1e400: JSON that json.loads reads
        return json.loads(bytes(value))


def _label_values_decoded(raw: bytes) -> LabelRow | None:
    try:
        row = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(row, dict):
        return None
    query_id, result_id, label, human_labels, error = (row.get(n) for n in LABEL_FIELDS)
    return query_id, result_id, label, human_labels, error


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


def keep_finished_rows(run_dir: Path, name: str = JUDGMENTS) -> set[str]:
    """Keys (``query_id<TAB>result_id``, then ``<TAB>#<sample>`` for a row of
    ``samples.jsonl``) already judged without error in a run folder's file ``name``, which a
    resumed run does not send again; failed rows are retried.

    A run killed mid-write can leave a partial last line: it is dropped, as are error rows,
    and the file is rewritten with the complete rows only.
    """
    records_path = run_dir / name
    if not records_path.exists():
        return set()
    kept: list[str] = []
    keys: set[str] = set()
    # Its own loop, not read_jsonl: each kept row is written back as the text it was read as.
    with records_path.open(encoding="utf-8") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if row.get("error"):
                continue
            kept.append(line if line.endswith("\n") else line + "\n")
            key = f"{row['query_id']}\t{row['result_id']}"
            keys.add(f"{key}\t#{row['sample']}" if row.get("sample") else key)
    write_atomic(records_path, "".join(kept))
    return keys


class RowWriter(Protocol):
    """Writes one row (a repeat's with its ``sample`` number, see :func:`sample_row`), or the
    rows of one call about several results together."""

    def __call__(self, record: JudgmentRecord, sample: int = 0) -> None: ...

    def together(self, records: Sequence[JudgmentRecord]) -> None:
        """Write ``records`` in one write, flushed once: a run killed meanwhile keeps all of
        them or none but a partial last line (which a resume drops), so a call about several
        results is never left with some of its rows."""
        ...


class _Appender:
    """The :class:`RowWriter` of :func:`appending_rows` over an open file."""

    def __init__(self, out: TextIO) -> None:
        self._out = out

    def __call__(self, record: JudgmentRecord, sample: int = 0) -> None:
        self._out.write(sample_row(record, sample) + "\n")
        self._out.flush()

    def together(self, records: Sequence[JudgmentRecord]) -> None:
        self._out.write("".join(record.to_json() + "\n" for record in records))
        self._out.flush()


@contextlib.contextmanager
def appending_rows(run_dir: Path, name: str = JUDGMENTS) -> Iterator[RowWriter]:
    """Append rows to a run's ``judgments.jsonl`` (or the file ``name``) as they come, each
    flushed at once, so a run killed at any moment keeps every finished row (the file exists
    from the start).

    Not :func:`mmjudge.files.append_jsonl`: this is the run's hot path, one open handle
    flushed per row rather than an open, a lock and an ``fsync`` per row; a partial last line
    a kill leaves is dropped on resume by :func:`keep_finished_rows`."""
    path = run_dir / name
    path.touch()
    with path.open("a", encoding="utf-8") as out:
        yield _Appender(out)


def sample_row(record: JudgmentRecord, sample: int) -> str:
    """A record's row as written, with its ``sample`` number first when it is a repeat."""
    text = record.to_json()
    return text if sample == 0 else f'{{"sample": {int(sample)}, {text[1:]}'


def write_rows(run_dir: Path, records: Iterable[JudgmentRecord]) -> None:
    """Write a whole ``judgments.jsonl`` at once, atomically (virtual runs)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    with atomic_file(run_dir / JUDGMENTS) as handle:
        for record in records:
            handle.write(record.to_json() + "\n")


def write_sample_rows(run_dir: Path, repeats: Mapping[int, Iterable[JudgmentRecord]]) -> None:
    """Write a whole ``samples.jsonl`` at once, atomically: the rows of each repeat (sample
    1, 2, ...) with their sample number (virtual runs). No repeats: no file, and an earlier
    one is removed so it cannot outlive the rows it was judged with."""
    path = run_dir / SAMPLES
    if not repeats:
        path.unlink(missing_ok=True)
        return
    with atomic_file(path) as handle:
        for sample in sorted(repeats):
            for record in repeats[sample]:
                handle.write(sample_row(record, sample) + "\n")


def read_sample_records(run_dir: Path) -> dict[int, dict[tuple[str, str], JudgmentRecord]]:
    """A run's repeats (``samples.jsonl``) by sample number (1, 2, ...), each keyed by
    (query, result) as :func:`read_records` keys the first answers; ``{}`` without repeats."""
    path = run_dir / SAMPLES
    out: dict[int, dict[tuple[str, str], JudgmentRecord]] = {}
    if not path.is_file():
        return out
    for row in iter_rows(path):
        record = JudgmentRecord.from_dict(row)
        by_key = out.setdefault(int(row.get("sample") or 0), {})
        by_key[(str(record.query_id), str(record.result_id))] = record
    return out


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
