"""Checks shared by every loader; each failure names the file, line and field."""

from __future__ import annotations

import codecs
import csv
import hashlib
import json
import logging
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.config import DatasetConfig
from mmjudge.data.leniency import Leniency
from mmjudge.data.schema import MissingImage
from mmjudge.errors import ConfigError, DatasetError

log = logging.getLogger(__name__)


def where(path: Path, line: int | None = None) -> str:
    return f"{path}:{line}" if line is not None else str(path)


def shown(value: object, limit: int = 40) -> str:
    """A value as an error message shows it: its repr, cut to about ``limit`` characters.

    Integers too long to print (Python refuses to convert ones over 4,300 digits to text) are
    described by their size instead.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):  # nested too deeply, or an integer too long to print
        return f"a {type(value).__name__} too large to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ImageRef(NamedTuple):
    """One image reference of an item, resolved (:func:`resolve_image`)."""

    path: str
    """The absolute path, or the URL as written."""
    name: str
    """The reference as written in the dataset."""
    missing: str | None = None
    """Why it cannot be used when the path names no file (one line naming the file and line);
    None when it is there."""


def resolve_image(raw: object, root: Path, path: Path, line: int) -> ImageRef:
    """Resolve one image reference to its absolute path or URL and its name as written.

    URLs pass through; local paths must be relative and stay inside the dataset root (else a
    :class:`DatasetError`). A path to no file is returned with ``missing`` saying so: only a
    cell that shows images stops on it."""
    if not isinstance(raw, str) or not raw.strip():
        raise DatasetError(
            f"{where(path, line)}: field 'images' must hold non-empty path strings, got "
            f"{shown(raw)}"
        )
    if raw.startswith(("http://", "https://")):
        return ImageRef(raw, raw)
    if "\x00" in raw:  # no file system allows it, and the OS calls raise on it
        raise DatasetError(
            f"{where(path, line)}: field 'images' holds {shown(raw)}, which contains a NUL "
            "byte; give a plain relative path"
        )
    candidate = Path(raw)
    if candidate.is_absolute():
        raise DatasetError(
            f"{where(path, line)}: field 'images' has absolute path {shown(raw)}; "
            "use a path relative to the dataset root"
        )
    try:
        resolved = (root / candidate).resolve()
        inside = resolved.is_relative_to(root.resolve())
        exists = inside and resolved.is_file()
    except OSError as error:  # a name too long for the file system, a loop of links...
        raise DatasetError(
            f"{where(path, line)}: field 'images' path {shown(raw)} cannot be used "
            f"({error.strerror or error}); give a plain relative path"
        ) from None
    if not inside:
        raise DatasetError(
            f"{where(path, line)}: field 'images' path {shown(raw)} escapes the dataset root "
            f"{root}; keep images inside the dataset folder"
        )
    missing = None
    if not exists:
        missing = (
            f"{where(path, line)}: field 'images' names {shown(raw)}, which does not exist "
            f"under {root}"
        )
    return ImageRef(str(resolved), raw, missing)


def missing_images(images: Iterable[ImageRef]) -> tuple[MissingImage, ...]:
    """Those of an item's ``images`` that name no file, for its ``missing_images``."""
    return tuple(MissingImage(image.path, image.missing) for image in images if image.missing)


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


#: Longest CSV field read (the largest value every platform's C ``long`` holds).
CSV_FIELD_LIMIT = 2**31 - 1


