from __future__ import annotations

from pathlib import Path

import pytest

from mmjudge.data.qrels import n_judgments, read_qrels, read_run, write_qrels
from mmjudge.errors import DatasetError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_read_qrels_tolerates_blank_lines_and_any_whitespace(tmp_path: Path) -> None:
    path = write(tmp_path / "q.txt", "q1 0 d1 2\n\n  q1\t0\td2   0  \nq2 Q0 d1 -1\n\n")
    assert read_qrels(path) == {"q1": {"d1": 2, "d2": 0}, "q2": {"d1": -1}}


def test_qrels_round_trip_keeps_order(tmp_path: Path) -> None:
    qrels = {"q9": {"b": 3, "a": 0}, "q1": {"z": 1}}
    write_qrels(qrels, tmp_path / "out.qrels")
    text = (tmp_path / "out.qrels").read_text()
    assert text == "q9 0 b 3\nq9 0 a 0\nq1 0 z 1\n"
    again = read_qrels(tmp_path / "out.qrels")
    assert again == qrels and list(again) == ["q9", "q1"] and list(again["q9"]) == ["b", "a"]
    assert n_judgments(again) == 3


def test_malformed_qrels_line_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.txt", "q1 0 d1 2\n\nq1 0 d2\n")
    with pytest.raises(DatasetError) as info:
        read_qrels(path)
    assert str(info.value) == f"{path}:3: expected 'query iteration doc grade', got 'q1 0 d2'"


@pytest.mark.parametrize("grade", ["x", "1.0", "2a"])
def test_non_integer_grade_names_file_line_and_field(tmp_path: Path, grade: str) -> None:
    path = write(tmp_path / "bad.txt", f"q1 0 d1 1\nq1 0 d2 {grade}\n")
    with pytest.raises(DatasetError) as info:
        read_qrels(path)
    message = str(info.value)
    assert message == f"{path}:2: grade (field 4) must be an integer, got {grade!r}"
    assert "\n" not in message


def test_duplicate_judgment_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "dup.txt", "q1 0 d1 1\nq1 0 d1 2\n")
    with pytest.raises(DatasetError, match=r"dup\.txt:2: .*judged more than once"):
        read_qrels(path)


def test_long_malformed_lines_are_shortened(tmp_path: Path) -> None:
    path = write(tmp_path / "long.txt", "q1 0 " + "x " * 200 + "\n")
    with pytest.raises(DatasetError) as info:
        read_qrels(path)
    assert len(str(info.value)) < len(str(path)) + 150


def test_unreadable_files_are_dataset_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        read_qrels(tmp_path / "absent.txt")
    with pytest.raises(DatasetError, match="directory"):
        read_qrels(tmp_path)
    (tmp_path / "latin1.txt").write_bytes(b"q1 0 d\xe9 1\n")
    with pytest.raises(DatasetError, match="not UTF-8"):
        read_qrels(tmp_path / "latin1.txt")


def test_empty_file_gives_empty_qrels(tmp_path: Path) -> None:
    assert read_qrels(write(tmp_path / "empty.txt", "\n\n")) == {}


def test_read_run(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.txt",
        "q1 Q0 d3 1 12.5 sys\nq1 Q0 d1 2 -3 sys\n\nq2 Q0 d1 1 1e-3 sys\n",
    )
    assert read_run(path) == {"q1": {"d3": 12.5, "d1": -3.0}, "q2": {"d1": 0.001}}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q1 Q0 d1 1 0.5", "expected 'query Q0 doc rank score tag', got 'q1 Q0 d1 1 0.5'"),
        ("q1 Q0 d1 first 0.5 sys", "rank (field 4) must be an integer, got 'first'"),
        ("q1 Q0 d1 1 high sys", "score (field 5) must be a number, got 'high'"),
    ],
)
def test_malformed_run_lines(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path / "run.txt", f"q1 Q0 d0 1 1.0 sys\n{line}\n")
    with pytest.raises(DatasetError) as info:
        read_run(path)
    assert str(info.value) == f"{path}:2: {message}"


def test_run_listing_a_document_twice_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", "q1 Q0 d1 1 2 s\nq1 Q0 d1 2 1 s\n")
    with pytest.raises(DatasetError, match="more than once"):
        read_run(path)
