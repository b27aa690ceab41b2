"""A cell reads a small dataset from disk once (the check before the first call) and serves
its later passes from memory; a large one is read on each pass, so memory stays flat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.engine import examples as work
from mmjudge.engine.cell import typed_config
from mmjudge.errors import DatasetError
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


def _catalogue(root: Path, descriptions: list[str], name: bool = True) -> work.ExampleStream:
    """A JSONL dataset whose ``description`` field is HTML, with the prepared-items cache on."""
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for i, description in enumerate(descriptions):
        fields = {"name": f"Lamp {i}"} if name else {}
        fields["description"] = description
        rows.append(
            {
                "query_id": "q",
                "query": "lamp",
                "result_id": f"r{i}",
                "fields": fields,
                "labels": {"a": 1},
            }
        )
    (root / "items.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n", encoding="utf-8")
    cfg = compose_config(
        [
            "dataset=demo_fashion",
            f"dataset.path={root}",
            "dataset.annotators=[a]",
            "dataset.html_fields=[description]",
            f"paths.prepared_cache={root.parent / 'prepared'}",
        ]
    )
    return work.ExampleStream(typed_config(cfg))


def test_the_check_leaves_a_catalogue_unprepared_for_the_calls_to_prepare(
    tmp_path: Path, conversions: list[str]
) -> None:
    pages = [
        f"<div><script>var s={i};</script><p>Brass &amp; glass {i}</p></div>" for i in range(6)
    ]
    stream = _catalogue(tmp_path / "data", pages)
    assert not stream.check_reads_prepared()
    counts = stream.survey()
    assert (counts.items, counts.has_text, counts.field_names) == (6, True, {"name", "description"})
    assert conversions == []  # the check converted nothing: a plain field has text
    assert not list((tmp_path / "prepared").glob("*.jsonl"))
    prepared = list(stream)  # the calls' pass prepares each item, and caches them
    assert dict(prepared[2].fields)["description"] == "Brass & glass 2"
    assert len(conversions) == 6 and len(list((tmp_path / "prepared").glob("*.jsonl"))) == 1
    again = _catalogue(tmp_path / "data", pages)  # a later cell: the check reads the cache
    assert again.check_reads_prepared()
    assert again.survey() == counts
    assert [example.fields for example in again] == [example.fields for example in prepared]
    assert len(conversions) == 6


def test_html_that_shows_nothing_is_no_text_and_one_page_with_text_is(
    tmp_path: Path, conversions: list[str]
) -> None:
    blank = ["<script>var s=1;</script>", "<!-- nothing -->", "<div> </div>"]
    assert not _catalogue(tmp_path / "blank", blank, name=False).survey().has_text
    shown = _catalogue(tmp_path / "shown", [*blank, "<p>Oak</p>", "<p>Ash</p>"], name=False)
    assert shown.survey().has_text
    assert conversions[-1] == "<p>Oak</p>"  # converted only up to the first item with text
