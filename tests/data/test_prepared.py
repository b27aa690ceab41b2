"""The prepared-items cache: what it returns, when it misses, a damaged entry, and several
processes filling it at once."""

from __future__ import annotations

import csv
import dataclasses
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mmjudge.config import DatasetConfig, ScaleConfig
from mmjudge.data import load_dataset, prepared
from mmjudge.data import loading as loading_module
from mmjudge.data.loading import sampled_queries
from mmjudge.data.prepared import entry_path
from mmjudge.data.schema import Example
from tests.helpers import compose_config

PAGE = (
    "<style>.d{{color:red}}</style><div><p>Soft&nbsp;cotton {kind} &amp; socks</p>"
    "<script>track('<p>no</p>')</script><ul><li>Machine wash</li><li>{words}</li></ul>"
    "<!-- sku --></div>"
)


def catalogue(root: Path, rows: int = 40, **settings: Any) -> DatasetConfig:
    """A product CSV with HTML descriptions, some long enough to be cut, read by ``table``."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / "items.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["q", "id", "title", "description", "grade"])
        for i in range(rows):
            words = " ".join(f"word{j}" for j in range(i * 7))
            page = PAGE.format(kind=f"tee {i}", words=words)
            writer.writerow([f"query {i % 6}", f"r{i}", f"<b>Tee {i}</b>", page, 1 + i % 3])
    return shop(root, **settings)


def shop(root: Path, **settings: Any) -> DatasetConfig:
    """The dataset config of :func:`catalogue`'s file."""
    settings.setdefault("html_fields", ["description"])
    settings.setdefault("max_text_tokens", 60)
    return DatasetConfig(
        name="shop",
        loader="table",
        path=str(root),
        items="items.csv",
        columns={
            "query": "q",
            "result_id": "id",
            "text_fields": ["title", "description"],
            "annotators": {"mean": "grade"},
        },
        scale=ScaleConfig(grades=[1, 2, 3], relevant_from=2),
        **settings,
    )


def test_cached_items_are_exactly_the_prepared_ones(tmp_path: Path) -> None:
    cfg = catalogue(tmp_path / "data")
    cache = tmp_path / "prepared"
    prepared = list(load_dataset(cfg))
    assert any(example.truncated for example in prepared)
    assert all("<" not in dict(example.fields)["description"] for example in prepared)
    assert list(load_dataset(cfg, cache=cache)) == prepared  # the pass that writes the entry
    entry = entry_path(cfg, cache)
    assert entry is not None and entry.is_file()
    assert list(load_dataset(cfg, cache=cache)) == prepared  # read from the entry
    assert [p.name for p in cache.iterdir()] == [entry.name]  # no temporary file left


def test_a_filled_cache_is_read_without_preparing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = catalogue(tmp_path / "data")
    cache = tmp_path / "prepared"
    prepared = list(load_dataset(cfg, cache=cache))

    def refuse(example: Example, cfg: DatasetConfig) -> Example:
        raise AssertionError("prepared again")

    monkeypatch.setattr(loading_module, "_prepared", refuse)
    assert list(load_dataset(cfg, cache=cache)) == prepared
    # A limit and a query sample are applied to the cached items as to prepared ones.
    limited = dataclasses.replace(cfg, limit=5)
    assert list(load_dataset(limited, cache=cache)) == prepared[:5]
    sampled = dataclasses.replace(cfg, sample_queries=2)
    queries = sampled_queries(sampled, 3, cache=cache)
    assert queries is not None and len(queries) == 2
    assert list(load_dataset(sampled, seed=3, cache=cache)) == [
        example for example in prepared if example.query_id in queries
    ]


