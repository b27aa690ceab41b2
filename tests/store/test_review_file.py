"""The review file: typed rows written as CSV or JSON lines and read back, files the last
release wrote still read, and filled-in values that cannot be used named by file and line."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mmjudge.errors import DatasetError
from mmjudge.store.review_file import (
    COLUMNS,
    Correction,
    Draw,
    EntryGrades,
    ReviewRow,
    ShownItem,
    read_review,
    write_review,
)

ROW = ReviewRow(
    dataset="demo",
    query_id="q01",
    result_id="p052",
    grades=(0, 1, 2),
    bank="bank/nuggets.jsonl",
    bank_version="v1",
    shown=ShownItem(
        query="red striped t-shirt",
        result_text="title: T-shirt | colour: Pink",
        image="img/p052.jpg",
        thumbnail="thumbs/p052.jpg",
        human={"annotator_a": 1, "annotator_b": 2},
        consensus=1,
        judges={"lexical/default/text": 2, "lexical/nuggets/text": None},
        reasons=("judge differs from humans", "judges split"),
        entries=(EntryGrades("e1", "nuggets", "red", {"lexical/nuggets/text": 0}, {}),),
    ),
)

#: The CSV header and a row as the last release wrote them (no version column).
LAST_RELEASE_CSV = (
    ",".join(COLUMNS) + "\r\n"
    "demo,q01,red striped t-shirt,p052,title: T-shirt | colour: Pink,img/p052.jpg,"
    'thumbs/p052.jpg,"0,1,2",annotator_a=1; annotator_b=2,1,lexical/default/text=2; '
    "lexical/nuggets/text=-,judge differs from humans; judges split,[e1] red = 0,"
    "bank/nuggets.jsonl,v1,2,visual: short sleeves; cotton,red,looks pink to me\r\n"
)


def test_csv_and_json_lines_write_what_the_last_release_wrote_plus_the_version(
    tmp_path: Path,
) -> None:
    csv_path, jsonl_path = tmp_path / "r.csv", tmp_path / "r.jsonl"
    assert write_review([ROW], csv_path) == 1 and write_review([ROW], jsonl_path) == 1
    with csv_path.open(encoding="utf-8", newline="") as handle:
        (written,) = list(csv.DictReader(handle))
    old = next(csv.DictReader(LAST_RELEASE_CSV.splitlines()))
    old.update(corrected_grade="", add_entries="", remove_entries="", note="")
    assert written == {**old, "schema_version": "1"}
    (line,) = jsonl_path.read_text(encoding="utf-8").splitlines()
    data = json.loads(line)
    assert data["judges"] == {"lexical/default/text": 2, "lexical/nuggets/text": None}
    assert data["entries"] == [
        {
            "id": "e1",
            "kind": "nuggets",
            "text": "red",
            "grades": {"lexical/nuggets/text": 0},
            "spans": {},
        }
    ]
    assert data["grades"] == "0,1,2" and data["corrected_grade"] == ""
    assert "inclusion_probability" not in data and data["schema_version"] == 1


def test_a_filled_in_file_of_the_last_release_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "old.csv"
    path.write_text(LAST_RELEASE_CSV, encoding="utf-8")
    ((line, row),) = read_review(path)
    assert line == 2 and (row.dataset, row.query_id, row.result_id) == ("demo", "q01", "p052")
    assert row.grades == (0, 1, 2) and row.bank == "bank/nuggets.jsonl"
    assert row.correction == Correction(
        corrected_grade=2,
        add_entries=("visual: short sleeves", "cotton"),
        remove_entries=("red",),
        note="looks pink to me",
    )
    assert row.shown is None and row.draw is None


def test_drawn_rows_carry_their_draw_both_ways(tmp_path: Path) -> None:
    drawn = ReviewRow("demo", "q2", "r9", (0, 1, 2), draw=Draw(0.25, 120))
    for name in ("next.csv", "next.jsonl"):
        path = tmp_path / name
        write_review([ROW, drawn], path)
        rows = [row for _, row in read_review(path)]
        assert [row.draw for row in rows] == [None, Draw(0.25, 120)]
    header = (tmp_path / "next.csv").read_text(encoding="utf-8").splitlines()[0]
    assert header.endswith("note,inclusion_probability,pool_size,schema_version")


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        (
            "corrected_grade",
            "7",
            "field 'corrected_grade' must be a whole grade on the scale 0,1,2",
        ),
        ("corrected_grade", "two", "field 'corrected_grade' must be a whole grade"),
        ("grades", "0,x", "field 'grades' must be whole grades separated by commas"),
        ("inclusion_probability", "often", "field 'inclusion_probability' must be a number"),
        ("pool_size", "1.5", "field 'pool_size' must be a whole number"),
        ("query_id", "", "field 'query_id' is missing"),
    ],
)
def test_a_value_that_cannot_be_used_names_the_file_line_and_column(
    tmp_path: Path, column: str, value: str, message: str
) -> None:
    path = tmp_path / "r.jsonl"
    data = {"dataset": "demo", "query_id": "q", "result_id": "r", "grades": "0,1,2", column: value}
    path.write_text("\n" + json.dumps(data) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=f"r.jsonl:2: {message}"):
        read_review(path)


def test_a_csv_without_the_columns_to_read_back_asks_for_a_fresh_export(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("dataset,query_id,result_id\ndemo,q,r\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"r.csv:1: column 'corrected_grade' is missing"):
        read_review(path)
    with pytest.raises(DatasetError, match="no such review file"):
        read_review(tmp_path / "none.csv")
