"""No value is read as something else without a word: a query that is not text, an id that
is not text or a whole number, a NUL byte and a control character in an id are refused with
the file, line and field; whole-number ids, ``images`` given as one path and other control
characters in text are read, and one warning line per file counts them."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mmjudge.config import DatasetConfig, ScaleConfig
from mmjudge.data import load_dataset
from mmjudge.errors import DatasetError

SCALE = ScaleConfig(grades=[0, 1, 2])


def jsonl_dataset(tmp_path: Path, rows: list[dict[str, Any]], **settings: Any) -> DatasetConfig:
    root = tmp_path / "ds"
    (root / "images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), "red").save(root / "images" / "a.png")
    text = "".join(json.dumps(row) + "\n" for row in rows)
    (root / "items.jsonl").write_text(text, encoding="utf-8")
    return DatasetConfig(name="t", path=str(root), scale=SCALE, annotators=["a"], **settings)


def row(n: int = 1, **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "query_id": "q1",
        "query": "red shirt",
        "result_id": f"r{n}",
        "fields": {"name": "Red shirt"},
        "images": ["images/a.png"],
        "labels": {"a": 2},
    }
    base.update(changes)
    return base


def table_dataset(tmp_path: Path, name: str, text: str) -> DatasetConfig:
    root = tmp_path / "table"
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text, encoding="utf-8")
    columns = {"query": "q", "query_id": "qid", "result_id": "id", "text_fields": ["title"]}
    columns["annotators"] = {"a": "grade"}  # type: ignore[assignment]
    return DatasetConfig(
        name="t", loader="table", path=str(root), items=name, columns=columns, scale=SCALE
    )


def refusal(cfg: DatasetConfig) -> str:
    with pytest.raises(DatasetError) as info:
        list(load_dataset(cfg))
    message = str(info.value)
    assert "\n" not in message
    return message


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (row(query=1984), ":2: field 'query' must be text, got 1984"),
        (row(query=["red", "shirt"]), ":2: field 'query' must be text"),
        (row(result_id=3.0), ":2: field 'result_id' must be text (or a whole number), got 3.0"),
        (row(query_id=True), ":2: field 'query_id' must be text (or a whole number)"),
        (row(result_id="r\t9"), ":2: field 'result_id' holds the control character '\\t'"),
        (row(fields={"name": "Red\x00shirt"}), ":2: field 'fields.name' contains a NUL byte"),
        (row(query="red\x00"), ":2: field 'query' contains a NUL byte"),
    ],
)
def test_jsonl_values_that_cannot_be_read_as_written_are_refused(
    tmp_path: Path, bad: dict[str, Any], expected: str
) -> None:
    message = refusal(jsonl_dataset(tmp_path, [row(0), bad]))
    assert message.startswith(str(tmp_path / "ds" / "items.jsonl")) and expected in message


def test_jsonl_lenient_readings_are_counted_in_one_warning_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [
        row(1),
        row(2, query_id=7, result_id=12),
        row(3, result_id=13, images="images/a.png"),
        row(4, fields={"name": "Red\x0cshirt"}),
        row(5, query_id=7, fields={"name": "\x1b[1mbold"}),
    ]
    with caplog.at_level(logging.WARNING, logger="mmjudge"):
        examples = list(load_dataset(jsonl_dataset(tmp_path, rows)))
    assert [e.query_id for e in examples] == ["q1", "7", "q1", "q1", "7"]
    assert examples[2].result_id == "13" and len(examples[2].images) == 1
    assert examples[3].fields == (("name", "Red\x0cshirt"),)  # kept as written
    (warning,) = warnings_of(caplog)
    assert "\n" not in warning
    assert warning == (
        f"{tmp_path / 'ds' / 'items.jsonl'}: "
        "3 lines with query_id or result_id given as a number (read as its text), first on "
        "line 2; 1 line with 'images' given as one path rather than a list (read as a list of "
        "one), first on line 3; 2 lines with control characters in a text field (kept as "
        "written), first on line 4"
    )


def test_the_warning_is_given_when_reading_stops_early_and_only_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [row(n, result_id=n) for n in range(1, 6)]
    cfg = jsonl_dataset(tmp_path, rows, limit=2)
    with caplog.at_level(logging.WARNING, logger="mmjudge"):
        assert len(list(load_dataset(cfg))) == 2
        assert len(list(load_dataset(cfg))) == 2  # a run reads its dataset more than once
    (warning,) = warnings_of(caplog)
    # Counted up to where reading stopped, not over the whole file of 5.
    assert re.search(r": [23] lines with query_id or result_id given as a number", warning)


def test_data_read_as_written_gives_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mmjudge"):
        list(load_dataset(jsonl_dataset(tmp_path, [row(1), row(2)])))
    assert warnings_of(caplog) == []


def test_a_nul_byte_in_a_csv_field_is_refused(tmp_path: Path) -> None:
    text = "qid,q,id,title,grade\nq1,red shirt,r1,Red shirt,2\nq1,red shirt,r2,Red\x00shirt,1\n"
    message = refusal(table_dataset(tmp_path, "pairs.csv", text))
    assert message.startswith(f"{tmp_path / 'table' / 'pairs.csv'}:3: field 'title' contains")


def test_table_jsonl_refuses_a_numeric_query_and_counts_numeric_ids(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = {"qid": "q1", "q": "red shirt", "id": 5, "title": "Red", "grade": 2}
    text = json.dumps(good) + "\n" + json.dumps({**good, "id": 6}) + "\n"
    with caplog.at_level(logging.WARNING, logger="mmjudge"):
        examples = list(load_dataset(table_dataset(tmp_path, "pairs.jsonl", text)))
    assert [e.result_id for e in examples] == ["5", "6"]
    (warning,) = warnings_of(caplog)
    assert ": 2 lines with query_id or result_id given as a number (read as its text)" in warning
    bad = json.dumps({**good, "q": 1984}) + "\n"
    message = refusal(table_dataset(tmp_path, "bad.jsonl", bad))
    assert ":1: field 'q' must be text, got 1984" in message


def test_each_cell_warns_about_its_own_data(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from mmjudge.data.leniency import new_cell_warnings

    cfg = jsonl_dataset(tmp_path, [row(1, result_id=1)])
    with caplog.at_level(logging.WARNING, logger="mmjudge"):
        list(load_dataset(cfg))
        new_cell_warnings()  # a second cell of a sweep run in the same process
        list(load_dataset(cfg))
    assert len(warnings_of(caplog)) == 2