def test_a_changed_file_or_setting_is_prepared_again(tmp_path: Path) -> None:
    cfg = catalogue(tmp_path / "data")
    cache = tmp_path / "prepared"
    list(load_dataset(cfg, cache=cache))
    first = entry_path(cfg, cache)

    shorter = dataclasses.replace(cfg, max_text_tokens=20)
    assert entry_path(shorter, cache) != first
    assert list(load_dataset(shorter, cache=cache)) == list(load_dataset(shorter))

    raw = dataclasses.replace(cfg, html_fields=[])
    assert entry_path(raw, cache) != first
    assert "<script>" in dict(next(iter(load_dataset(raw, cache=cache))).fields)["description"]

    # Settings applied after the cache, or that never change the items, share the entry.
    for same in (
        dataclasses.replace(cfg, limit=3),
        dataclasses.replace(cfg, sample_queries=2, name="other", description="Products."),
    ):
        assert entry_path(same, cache) == first

    items_file = tmp_path / "data" / "items.csv"
    same_size = items_file.read_bytes().replace(b"Tee 3</b>", b"Tea 3</b>")
    stat = items_file.stat()
    items_file.write_bytes(same_size)  # one byte changed, the size and time stamp kept
    os.utime(items_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert entry_path(cfg, cache) != first
    assert "<b>Tea 3</b>" in [dict(e.fields)["title"] for e in load_dataset(cfg, cache=cache)]

    catalogue(tmp_path / "data", rows=41)  # the same file name, new content
    assert entry_path(cfg, cache) != first
    items = list(load_dataset(cfg, cache=cache))
    assert len(items) == 41 and items == list(load_dataset(cfg))


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data.replace(b"Machine", b"Mach1ne", 1),  # one item changed
        lambda data: b"not an entry\n",
        lambda data: b"",
    ],
)
def test_a_damaged_entry_is_prepared_again(tmp_path: Path, damage: Any) -> None:
    cfg = catalogue(tmp_path / "data")
    cache = tmp_path / "prepared"
    prepared = list(load_dataset(cfg, cache=cache))
    entry = entry_path(cfg, cache)
    assert entry is not None
    whole = entry.read_bytes()
    entry.write_bytes(damage(whole))
    assert list(load_dataset(cfg, cache=cache)) == prepared
    assert entry.read_bytes() == whole  # written again, whole


def test_a_pass_stopped_early_writes_no_entry(tmp_path: Path) -> None:
    cfg = catalogue(tmp_path / "data")
    cache = tmp_path / "prepared"
    stream = load_dataset(cfg, cache=cache)
    next(stream)
    stream.close()
    list(load_dataset(dataclasses.replace(cfg, limit=5), cache=cache))
    assert not cache.exists() or list(cache.iterdir()) == []


