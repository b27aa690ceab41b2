"""The one atomic write, JSONL reader and JSONL append (:mod:`mmjudge.files`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmjudge.errors import DatasetError
from mmjudge.files import append_jsonl, atomic_file, read_jsonl, write_atomic


def test_write_atomic_replaces_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    write_atomic(path, "old\n")
    write_atomic(path, b"new\n")
    assert path.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_a_failed_write_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    write_atomic(path, "kept\n", fsync=False)
    with pytest.raises(RuntimeError), atomic_file(path) as handle:
        handle.write("half")
        raise RuntimeError("killed")
    assert path.read_text() == "kept\n"
    assert [p.name for p in tmp_path.iterdir()] == ["rows.jsonl"]


def test_strict_reading_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"a": 1}\n\n{"a": 2\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"labels\.jsonl:3: not valid JSON"):
        list(read_jsonl(path))


def test_lenient_reading_skips_a_partial_line_and_reads_nan(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"a": NaN}\n\n{"a": 2}\n{"a": ')
    rows = list(read_jsonl(path, strict=False))
    assert [n for n, _ in rows] == [1, 3] and rows[1][1] == {"a": 2}


def test_append_ends_a_partial_line_first(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text('{"a": 1}\n{"a": ', encoding="utf-8")
    append_jsonl(path, {"b": "é"})
    assert path.read_text(encoding="utf-8").splitlines()[-1] == '{"b": "é"}'
    assert [row for _, row in read_jsonl(path, strict=False)] == [{"a": 1}, {"b": "é"}]
