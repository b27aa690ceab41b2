"""The race's labelling files and its file of asked grades: what is written reads back, a
person's edits are taken as far as they go, and a bad grade is one line naming file and row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmjudge.errors import MMJudgeError
from mmjudge.grid.race_labels import (
    AskedLabels,
    LabellingDesk,
    RevealedGrades,
    ask_round,
    asked_records,
    restored_labels,
)
from mmjudge.store.asked_grades import (
    ASKED_GRADES_FILE,
    AskedGrade,
    read_asked_grades,
    write_asked_grades,
)
from mmjudge.store.labelling_file import (
    LabellingError,
    LabellingRow,
    labelling_paths,
    read_labelling_grades,
    write_labelling_files,
)

SCALE = (0.0, 1.0, 2.0)


def rows() -> list[LabellingRow]:
    return [
        LabellingRow("q1", "red dress", "p1", (("name", 'A "red", dress'),), ("a.png",), None),
        LabellingRow(
            "q1", "red dress", "p2", (("name", "Skirt"), ("notes", "two\nlines")), (), 2.0
        ),
        LabellingRow("q2", "blue shirt", "p3", (), ("https://x/1.jpg", "b.png"), None),
    ]


def test_written_rows_read_back_with_the_grades_given_and_blanks_left_to_do(
    tmp_path: Path,
) -> None:
    paths = write_labelling_files(tmp_path, 3, rows())
    assert paths == labelling_paths(tmp_path, 3)
    header = paths.csv.read_text(encoding="utf-8").splitlines()[0]
    assert header == "\ufeffquery_id,query,result_id,name,notes,images,grade"  # marked UTF-8
    objects = [json.loads(line) for line in paths.jsonl.read_text().splitlines()]
    assert objects[1]["fields"] == {"name": "Skirt", "notes": "two\nlines"}
    assert objects[2]["images"] == ["https://x/1.jpg", "b.png"]
    assert read_labelling_grades(tmp_path, 3, SCALE) == {("q1", "p2"): 2.0}
    # a person fills one row of the spreadsheet (a quoted field spans two lines)
    text = paths.csv.read_text(encoding="utf-8")
    paths.csv.write_text(text.replace("b.png,\n", "b.png,1\n"), encoding="utf-8")
    assert read_labelling_grades(tmp_path, 3, SCALE) == {("q1", "p2"): 2.0, ("q2", "p3"): 1.0}


@pytest.mark.parametrize("grade", ["7", "good", "1.5", "-1"])
def test_a_grade_off_the_scale_names_the_file_and_row(tmp_path: Path, grade: str) -> None:
    paths = write_labelling_files(tmp_path, 1, rows())
    lines = paths.csv.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[-1] = lines[-1].rstrip("\n") + grade + "\n"
    paths.csv.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(LabellingError) as raised:
        read_labelling_grades(tmp_path, 1, SCALE)
    message = str(raised.value)
    assert message.startswith(f"{paths.csv}:5: grade '{grade}' is not on the dataset's scale")
    assert "(0, 1, 2)" in message and "\n" not in message


def test_the_two_files_giving_one_item_different_grades_is_refused(tmp_path: Path) -> None:
    paths = write_labelling_files(tmp_path, 1, rows())
    objects = [json.loads(line) for line in paths.jsonl.read_text().splitlines()]
    objects[1]["grade"] = 0
    paths.jsonl.write_text("".join(json.dumps(o) + "\n" for o in objects))
    with pytest.raises(LabellingError, match=r"round-1.jsonl:2: grade 0 for query 'q1', result"):
        read_labelling_grades(tmp_path, 1, SCALE)


def test_a_spreadsheet_without_its_grade_column_or_ids_is_refused(tmp_path: Path) -> None:
    paths = write_labelling_files(tmp_path, 1, rows())
    paths.jsonl.unlink()
    paths.csv.write_text("query_id,query,result_id,score\nq1,x,p1,2\n")
    with pytest.raises(LabellingError, match="no 'grade' column"):
        read_labelling_grades(tmp_path, 1, SCALE)
    paths.csv.write_text("query_id,query,result_id,grade\n,x,p1,2\n")
    with pytest.raises(LabellingError, match=r"round-1.csv:2: the row has no query_id"):
        read_labelling_grades(tmp_path, 1, SCALE)


def test_asked_grades_round_trip_and_a_damaged_file_is_one_line(tmp_path: Path) -> None:
    kept = [AskedGrade(1, "q1", "p1", 0.5, 2.0), AskedGrade(2, "q2", "p3", 0.1, None)]
    write_asked_grades(tmp_path, kept)
    assert read_asked_grades(tmp_path) == tuple(kept)
    (tmp_path / ASKED_GRADES_FILE).write_text('{"schema_version": 1, "items": [{"round": 1}]}')
    with pytest.raises(MMJudgeError, match="not a file of asked grades"):
        read_asked_grades(tmp_path)
    assert read_asked_grades(tmp_path / "elsewhere") == ()


def codes(n: int) -> np.ndarray:
    rng = np.random.default_rng(4)
    return rng.integers(0, 3, size=(3, n))


def test_a_round_waiting_for_grades_keeps_its_draw_when_the_judges_grades_change(
    tmp_path: Path,
) -> None:
    """A round drawn once is never drawn again: a rerun whose judges' grades changed (failed
    items retried) asks for the same items, with the probabilities they were drawn with."""
    keys = [(f"q{i}", f"p{i}") for i in range(60)]
    truth = np.arange(60) % 3
    desk = LabellingDesk(
        tmp_path,
        keys,
        SCALE,
        lambda wanted: {k: LabellingRow(k[0], "q", k[1], (), (), None) for k in wanted},
    )
    labels = AskedLabels.empty(60)
    grades = codes(60)
    assert ask_round(labels, desk, grades, 0, [0, 1, 2], None, 7, 1) > 0
    request = desk.request(1, labels)
    asked = labels.rounds.copy()
    write_asked_grades(tmp_path, asked_records(labels, keys))
    # taken up: the same draw, though every judge now grades otherwise
    again = restored_labels(read_asked_grades(tmp_path), keys, 0, tmp_path)
    assert ask_round(again, desk, (grades + 1) % 3, 0, [0, 1, 2], None, 7, 1) == request.missing
    assert np.array_equal(again.rounds, asked)
    # the person fills every row: the round closes with weights 1/π
    objects = [json.loads(line) for line in request.paths.jsonl.read_text().splitlines()]
    position = {k: i for i, k in enumerate(keys)}
    for o in objects:
        o["grade"] = int(truth[position[(o["query_id"], o["result_id"])]])
    request.paths.jsonl.write_text("".join(json.dumps(o) + "\n" for o in objects))
    assert ask_round(again, desk, (grades + 1) % 3, 0, [0, 1, 2], None, 7, 1) == 0
    chosen = asked == 1
    assert np.array_equal(again.weights[chosen], 1 / again.probabilities[chosen])
    assert np.array_equal(again.reference[chosen], truth[chosen].astype(float))
    assert again.per_round == [int(chosen.sum())]
    # the same draw asked of an oracle over the same grades closes the same way at once
    direct = AskedLabels.empty(60)
    assert (
        ask_round(direct, RevealedGrades(truth.astype(float)), grades, 0, [0, 1, 2], None, 7, 1)
        == 0
    )
    assert np.array_equal(direct.weights, again.weights)


def test_a_decided_round_missing_grades_in_the_kept_file_is_refused(tmp_path: Path) -> None:
    keys = [("q1", "p1"), ("q2", "p2")]
    records = [AskedGrade(1, "q1", "p1", 0.5, None)]
    with pytest.raises(MMJudgeError, match="round 1 was decided without all of its grades"):
        restored_labels(records, keys, 1, tmp_path / ASKED_GRADES_FILE)
    with pytest.raises(MMJudgeError, match="which this race's dataset lacks"):
        restored_labels([AskedGrade(1, "q9", "p9", 0.5, 1.0)], keys, 0, tmp_path)
