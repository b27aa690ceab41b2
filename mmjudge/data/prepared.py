"""Prepared items kept on disk, so a dataset is read, converted and cut once for a whole sweep.

Preparing a scraped catalogue is the slow part of reading it: turning 10,000 HTML descriptions
into text and cutting them to ``dataset.max_text_tokens`` takes seconds, and every pass over
the dataset (the check before the calls, the calls, each cell of a sweep, a rerun) would pay
it again. The first whole pass writes the prepared items to ``paths.prepared_cache``; later
passes, in this process or any other, stream them back.

An entry's name is a hash of:

- the content of the items file (``dataset.items``; a changed file is a new entry, whatever
  its name or time stamp);
- every dataset setting that can change what the loader yields (all of ``dataset`` but its
  name, description, guidelines, test banks, runs, ``limit``, ``sample_queries`` and
  ``sample_items``, which are applied after the cache), and the dataset folder, since image
  paths are resolved against it;
- :data:`PREPARATION_VERSION`, raised whenever loading or preparing changes its output.

Entries are written to a temporary file in the cache folder and moved into place with
``os.replace``, so two processes preparing the same dataset at once each leave a whole entry
and a reader never sees part of one. An entry ends with a checksum of its items; one that does
not match (a damaged disk, a hand edit) is ignored and prepared again. Only the ``table`` and
``jsonl`` loaders, whose items are one file, are cached; the others read several files or a
folder of images and are prepared on each pass, as before.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from mmjudge.config import DatasetConfig
from mmjudge.data.leniency import say_once
from mmjudge.data.schema import Example, MissingImage, dataset_root
from mmjudge.data.validation import dataset_file

log = logging.getLogger(__name__)

#: Raised whenever a loader or the preparation (HTML to text, the token cut) changes what it
#: yields for the same file and settings, so entries written before are not used.
PREPARATION_VERSION = 4

#: The loaders whose items come from the one file ``dataset.items``.
CACHED_LOADERS = frozenset({"table", "jsonl"})

#: Dataset settings applied after the cache, or that never change the items.
UNUSED_SETTINGS = frozenset(
    {
        "name",
        "description",
        "guidelines",
        "testbanks",
        "runs",
        "limit",
        "sample_queries",
        "sample_items",
        "sample_items_from",
    }
)

_HEADER = b'{"format"'
_TRAILER = b'{"end"'


def entry_path(cfg: DatasetConfig, folder: Path) -> Path | None:
    """Where the prepared items of ``cfg`` live in ``folder``; None for a loader that is not
    cached or an items file that cannot be read (the loader then says what is wrong)."""
    if cfg.loader not in CACHED_LOADERS:
        return None
    root = dataset_root(cfg)
    items = dataset_file(root, cfg.items)
    digest = content_digest(items)
    if digest is None:
        return None
    settings = {
        field.name: getattr(cfg, field.name)
        for field in dataclasses.fields(cfg)
        if field.name not in UNUSED_SETTINGS
    }
    settings["path"] = str(root.resolve())
    try:
        key = json.dumps([PREPARATION_VERSION, digest, settings], sort_keys=True, default=_plain)
    except (TypeError, ValueError):  # a setting a plugin loader reads that JSON cannot hold
        return None
    name = hashlib.sha256(key.encode()).hexdigest()[:40]
    return folder / f"{cfg.loader}-{name}.jsonl"


#: Digests this process has taken, by file and the stat fields any change of it moves: a pass
#: over a large file needs not hash it again (every pass looks its entry up).
_DIGESTS: dict[tuple[str, int, int, int, int], str] = {}


def content_digest(path: Path) -> str | None:
    """The sha256 of ``path``'s content (None when it cannot be read)."""
    try:
        stat = path.stat()
        signature = (str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
        known = _DIGESTS.get(signature)
        if known is not None:
            return known
        with path.open("rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None
    _DIGESTS[signature] = digest
    return digest


def _plain(value: object) -> object:
    """Settings nested in dataclasses (``dataset.scale``), as JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"{type(value).__name__} is not a setting")


def has_entry(cfg: DatasetConfig, folder: Path) -> bool:
    """Whether ``folder`` holds an entry for ``cfg`` (not yet verified: a damaged one is found
    out, and prepared again, by the pass that reads it)."""
    path = entry_path(cfg, folder)
    return path is not None and path.is_file()


def cached_items(
    cfg: DatasetConfig,
    folder: Path,
    prepare: Callable[[], Iterator[Example]],
    *,
    write: bool = True,
) -> Iterator[Example]:
    """The prepared items of ``cfg``: from its entry in ``folder`` when a whole one is there,
    else from ``prepare()`` (every item of the file, prepared), written to the entry as they
    pass when ``write`` and the pass reaches the end."""
    path = entry_path(cfg, folder)
    if path is None:
        yield from prepare()
        return
    stored = _read(path, images=cfg.max_images > 0)
    if stored is not None:
        for message in stored.warnings:
            say_once(message)
        yield from stored.items()
        return
    if not write:
        yield from prepare()
        return
    yield from _written(path, prepare)


@dataclasses.dataclass
class _Entry:
    """A verified entry, read through the file it was verified in: the entry may be replaced
    or removed meanwhile (another process, a cleared cache), and what was checked is read."""

    handle: IO[bytes]
    count: int
    warnings: list[str]

    def items(self) -> Iterator[Example]:
        with self.handle:
            self.handle.seek(0)
            self.handle.readline()  # the header
            for _ in range(self.count):
                yield _example(json.loads(self.handle.readline()))


def _read(path: Path, *, images: bool) -> _Entry | None:
    """The entry at ``path`` once its checksum is verified (and, with ``images``, every local
    image it names is still there, and every one it found missing still missing); None when it
    is missing, damaged or its images changed (the entry is then removed, and the loader reads
    the file again)."""
    try:
        handle = path.open("rb")
    except OSError:
        return None
    try:
        header = json.loads(handle.readline())
        if header != {"format": PREPARATION_VERSION}:
            raise ValueError("another format")
        digest = hashlib.sha256()
        count = 0
        trailer: dict[str, Any] | None = None
        for line in handle:
            if line.startswith(_TRAILER):
                trailer = json.loads(line)
                break
            digest.update(line)
            count += 1
            if images and not _images_there(line):
                raise ValueError("an image is gone")
        if (
            trailer is None
            or handle.read(1)
            or trailer.get("end") != count
            or trailer.get("sha256") != digest.hexdigest()
        ):
            raise ValueError("damaged")
        warnings = [str(message) for message in trailer.get("warnings", [])]
    except (ValueError, OSError):
        log.info("%s: a damaged prepared-items entry; preparing the items again", path)
        _remove(path)
        handle.close()
        return None
    except BaseException:  # an interrupt: the file is not left open
        handle.close()
        raise
    return _Entry(handle, count, warnings)


def _images_there(line: bytes) -> bool:
    """Whether the images of an entry's item are as they were when it was prepared: each it
    shows still there, each it found missing still missing."""
    row = json.loads(line)
    return all(
        image.startswith(("http://", "https://")) or os.path.isfile(image) for image in row[4]
    ) and not any(os.path.isfile(path) for path, _problem in row[10])


def _written(path: Path, prepare: Callable[[], Iterator[Example]]) -> Iterator[Example]:
    """``prepare()``'s items, written to a temporary file that replaces ``path`` once the
    last has passed; a pass stopped early or failed leaves nothing behind, and a cache that
    cannot be written (no space, no permission) only goes unused."""
    writer = _EntryWriter.open(path)
    if writer is None:
        yield from prepare()
        return
    said = _Said()
    logging.getLogger("mmjudge.data").addHandler(said)
    try:
        for example in prepare():
            writer.add(example)
            yield example
        writer.finish(said.messages)
    finally:
        logging.getLogger("mmjudge.data").removeHandler(said)
        writer.close()


class _EntryWriter:
    """One entry being written to its temporary file; after the first error it writes no more.

    Not :func:`mmjudge.files.atomic_file`: the entry is written while the items pass through
    a generator that may stop early, and a write that fails only ends the caching, never the
    pass, so opening, each write and the final move each catch their own errors."""

    def __init__(self, path: Path, temp: Path, out: IO[bytes]) -> None:
        self.path, self.temp, self.out = path, temp, out
        self.digest = hashlib.sha256()
        self.count = 0
        self.failed = False

    @classmethod
    def open(cls, path: Path) -> _EntryWriter | None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=f".{path.stem}-", dir=path.parent)
            writer = cls(path, Path(temp), os.fdopen(fd, "wb"))
            writer._write(_HEADER + b": " + str(PREPARATION_VERSION).encode() + b"}\n")
        except OSError as error:
            log.info("%s: prepared items not cached (%s)", path.parent, error)
            return None
        return writer

    def _write(self, data: bytes) -> None:
        try:
            self.out.write(data)
        except OSError as error:
            log.info("%s: prepared items not cached (%s)", self.path.parent, error)
            self.failed = True

    def add(self, example: Example) -> None:
        if not self.failed:
            line = _line(example)
            self.digest.update(line)
            self.count += 1
            self._write(line)

    def finish(self, warnings: list[str]) -> None:
        """The trailer written and the entry moved into place (unless writing failed)."""
        trailer = {"end": self.count, "sha256": self.digest.hexdigest(), "warnings": warnings}
        self._write(json.dumps(trailer).encode() + b"\n")
        try:
            self.out.close()
            if not self.failed:
                os.replace(self.temp, self.path)
        except OSError as error:
            log.info("%s: prepared items not cached (%s)", self.path.parent, error)

    def close(self) -> None:
        """The temporary file closed and removed (moved into place already, if finished)."""
        with contextlib.suppress(OSError):
            self.out.close()
        _remove(self.temp)


class _Said(logging.Handler):
    """The warnings the loaders give while a dataset is prepared, to give them again on every
    pass that reads the entry."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _remove(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink(missing_ok=True)


def _line(example: Example) -> bytes:
    row = [
        example.query_id,
        example.query,
        example.result_id,
        example.fields,
        example.images,
        example.labels,
        example.image_names,
        example.truncated,
        example.tokens_removed,
        example.attributes,
        example.missing_images,
    ]
    return json.dumps(row, ensure_ascii=False).encode() + b"\n"


def _example(row: list[Any]) -> Example:
    query_id, query, result_id, fields, images, labels, names, truncated, removed, attrs = row[:10]
    missing = row[10]
    return Example(
        query_id=query_id,
        query=query,
        result_id=result_id,
        fields=tuple((name, value) for name, value in fields),
        images=tuple(images),
        labels=labels,
        image_names=tuple(names),
        truncated=truncated,
        tokens_removed=removed,
        attributes=tuple((name, value) for name, value in attrs),
        missing_images=tuple(MissingImage(path, problem) for path, problem in missing),
    )