def test_the_loaders_warnings_are_given_from_the_cache_too(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mmjudge.data.leniency import new_cell_warnings

    cfg = catalogue(tmp_path / "data")
    with (tmp_path / "data" / "items.csv").open("a", encoding="utf-8") as handle:
        handle.write("query 1,r99,Tee\x07 99,<p>bell</p>,2\n")  # a control character: kept
    cache = tmp_path / "prepared"
    caplog.set_level(logging.WARNING)
    new_cell_warnings()
    list(load_dataset(cfg, cache=cache))
    (said,) = [r.getMessage() for r in caplog.records if "control characters" in r.getMessage()]
    caplog.clear()
    new_cell_warnings()  # another cell: it reads the entry, and is told too
    list(load_dataset(cfg, cache=cache))
    assert [r.getMessage() for r in caplog.records] == [said]


def test_a_dataset_whose_image_is_gone_is_read_again(tmp_path: Path) -> None:
    from PIL import Image

    root = tmp_path / "data"
    (root / "images").mkdir(parents=True)
    Image.new("RGB", (8, 8), "red").save(root / "images" / "a.png")
    line = (
        '{"query_id": "q1", "query": "red", "result_id": "r1", "fields": {"name": "Shirt"}, '
        '"images": ["images/a.png"], "labels": {"a": 1}}\n'
    )
    (root / "items.jsonl").write_text(line, encoding="utf-8")
    cfg = DatasetConfig(name="t", path=str(root), scale=ScaleConfig(grades=[0, 1, 2]))
    cache = tmp_path / "prepared"
    assert len(list(load_dataset(cfg, cache=cache))) == 1
    (root / "images" / "a.png").unlink()
    (gone,) = load_dataset(cfg, cache=cache)
    assert gone.images == () and "images/a.png', which does not exist" in gone.missing_images[0][1]
    assert list(load_dataset(cfg, cache=cache)) == [gone]  # the entry written without it
    Image.new("RGB", (8, 8), "red").save(root / "images" / "a.png")
    (back,) = load_dataset(cfg, cache=cache)  # back again: the entry is read again too
    assert back.images == (str(root / "images" / "a.png"),) and back.missing_images == ()


def test_paths_prepared_cache_is_a_setting(tmp_path: Path) -> None:
    assert compose_config([]).paths.prepared_cache == ".cache/prepared"
    cfg = compose_config([f"paths.prepared_cache={tmp_path}"])
    assert cfg.paths.prepared_cache == str(tmp_path)


def test_an_entry_removed_after_it_was_checked_is_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process (or a user clearing the cache) may remove an entry between its check
    and its reading: the items come from the file that was checked."""
    cfg = catalogue(tmp_path / "data")
    cache = tmp_path / "prepared"
    expected = list(load_dataset(cfg, cache=cache))
    check = prepared._read

    def check_then_clear(path: Path, *, images: bool) -> Any:
        entry = check(path, images=images)
        path.unlink()
        return entry

    monkeypatch.setattr(prepared, "_read", check_then_clear)
    assert list(load_dataset(cfg, cache=cache)) == expected


# Each round removes the entry first, so the processes keep writing it while others read it.
WRITER = """
import sys
from pathlib import Path
from mmjudge.data import load_dataset
from mmjudge.data import prepared
from mmjudge.data.prepared import entry_path
from tests.data.test_prepared import shop
cfg, cache, rows = shop(Path(sys.argv[1])), Path(sys.argv[2]), int(sys.argv[3])
for _ in range(int(sys.argv[4])):
    entry_path(cfg, cache).unlink(missing_ok=True)
    assert len(list(load_dataset(cfg, cache=cache))) == rows
"""


@pytest.mark.slow
def test_processes_filling_one_entry_at_once_leave_a_whole_one(tmp_path: Path) -> None:
    rows, rounds = 400, 6
    cfg = catalogue(tmp_path / "data", rows=rows)
    cache = tmp_path / "prepared"
    args = [str(tmp_path / "data"), str(cache), str(rows), str(rounds)]
    root = Path(__file__).resolve().parents[2]
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, *args], cwd=root, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    for writer in writers:
        _out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err.decode()
    entry = entry_path(cfg, cache)
    assert entry is not None
    assert [p.name for p in cache.iterdir()] == [entry.name]
    assert list(load_dataset(cfg, cache=cache)) == list(load_dataset(cfg))


def test_settings_json_cannot_hold_leave_the_items_uncached(tmp_path: Path) -> None:
    cfg = catalogue(tmp_path / "data")
    # A value no shipped loader reads; a plugin's could be anything.
    odd = dataclasses.replace(cfg, columns={**cfg.columns, "note": {1j}})
    assert entry_path(odd, tmp_path / "prepared") is None


class FullDisk:
    """A file that takes the header and then runs out of space."""

    def __init__(self, real: Any) -> None:
        self.real, self.writes = real, 0

    def write(self, data: bytes) -> int:
        self.writes += 1
        if self.writes > 1:
            raise OSError(28, "No space left on device")
        return int(self.real.write(data))

    def close(self) -> None:
        self.real.close()


def test_a_cache_that_cannot_be_written_only_goes_unused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mmjudge.data import prepared as prepared_module

    cfg = catalogue(tmp_path / "data")
    expected = list(load_dataset(cfg))
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert list(load_dataset(cfg, cache=not_a_folder)) == expected

    real_fdopen = os.fdopen
    monkeypatch.setattr(
        prepared_module.os, "fdopen", lambda fd, mode: FullDisk(real_fdopen(fd, mode))
    )
    cache = tmp_path / "prepared"
    assert list(load_dataset(cfg, cache=cache)) == expected
    assert list(cache.iterdir()) == []  # nothing half-written left behind
