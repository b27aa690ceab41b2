"""The pairs a distilled judge learns from, their split by query, and each bad input's one
line (no torch needed)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mmjudge.distill.pairs import MIN_TRAIN_PAIRS, gather, split
from mmjudge.errors import MMJudgeError
from tests.distill.toy import items, write_source


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One toy source for the module (no test changes it)."""
    return write_source(tmp_path_factory.mktemp("toy"))


def test_humans_teach_the_consensus_with_the_dataset_text(source: Path) -> None:
    gathered = gather(source, "humans")
    assert gathered.dataset == "toy" and gathered.grades == [0, 1, 2]
    assert len(gathered.pairs) == 48
    expected = {(str(r["query_id"]), str(r["result_id"])): r for r in items()}
    for pair in gathered.pairs:
        row = expected[(pair.query_id, pair.result_id)]
        assert pair.text == row["fields"]["name"]  # type: ignore[index]
        assert pair.grade == row["labels"]["annotator_a"]  # type: ignore[index]
        assert pair.human == pair.grade and math.isnan(pair.source)


def test_a_judge_teaches_its_own_grades_beside_the_people(source: Path) -> None:
    gathered = gather(source, "judge", judge="dull")
    assert gathered.teacher_name == "dull"
    ones = [p for p in gathered.pairs if p.human == 1]
    assert len(ones) == 16 and all(p.grade == 0 and p.source == 0 for p in ones)


def test_a_label_file_teaches_its_grades(source: Path, tmp_path: Path) -> None:
    qrels = tmp_path / "mine.qrels"
    qrels.write_text("q0 0 q0r0 1\nq0 0 q0r4 2\n", encoding="utf-8")
    gathered = gather(source, "labels", labels=qrels)
    assert sorted((p.key, p.grade) for p in gathered.pairs) == [("q0\tq0r0", 1), ("q0\tq0r4", 2)]


def test_the_split_holds_out_whole_queries_and_is_seeded(source: Path) -> None:
    pairs = gather(source, "humans").pairs
    first = split(pairs, 0.25, seed=3)
    assert first == split(pairs, 0.25, seed=3)
    assert len(first.held_out_queries) == 2 and len(first.held_out) == 12
    assert {p.query_id for p in first.train}.isdisjoint(first.held_out_queries)
    assert len(first.train) + len(first.held_out) == len(pairs)
    others = {tuple(split(pairs, 0.25, seed=s).held_out_queries) for s in range(10)}
    assert len(others) > 1


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda s, t: gather(s, "judge", judge="nobody"), "no such judge in"),
        (lambda s, t: gather(s, "judge"), "pick one with --judge NAME (dull, sharp)"),
        (lambda s, t: gather(t / "nowhere", "humans"), "not a run or sweep folder"),
        (lambda s, t: gather(s, "labels"), "--teacher labels needs --labels FILE"),
        (lambda s, t: gather(s, "labels", labels=t / "x.qrels"), "--labels"),
        (lambda s, t: split(gather(s, "humans").pairs, 1.5, 0), "--holdout 1.5"),
    ],
)
def test_bad_input_is_one_line(source: Path, tmp_path: Path, make: object, words: str) -> None:
    with pytest.raises(MMJudgeError) as caught:
        make(source, tmp_path)  # type: ignore[operator]
    message = str(caught.value)
    assert words in message and "\n" not in message


def test_too_few_pairs_is_one_line(tmp_path: Path) -> None:
    pairs = gather(write_source(tmp_path, n_queries=2), "humans").pairs
    with pytest.raises(MMJudgeError, match=f"give at least {MIN_TRAIN_PAIRS}") as caught:
        split(pairs, 0.5, 0)
    assert "\n" not in str(caught.value)


def test_one_grade_only_is_one_line(source: Path) -> None:
    pairs = [p._replace(grade=2) for p in gather(source, "humans").pairs]
    with pytest.raises(MMJudgeError, match="every training pair has grade 2"):
        split(pairs, 0.25, 0)


def test_a_source_without_text_is_one_line(tmp_path: Path) -> None:
    source = write_source(tmp_path, text=False)
    with pytest.raises(MMJudgeError, match="have no text fields") as caught:
        gather(source, "humans")
    assert "\n" not in str(caught.value)


def test_grades_off_the_scale_in_a_label_file_name_the_line(source: Path, tmp_path: Path) -> None:
    qrels = tmp_path / "bad.qrels"
    qrels.write_text("q0 0 q0r0 1\nq0 0 q0r1 7\n", encoding="utf-8")
    with pytest.raises(MMJudgeError, match=r"bad.qrels:2: grade 7"):
        gather(source, "labels", labels=qrels)