def json_line(text: str, path: Path, line: int) -> Any:
    """One JSON value from one line of a file; any way it fails to parse is one line of error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(
            f"{where(path, line)}: not valid JSON ({exc.msg} at column {exc.colno})"
        ) from None
    except RecursionError:
        raise DatasetError(
            f"{where(path, line)}: JSON nested too deeply to read; a dataset line holds one "
            "flat object"
        ) from None
    except ValueError as exc:  # an integer with more digits than Python converts
        detail = (
            "a number has more digits than can be read"
            if "integer string conversion" in str(exc)
            else shown(str(exc), 120)
        )
        raise DatasetError(f"{where(path, line)}: not valid JSON ({detail})") from None


def tab_texts(
    path: Path, encoding: str, wanted: set[str], layout: str, empty: str
) -> dict[str, str]:
    """Stream an ``id<TAB>text`` file, keeping the texts of the ``wanted`` ids (the first
    line of each); stops once all are found. ``layout`` names the columns in the error for a
    line without a tab (``query_id<TAB>query text``); ``empty`` is the error for an empty
    text, with ``{id}`` where the id goes."""
    found: dict[str, str] = {}
    for line, raw in enumerate(text_lines(path, encoding), start=1):
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        key, tab, value = text.partition("\t")
        if not tab:
            raise DatasetError(f"{where(path, line)}: expected '{layout}', found no tab")
        key = key.strip()
        if key not in wanted or key in found:
            continue
        if not value.strip():
            raise DatasetError(f"{where(path, line)}: {empty.format(id=key)}")
        found[key] = value.strip()
        if len(found) == len(wanted):
            break
    return found


def undeclared(cfg: DatasetConfig, annotators: Iterable[str]) -> list[str]:
    """The annotators a loader would yield that ``dataset.annotators`` does not list (none
    when it lists none: then every annotator is taken)."""
    return [name for name in annotators if cfg.annotators and name not in cfg.annotators]


def is_file(path: Path) -> bool:
    """``path.is_file()``, False also for names the OS refuses (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


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
        # The csv module refuses fields over 131,072 characters by default; a long product
        # description must instead reach dataset.max_text_tokens and be cut there.
        csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
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

    def require(
        self, wanted: Iterable[str], purpose: str, delimiter_setting: str | None = None
    ) -> None:
        """Fail once, at the header, naming every missing column and the columns there are;
        a header that holds a ``;`` (a semicolon-separated file read with another delimiter)
        also names ``delimiter_setting``, the setting that reads it, where there is one."""
        missing = [name for name in dict.fromkeys(wanted) if name not in self.columns]
        if missing:
            hint = ""
            if delimiter_setting and self.delimiter != ";" and any(";" in c for c in self.columns):
                hint = (
                    f"; the header holds ';': for a semicolon-separated file set "
                    f"{delimiter_setting}=';'"
                )
            raise DatasetError(
                f"{where(self.path, 1)}: missing column(s) {', '.join(missing)} ({purpose}); "
                f"the file has columns: {', '.join(self.columns)}{hint}"
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

#: Tokens per word: a rough average for English text in BPE tokenizers.
TOKENS_PER_WORD = 1.3

#: Letters of scripts written without spaces (CJK, kana, hangul): each counts as a word.
_UNSPACED = "\u3001-\u9fff\uac00-\ud7af\uf900-\ufaff"
#: A word: one letter of an unspaced script, or up to 12 other non-space characters. Longer
#: runs (URLs, base64 blobs, minified code) count as several words, so that text without
#: spaces cannot slip past the budget as a single "word".
_WORD = re.compile(f"[{_UNSPACED}]|[^\\s{_UNSPACED}]{{1,12}}")


def approx_tokens(text: str) -> int:
    """Approximate token count: words (see :data:`_WORD`) × :data:`TOKENS_PER_WORD`, rounded up."""
    return _tokens(sum(1 for _match in _WORD.finditer(text)))


def _tokens(words: int) -> int:
    return math.ceil(round(words * TOKENS_PER_WORD, 6))


class TruncatedFields(NamedTuple):
    fields: tuple[tuple[str, str], ...]
    """The fields, cut to the budget (fields past it are kept, empty)."""
    truncated: bool
    """True when any text was removed."""
    tokens_removed: int = 0
    """Approximate tokens of the text removed (see :func:`approx_tokens`)."""


def truncate_fields(fields: Iterable[tuple[str, str]], max_tokens: int | None) -> TruncatedFields:
    """Cut a result's text fields so their text together stays within ``max_tokens``.

    Tokens are approximated from words (see :func:`approx_tokens`), which needs no tokenizer
    and treats every provider alike. Fields are kept in order; the field that crosses the
    budget is cut after its last whole word that fits, with its own whitespace preserved, and
    every later field becomes empty. ``None`` means no budget. Memory stays flat however long
    a field is.
    """
    items = tuple(fields)
    if max_tokens is None:
        return TruncatedFields(items, False)
    if max_tokens < 0:
        raise ConfigError(f"dataset.max_text_tokens={max_tokens} must be zero or positive")
    words_left = math.floor(round(max_tokens / TOKENS_PER_WORD, 6))
    if sum(len(value) for _name, value in items) <= words_left:
        # Every word is at least one character: text this short cannot pass the budget.
        return TruncatedFields(items, False)
    out: list[tuple[str, str]] = []
    removed = 0
    for name, value in items:
        kept, used, cut = _cut_after(value, words_left)
        out.append((name, kept))
        words_left = 0 if cut else words_left - used
        removed += cut
    return TruncatedFields(tuple(out), removed > 0, _tokens(removed))


def _cut_after(value: str, words: int) -> tuple[str, int, int]:
    """``value`` cut after its first ``words`` words; the words kept and the words cut off."""
    matches = _WORD.finditer(value)
    used = end = 0
    for match in matches:
        if used == words:
            return value[:end], used, 1 + sum(1 for _rest in matches)
        used += 1
        end = match.end()
    return value, used, 0


def cell_text(row: Mapping[str, Any], key: str, path: Path, line: int) -> str:
    """A text value from a CSV or JSON row; null and absent read as ``""``."""
    value = row.get(key)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise DatasetError(f"{where(path, line)}: field '{key}' must be text, got {shown(value)}")


# --- Values read leniently, and text that cannot be used ------------------------------------

#: Control characters other than tab, line feed and carriage return (C0, DEL and C1).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
#: In an id, every control character: ids are written into qrels lines and reports.
_ID_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def checked_text(value: str, field: str, path: Path, line: int, lenient: Leniency) -> str:
    """A text field's value: a NUL byte is refused, other control characters counted."""
    if "\x00" in value:
        raise DatasetError(
            f"{where(path, line)}: field '{field}' contains a NUL byte, which text never "
            "holds (a binary or UTF-16 file?); re-save the file as UTF-8 text (or set "
            "dataset.encoding) without it"
        )
    if _CONTROL.search(value) is not None:
        lenient.note("control", line)
    return value


def checked_id(value: object, field: str, path: Path, line: int, lenient: Leniency) -> str:
    """An id as text: a whole number is read as its digits (counted); any other non-text
    value, and text with a control character (tab, line break, NUL...), is refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        lenient.note("numeric_id", line)
        value = str(value)
    if not isinstance(value, str):
        raise DatasetError(
            f"{where(path, line)}: field '{field}' must be text (or a whole number), got "
            f"{shown(value)}; write the id as a string"
        )
    found = _ID_CONTROL.search(value)
    if found is not None:
        raise DatasetError(
            f"{where(path, line)}: field '{field}' holds the control character "
            f"{shown(found.group())} in {shown(value)}; ids are written into qrels and "
            "reports, so remove it"
        )
    return value


#: Characters a derived query id keeps from the query's text; the others become ``-``.
_NOT_SLUG = re.compile(r"[^a-z0-9]+")
#: Characters of the query's text a derived id keeps at most (before its hash).
SLUG_CHARS = 40


def query_id_from_text(query: str) -> str:
    """The id of a query given without one: its text where that holds no blank (a TREC qrels
    field), else a slug of it and a short hash of the whole text (``red-striped-t-shirt-
    1f3a9c0e``), the same for the same text on every machine and run."""
    if query and not any(char.isspace() for char in query):
        return query
    slug = _NOT_SLUG.sub("-", query.lower()).strip("-")[:SLUG_CHARS].rstrip("-")
    digest = hashlib.sha256(query.encode("utf-8")).hexdigest()[:8]
    return f"{slug}-{digest}" if slug else f"q-{digest}"


def checked_query(value: object, field: str, path: Path, line: int, lenient: Leniency) -> str:
    """A query's text: only a string is a query (a number or a list is refused)."""
    if not isinstance(value, str):
        raise DatasetError(
            f"{where(path, line)}: field '{field}' must be text, got {shown(value)}; write "
            'the query as a string (e.g. "1984", in quotes)'
        )
    return checked_text(value, field, path, line, lenient)
