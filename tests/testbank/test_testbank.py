"""Test banks: the file format and its checks, versions, the derivation rule, reading the
judge's per-entry answer, and the prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.config import DatasetConfig, ModalityConfig, PromptConfig
from mmjudge.errors import ConfigError, DatasetError
from mmjudge.judges.lexical import entry_grades_text
from mmjudge.testbank.bank import Entry, entry_id, make_bank, read_bank, write_bank
from mmjudge.testbank.derive import check_bank_prompt, derive, describe
from mmjudge.testbank.grading import grade_answer, parse_entries, render_bank_prompt
from mmjudge.testbank.write import parse_bank_answer


def _line(**row: object) -> str:
    return json.dumps(row)


def _bank_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "bank.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_entry_ids_hash_query_and_text_and_are_filled_in(tmp_path: Path) -> None:
    assert entry_id("q1", "red") == entry_id("q1", "red") != entry_id("q2", "red")
    assert len(entry_id("q1", "red")) == 16
    path = _bank_file(
        tmp_path,
        _line(query_id="q1", kind="nuggets", text="red", visual=True),
        _line(query_id="q1", id="stale", kind="nuggets", text="  striped   "),
    )
    bank = read_bank(path)
    red, striped = bank.for_query("q1")
    assert red.id == entry_id("q1", "red") and red.visual
    # An edited text is a new entry: its id follows the text, whatever the file said.
    assert striped == Entry("q1", entry_id("q1", "striped"), "nuggets", "striped", False)


def test_version_ignores_order_and_changes_with_any_edit(tmp_path: Path) -> None:
    a = Entry("q1", entry_id("q1", "red"), "nuggets", "red", True)
    b = Entry("q1", entry_id("q1", "striped"), "nuggets", "striped", True)
    assert make_bank("nuggets", [a, b]).version == make_bank("nuggets", [b, a]).version
    edited = Entry("q1", entry_id("q1", "crimson"), "nuggets", "crimson", True)
    assert make_bank("nuggets", [a, b]).version != make_bank("nuggets", [edited, b]).version
    flipped = Entry(a.query_id, a.id, a.kind, a.text, False)
    assert make_bank("nuggets", [a, b]).version != make_bank("nuggets", [flipped, b]).version
    path = write_bank(make_bank("nuggets", [a, b]), tmp_path / "out" / "bank.jsonl")
    assert read_bank(path).version == make_bank("nuggets", [a, b]).version


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (["{not json"], ":1: not valid JSON"),
        ([_line(query_id="q1", kind="nuggets")], ":1: field 'text' must be a non-empty string"),
        ([_line(query_id="q1", kind="facts", text="x")], ":1: field 'kind' must be one of"),
        (
            [_line(query_id="q1", kind="nuggets", text="x", visual="yes")],
            ":1: field 'visual' must be true or false",
        ),
        (
            [_line(query_id="q1", kind="nuggets", text="x", colour="red")],
            ":1: field 'colour' is not a bank field",
        ),
        (
            [
                _line(query_id="q1", kind="nuggets", text="x"),
                "",
                _line(query_id="q1", kind="questions", text="y?"),
            ],
            ":3: field 'kind' is 'questions' but the bank holds 'nuggets'",
        ),
        (
            [
                _line(query_id="q1", kind="nuggets", text="red"),
                _line(query_id="q1", kind="nuggets", text=" red "),
            ],
            ":2: field 'text' repeats line 1 for query 'q1'",
        ),
        ([""], ": the test bank has no entries"),
    ],
)
def test_bad_bank_lines_name_file_line_and_field(tmp_path: Path, lines, message) -> None:
    path = _bank_file(tmp_path, *lines)
    with pytest.raises(DatasetError) as error:
        read_bank(path)
    assert str(error.value).startswith(str(path)) and message in str(error.value)


def test_a_bank_of_the_wrong_kind_is_refused(tmp_path: Path) -> None:
    path = _bank_file(tmp_path, _line(query_id="q1", kind="nuggets", text="x"))
    with pytest.raises(DatasetError, match="is 'nuggets' but the bank holds 'questions'"):
        read_bank(path, "questions")


def _prompt(**settings: object) -> PromptConfig:
    return PromptConfig(id="nuggets", bank="nuggets", **settings)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("grades", "entry_grades", "n", "expected"),
    [
        # 0-2, default cuts 50% and 100% of entries graded >= 4.
        ([0, 1, 2], {"a": 5, "b": 4, "c": 5}, 3, 2),
        ([0, 1, 2], {"a": 5, "b": 4, "c": 3}, 3, 1),  # 2/3 covered
        ([0, 1, 2], {"a": 5, "b": 1, "c": 0}, 3, 0),  # 1/3 covered
        ([0, 1, 2], {"a": 5, "b": 5}, 3, 1),  # an entry left out counts as 0
        # 0-3: a third, two thirds, all.
        ([0, 1, 2, 3], {"a": 4, "b": 4, "c": 0}, 3, 2),
        ([0, 1, 2, 3], {"a": 4, "b": 0, "c": 0}, 3, 1),
        ([1, 2, 3], {"a": 0}, 1, 1),
    ],
)
def test_coverage_rule_by_hand(grades, entry_grades, n, expected) -> None:
    assert derive(_prompt(), grades, entry_grades, n) == expected


def test_best_rule_given_cuts_and_description() -> None:
    best = _prompt(rule="best")
    # 0-2, default cuts 2.5 and 5.
    assert [derive(best, [0, 1, 2], {"a": g}, 3) for g in range(6)] == [0, 0, 0, 1, 1, 2]
    strict = _prompt(covered_from=5, cuts=[0.3, 0.9])
    assert derive(strict, [0, 1, 2], {"a": 5, "b": 4, "c": 4}, 3) == 1
    assert describe(_prompt(), [0, 1, 2]).text == (
        "share of entries graded ≥ 4 of 5: 0 below 50%, 1 from 50%, 2 from 100%"
    )
    assert describe(best, [0, 1, 2, 3]).cuts == pytest.approx([5 / 3, 10 / 3, 5])
    with pytest.raises(ConfigError, match=r"gives 3 cut points; the scale \[0, 1, 2\] needs 2"):
        derive(_prompt(cuts=[0.2, 0.5, 1.0]), [0, 1, 2], {}, 1)
    with pytest.raises(ConfigError, match="use shares above 0 and at most 1"):
        derive(_prompt(cuts=[0.5, 2]), [0, 1, 2], {}, 1)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"bank": "facts"}, "prompt.bank='facts' is not allowed"),
        ({"bank_calls": "pair"}, "prompt.bank_calls='pair' is not allowed"),
        ({"rule": "mean"}, "prompt.rule='mean' is not allowed"),
        ({"covered_from": 9}, "prompt.covered_from=9 is not allowed"),
        ({"cuts": [0.9, 0.5]}, "the cut points must increase"),
    ],
)
def test_bad_bank_prompt_settings_are_one_line(settings, message) -> None:
    prompt = _prompt(**{k: v for k, v in settings.items() if k != "bank"})
    if "bank" in settings:
        prompt.bank = settings["bank"]
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        check_bank_prompt(prompt)


ENTRIES = [
    Entry("q1", "id-red", "nuggets", "red", True),
    Entry("q1", "id-striped", "nuggets", "striped", True),
    Entry("q1", "id-tee", "nuggets", "t-shirt", False),
]


def test_entry_answers_are_read_in_several_shapes() -> None:
    answer = parse_entries(
        'E1: 5 | "a red tee"\n- **E2** = 3/5\nE3 - 0\nE3: 5\nE9: 4\nnoise', ENTRIES
    )
    assert answer.grades == {"id-red": 5, "id-striped": 3, "id-tee": 0}
    assert answer.spans == {"id-red": "a red tee"}
    assert parse_entries("Relevant.", ENTRIES).problem == (
        "no entry grade (E1: 0-5) in the answer: 'Relevant.'"
    )
    graded = grade_answer("E1: 5\nE2: 4", ENTRIES, _prompt(), [0, 1, 2])
    assert graded.label == 1 and graded.explanation == (
        "2 of 3 entries graded (1 left out, counted as 0)"
    )
    assert grade_answer("2", ENTRIES, _prompt(), [0, 1, 2]).label is None


def test_grading_prompt_shows_entries_and_visual_notes_only_with_an_image() -> None:
    dataset = DatasetConfig(name="d", path=".", description="Clothes.")
    common = {
        "kind": "nuggets",
        "query": "red striped t-shirt",
        "entries": ENTRIES,
        "fields": (("name", "Striped Tee"),),
        "prompt": _prompt(spans=True),
        "dataset": dataset,
    }
    text = render_bank_prompt(modality=ModalityConfig(name="text"), n_images=0, **common)  # type: ignore[arg-type]
    assert "Points to check:\nE1: red\nE2: striped\nE3: t-shirt" in text.text
    assert "name: Striped Tee" in text.text and "image" not in text.text
    assert "About the collection: Clothes." in text.text and " | " in text.text
    assert text.entries == (("E1", "red"), ("E2", "striped"), ("E3", "t-shirt"))
    mm = render_bank_prompt(
        modality=ModalityConfig(name="mm", include_image=True), n_images=1, **common
    )  # type: ignore[arg-type]
    assert "E1: red (look at the image)" in mm.text and "E3: t-shirt\n" in mm.text
    assert "The result's image is attached." in mm.text


def test_lexical_grades_entries_by_term_overlap() -> None:
    text = entry_grades_text(
        [("E1", "red"), ("E2", "striped t-shirt"), ("E3", "Does it have polka dots?")],
        "Striped Tee in red",
    )
    assert text == "E1: 5\nE2: 2\nE3: 0"


def test_written_bank_answers_are_parsed_with_their_visual_flag() -> None:
    answer = "Here you go:\n1. visual: Red\n- text: cotton\nvisual: red\n* TEXT: `machine washable`"
    entries = parse_bank_answer(answer, "q1", "nuggets", 10)
    assert [(e.text, e.visual) for e in entries] == [
        ("Red", True),
        ("cotton", False),
        ("red", True),
        ("machine washable", False),
    ]
    assert len(parse_bank_answer(answer, "q1", "nuggets", 2)) == 2
