"""A cell reads a small dataset from disk once (the check before the first call) and serves
its later passes from memory; a large one is read on each pass, so memory stays flat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.errors import DatasetError
from mmjudge.running import work
from mmjudge.running.cell import typed_config
from tests.helpers import compose_config


def _dataset(root: Path, n: int, bad_line: int | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        row = {
            "query_id": f"q{i % 4}",
            "query": "red dress",
            "result_id": f"r{i}",
            "fields": {"name": f"Dress {i}"},
            "labels": {"a": i % 3},
        }
        lines.append("{not json" if i == bad_line else json.dumps(row))
    (root / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def _stream(root: Path) -> work.ExampleStream:
    cfg = compose_config(["dataset=demo_fashion", f"dataset.path={root}", "dataset.annotators=[a]"])
    return work.ExampleStream(typed_config(cfg))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many passes read the file."""
    counted: list[int] = []
    real = work.load_dataset

    def counting(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        counted.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(work, "load_dataset", counting)
    return counted


def test_a_small_dataset_is_read_once(tmp_path: Path, reads: list[int]) -> None:
    stream = _stream(_dataset(tmp_path / "data", 30))
    first = [example.key for example in stream]
    assert [example.key for example in stream] == first
    assert [example.key for example in stream][:5] == first[:5]
    assert len(first) == 30 and len(reads) == 1


def test_a_large_dataset_is_read_on_each_pass(
    tmp_path: Path, reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(work, "KEEP_ITEMS", 10)
    stream = _stream(_dataset(tmp_path / "data", 30))
    assert len(list(stream)) == len(list(stream)) == 30
    assert len(reads) == 2


def test_a_pass_cut_short_keeps_nothing(tmp_path: Path, reads: list[int]) -> None:
    stream = _stream(_dataset(tmp_path / "data", 30))
    assert len(list(zip(range(5), stream, strict=False))) == 5
    assert len(list(stream)) == 30
    assert len(reads) == 2


def test_a_bad_line_fails_every_pass(tmp_path: Path, reads: list[int]) -> None:
    stream = _stream(_dataset(tmp_path / "data", 30, bad_line=20))
    for _ in range(2):
        with pytest.raises(DatasetError):
            list(stream)
    assert len(reads) == 2
