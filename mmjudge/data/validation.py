"""Checks shared by every loader; each failure names the file, line and field."""

from __future__ import annotations

import codecs
import csv
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.errors import ConfigError, DatasetError


def where(path: Path, line: int | None = None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def check_grade(value: object, grades: list[int], path: Path, line: int, annotator: str) -> int:
    """A human grade must be an integer on the declared scale."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise DatasetError(
            f"{where(path, line)}: field 'labels.{annotator}' must be a number on the scale "
            f"{grades}, got {value!r}"
        )
    try:
        number = float(value)
    except ValueError:
        raise DatasetError(
            f"{where(path, line)}: field 'labels.{annotator}' must be a number on the scale "
            f"{grades}, got {value!r}"
        ) from None
    if not number.is_integer() or int(number) not in grades:
        raise DatasetError(
            f"{where(path, line)}: field 'labels.{annotator}' is {value!r}, outside the "
            f"declared scale {grades}; fix the label or the dataset's scale.grades"
        )
    return int(number)


def resolve_image(raw: object, root: Path, path: Path, line: int) -> tuple[str, str]:
    """Resolve one image reference to (absolute path or URL, name as written).

    URLs pass through; local paths must be relative, stay inside the dataset root and exist.
    """
    if not isinstance(raw, str) or not raw.strip():
        raise DatasetError(
            f"{where(path, line)}: field 'images' must hold non-empty path strings, got {raw!r}"
        )
    if raw.startswith(("http://", "https://")):
        return raw, raw
    candidate = Path(raw)
    if candidate.is_absolute():
        raise DatasetError(
            f"{where(path, line)}: field 'images' has absolute path '{raw}'; "
            "use a path relative to the dataset root"
        )
    resolved = (root / candidate).resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise DatasetError(
            f"{where(path, line)}: field 'images' path '{raw}' escapes the dataset root {root}; "
            "keep images inside the dataset folder"
        )
    if not resolved.is_file():
        raise DatasetError(
            f"{where(path, line)}: field 'images' names '{raw}', which does not exist under {root}"
        )
    return str(resolved), raw


class DuplicateCheck:
    """Remembers (query, result) pairs to reject duplicates with both line numbers."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen: dict[tuple[str, str], int] = {}

    def add(self, query_id: str, result_id: str, line: int) -> None:
        key = (query_id, result_id)
        first = self.seen.get(key)
        if first is not None:
            raise DatasetError(
                f"{where(self.path, line)}: duplicate pair query_id='{query_id}', "
                f"result_id='{result_id}' (first seen on line {first}); keep one row per pair"
            )
        self.seen[key] = line


# --- Reading text files: encodings, CSV headers and rows -------------------------------------


def check_encoding(encoding: str) -> str:
    """The codec to open files with; ``utf-8`` also accepts a leading byte-order mark."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        raise ConfigError(
            f"dataset.encoding='{encoding}' is not a known text encoding; use e.g. utf-8, "
            "latin-1 or cp1252"
        ) from None
    return "utf-8-sig" if name == "utf-8" else encoding


def text_lines(path: Path, encoding: str) -> Iterator[str]:
    """Stream a text file's lines (line endings kept) in the dataset's encoding.

    A byte sequence the encoding cannot decode stops the stream with a :class:`DatasetError`
    naming the file, the line, the encoding tried and the fix.
    """
    codec = check_encoding(encoding)
    try:
        with path.open("r", encoding=codec, newline="") as handle:
            yield from handle
    except UnicodeDecodeError:
        raise DatasetError(_decode_error_message(path, encoding, codec)) from None


def _decode_error_message(path: Path, encoding: str, codec: str) -> str:
    """Find the first line that does not decode (a second pass over the raw bytes)."""
    line_no: int | None = None
    detail = ""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                raw.decode(codec)
            except UnicodeDecodeError as exc:
                line_no = number
                detail = f" (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                break
    return (
        f"{where(path, line_no)}: cannot be decoded as {encoding}{detail}; set "
        "dataset.encoding=latin-1 (or the file's actual encoding, e.g. cp1252) or re-save "
        "the file as UTF-8"
    )


class CsvRow(NamedTuple):
    line: int
    """Line number (1-based) where the row starts."""
    values: dict[str, str]
    """Cell text keyed by column name."""


class CsvTable:
    """A delimited text file read as a header and then a stream of rows.

    The header is read when the table is opened; :meth:`rows` streams the rest, one row at a
    time, so a file of any size can be read in constant memory.
    """

    def __init__(self, path: Path, encoding: str, delimiter: str = ",") -> None:
        self.path = path
        self.delimiter = delimiter
        self._reader = csv.reader(text_lines(path, encoding), delimiter=delimiter)
        header = self._next()
        while header is not None and not any(cell.strip() for cell in header):
            header = self._next()
        if header is None:
            raise DatasetError(f"{path}: the file is empty; it needs a header row of columns")
        self.columns = [cell.strip() for cell in header]
        seen: set[str] = set()
        for name in self.columns:
            if name in seen:
                raise DatasetError(
                    f"{where(path, self._reader.line_num)}: the header names column '{name}' "
                    "twice; give every column a distinct name"
                )
            seen.add(name)

    def _next(self) -> list[str] | None:
        try:
            return next(self._reader)
        except StopIteration:
            return None
        except csv.Error as exc:
            raise DatasetError(
                f"{where(self.path, self._reader.line_num)}: not valid CSV ({exc})"
            ) from None

    def require(self, wanted: Iterable[str], purpose: str) -> None:
        """Fail once, at the header, naming every missing column and the columns there are."""
        missing = [name for name in dict.fromkeys(wanted) if name not in self.columns]
        if missing:
            raise DatasetError(
                f"{where(self.path, 1)}: missing column(s) {', '.join(missing)} ({purpose}); "
                f"the file has columns: {', '.join(self.columns)}"
            )

    def rows(self) -> Iterator[CsvRow]:
        """Stream the data rows; blank lines are skipped, ragged rows are errors."""
        width = len(self.columns)
        previous = self._reader.line_num
        while True:
            values = self._next()
            if values is None:
                return
            start, previous = previous + 1, self._reader.line_num
            if not any(cell.strip() for cell in values):
                continue
            if len(values) != width:
                raise DatasetError(
                    f"{where(self.path, start)}: has {len(values)} values but the header has "
                    f"{width} columns; quote values that contain '{self.delimiter}'"
                )
            yield CsvRow(start, dict(zip(self.columns, values, strict=True)))


def dataset_file(root: Path, name: str) -> Path:
    """A file named in the config: absolute as given, relative ones under the dataset root."""
    path = Path(name).expanduser()
    return path if path.is_absolute() else root / path


def require_file(path: Path, what: str, setting: str) -> Path:
    if not path.is_file():
        raise DatasetError(f"{path}: {what} is not here; check dataset.path and {setting}")
    return path


# --- Text budget -----------------------------------------------------------------------------

#: Tokens per whitespace-separated word: a rough average for English text in BPE tokenizers.
TOKENS_PER_WORD = 1.3

_WORD = re.compile(r"\S+")


def approx_tokens(text: str) -> int:
    """Approximate token count: whitespace words × :data:`TOKENS_PER_WORD`, rounded up."""
    return math.ceil(round(len(_WORD.findall(text)) * TOKENS_PER_WORD, 6))


class TruncatedFields(NamedTuple):
    fields: tuple[tuple[str, str], ...]
    """The fields, cut to the budget (fields past it are kept, empty)."""
    truncated: bool
    """True when any text was removed."""


def truncate_fields(fields: Iterable[tuple[str, str]], max_tokens: int | None) -> TruncatedFields:
    """Cut a result's text fields so their text together stays within ``max_tokens``.

    Tokens are approximated from whitespace words (see :func:`approx_tokens`), which needs no
    tokenizer and treats every provider alike. Fields are kept in order; the field that crosses
    the budget is cut after its last whole word that fits, with its own whitespace preserved,
    and every later field becomes empty. ``None`` means no budget.
    """
    items = tuple(fields)
    if max_tokens is None:
        return TruncatedFields(items, False)
    if max_tokens < 0:
        raise ConfigError(f"dataset.max_text_tokens={max_tokens} must be zero or positive")
    words_left = math.floor(round(max_tokens / TOKENS_PER_WORD, 6))
    out: list[tuple[str, str]] = []
    truncated = False
    for name, value in items:
        words = list(_WORD.finditer(value))
        if len(words) <= words_left:
            out.append((name, value))
            words_left -= len(words)
            continue
        truncated = True
        out.append((name, value[: words[words_left - 1].end()] if words_left else ""))
        words_left = 0
    return TruncatedFields(tuple(out), truncated)


# --- Grades from table cells -----------------------------------------------------------------


def grade_key(raw: object) -> str:
    """Canonical text of a raw grade, so ``2``, ``2.0`` and ``" 2 "`` look up alike."""
    text = str(raw).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else text


def parse_grade(
    raw: object,
    grades: list[int],
    path: Path,
    line: int,
    column: str,
    grade_map: dict[str, int] | None = None,
) -> int | None:
    """A grade from one cell, or ``None`` for an empty cell (that annotator gave no grade).

    With ``grade_map`` the raw value is looked up there (raw grade -> grade on the scale);
    without it the value itself must be an integer on the scale.
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise DatasetError(
            f"{where(path, line)}: field '{column}' must be a grade on the scale {grades}, "
            f"got {raw!r}"
        )
    if grade_map is not None:
        key = grade_key(raw)
        if key not in grade_map:
            raise DatasetError(
                f"{where(path, line)}: field '{column}' is {raw!r}, which "
                f"dataset.columns.grade_map does not map; it maps {', '.join(grade_map)}"
            )
        return grade_map[key]
    try:
        number = float(raw)
    except ValueError:
        raise DatasetError(
            f"{where(path, line)}: field '{column}' must be a number on the scale {grades}, "
            f"got {raw!r}"
        ) from None
    if not number.is_integer() or int(number) not in grades:
        raise DatasetError(
            f"{where(path, line)}: field '{column}' is {raw!r}, outside the declared scale "
            f"{grades}; fix the label, the dataset's scale.grades, or map raw grades with "
            "dataset.columns.grade_map"
        )
    return int(number)


def cell_text(row: Mapping[str, Any], key: str, path: Path, line: int) -> str:
    """A text value from a CSV or JSON row; null and absent read as ``""``."""
    value = row.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(f"{where(path, line)}: field '{key}' must be text, got {value!r}")
