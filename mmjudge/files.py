"""Files written whole or appended a line at a time, and JSONL read a line at a time: the one
atomic write, the one JSONL reader and the one JSONL append every writer and reader uses.

An atomic write goes to a temporary file in the target's own folder (so the final rename
never crosses a file system), is flushed and ``fsync``-ed, then moved over the target with
:func:`os.replace`: a reader, or a process killed at any moment, sees the old file or the new
one, never half of either. The temporary name carries the process id and a random part, so two
processes writing the same file at once never share one; it is created with the ordinary
permissions (the umask's), as a plain write would.

An append (:func:`append_jsonl`) writes one whole line with one ``write`` under an exclusive
``flock`` where the platform has one, so two writers never interleave; a kill mid-write can
leave a partial last line, which the lenient reader skips and the next append ends first.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, overload

import msgspec

from mmjudge.errors import DatasetError

try:  # POSIX; elsewhere appends rely on the operating system's append mode alone
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

PathLike = str | os.PathLike[str]


def temporary_name(path: Path) -> Path:
    """A fresh name beside ``path`` for its next version (hidden, ending ``.tmp``)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


@overload
def atomic_file(
    path: PathLike, *, binary: Literal[False] = ..., fsync: bool = ...
) -> contextlib.AbstractContextManager[IO[str]]: ...
@overload
def atomic_file(
    path: PathLike, *, binary: Literal[True], fsync: bool = ...
) -> contextlib.AbstractContextManager[IO[bytes]]: ...
def atomic_file(
    path: PathLike, *, binary: bool = False, fsync: bool = True
) -> contextlib.AbstractContextManager[IO[Any]]:
    """A handle whose contents replace ``path`` when the ``with`` block ends without an error
    (text is UTF-8); on an error the temporary file is removed and ``path`` left as it was.

    ``fsync=False`` skips the flush to the disk, for a cache whose lost entry is only made
    again (a power cut may then leave an empty file under the new name)."""
    return _atomic_file(Path(path), binary, fsync)


@contextlib.contextmanager
def _atomic_file(path: Path, binary: bool, fsync: bool) -> Iterator[IO[Any]]:
    temp = temporary_name(path)
    try:
        with temp.open("xb") if binary else temp.open("x", encoding="utf-8") as handle:
            yield handle
            handle.flush()
            if fsync:
                os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def write_atomic(path: PathLike, data: str | bytes, *, fsync: bool = True) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` atomically; ``path`` returned."""
    path = Path(path)
    if isinstance(data, bytes):
        with atomic_file(path, binary=True, fsync=fsync) as out:
            out.write(data)
    else:
        with atomic_file(path, fsync=fsync) as handle:
            handle.write(data)
    return path


#: Decodes a line about twice as fast as ``json.loads``, to the same values.
_DECODER = msgspec.json.Decoder()


def read_jsonl(
    path: PathLike, *, strict: bool = True, encoding: str = "utf-8"
) -> Iterator[tuple[int, Any]]:
    """(line number from 1, value) of each non-blank line of a JSONL file.

    ``strict``: a line that is not JSON is a :class:`~mmjudge.errors.DatasetError` naming the
    file and the line (a file people write: a label or review file, a test bank). Otherwise
    such a line is skipped (a file mmjudge appends to, whose last line a killed writer may
    have left partial), and lines are decoded with msgspec, falling back to ``json`` for what
    only it reads (a ``NaN``, a lone surrogate escape, a number beyond a float's range)."""
    path = Path(path)
    if strict:
        with path.open(encoding=encoding) as handle:
            for line_no, text in enumerate(handle, start=1):
                if text.strip():
                    yield line_no, _strict_value(text, path, line_no)
        return
    with path.open("rb") as binary:
        for line_no, raw in enumerate(binary, start=1):
            if not raw.strip():
                continue
            try:
                value = _DECODER.decode(raw)
            except (msgspec.DecodeError, UnicodeDecodeError):
                try:
                    value = json.loads(raw)
                except ValueError:  # not JSON, or not UTF-8: a partial line
                    continue
            yield line_no, value


def _strict_value(text: str, path: Path, line_no: int) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise DatasetError(f"{path}:{line_no}: not valid JSON ({error.msg})") from None


def append_jsonl(path: PathLike, entry: Any) -> None:
    """Append ``entry`` as one line (keys sorted, UTF-8 kept), locked and ``fsync``-ed; a
    partial last line a killed writer left is ended first, so the entry starts a line.

    The run engine's rows are not written with this: a run appends each row to a handle it
    keeps open and flushes (see :func:`mmjudge.store.rows.appending_rows`), one
    open, lock and ``fsync`` per row being too slow on that path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        with _locked(handle):
            size = os.fstat(handle).st_size
            if size and not _ends_a_line(path, size):
                line = b"\n" + line  # a killed writer's partial line: end it first
            os.write(handle, line)
            os.fsync(handle)
    finally:
        os.close(handle)


@contextlib.contextmanager
def _locked(handle: int) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fcntl.flock(handle, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)


def _ends_a_line(path: Path, size: int) -> bool:
    with path.open("rb") as reader:
        reader.seek(size - 1)
        return reader.read(1) == b"\n"
