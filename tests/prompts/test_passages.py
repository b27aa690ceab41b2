"""Several results in one call: the prompt keeps the single-result prompt's shared part and
shows each result's block under its marker; the answer, a JSON object (structured output) or
lines, is read by one parser."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.data.schema import Example
from mmjudge.engine.cell import typed_config
from mmjudge.errors import ConfigError
from mmjudge.prompts import render
from mmjudge.prompts.parsing import ParsedGrade
from mmjudge.prompts.passages import (
    answer_schema,
    call_weights,
    grades_answer,
    parse_passages,
    render_passages,
)
from tests.helpers import compose_config

GRADES = (0, 1, 2)
EXAMPLES = [
    Example("q1", "red dress", "r1", (("name", "Wrap dress"), ("colour", "red"))),
    Example("q1", "red dress", "r2", (("name", "Shift dress"), ("colour", "crimson"))),
    Example("q1", "red dress", "r3", (("name", "Pea coat"),)),
]


def cell(*overrides: str) -> SweepConfig:
    cfg = OmegaConf.to_object(compose_config(["modality=text", *overrides]))
    assert isinstance(cfg, SweepConfig)
    return cfg


@pytest.mark.parametrize("paraphrase", [0, 1, 2])
def test_the_call_keeps_the_shared_part_and_shows_each_block_under_its_marker(
    paraphrase: int,
) -> None:
    cfg = cell(f"prompt.paraphrase={paraphrase}", "prompt.guidelines=true")
    singles = [render(e, cfg.modality, cfg.prompt, cfg.dataset, n_images=0) for e in EXAMPLES]
    text = render_passages(singles, GRADES, reasons=True)
    first = singles[0]
    # The static part and the query's line are the single prompt's, byte for byte.
    assert first.static_chars > 0
    head = first.text[: first.result_chars].rstrip()
    assert text.startswith(head) and head.endswith("red dress")
    assert text[: first.static_chars] == first.text[: first.static_chars]
    # One line introduces the results; each is shown as its own prompt shows it, but for
    # that prompt's line introducing the one result.
    intro = "The 3 results, each under its marker and described by its catalogue fields:"
    assert text[len(head) :].startswith(f"\n\n{intro}\n\nR1\n")
    for place, single in enumerate(singles, start=1):
        block = single.text[single.result_chars : single.answer_chars].strip()
        one, shown = block.split("\n", 1)
        assert f"\n\nR{place}\n{shown}\n\n" in text and one not in text
    # The single prompt's own closing instructions are replaced by the call's.
    closing = first.text[first.answer_chars :]
    assert closing and closing not in text
    assert text.endswith(
        '\n\nGrade each result on its own line as "R1: N", N from 0 to 2: one line per marker '
        "(R1 to R3), none left out. After the grade, on the same line, give a one-sentence "
        "reason."
    )


def closing(reasons: bool, structured: bool) -> str:
    cfg = cell()
    singles = [render(e, cfg.modality, cfg.prompt, cfg.dataset, n_images=0) for e in EXAMPLES]
    return render_passages(singles, GRADES, reasons, structured).rsplit("\n\n", 1)[1]


def test_without_reasons_the_answer_asked_for_is_the_grades_alone() -> None:
    assert closing(reasons=False, structured=False) == (
        'Grade each result on its own line as "R1: N", N from 0 to 2: one line per marker '
        "(R1 to R3), none left out. Write nothing else."
    )
    assert closing(reasons=False, structured=True) == (
        "Answer with a JSON object with one key per marker (R1 to R3), none left out, whose "
        "value is the result's grade, a whole number from 0 to 2."
    )
    assert closing(reasons=True, structured=True) == (
        "Answer with a JSON object with one key per marker (R1 to R3), none left out, whose "
        'value is {"grade": N, "reason": "..."}: N the result\'s grade from 0 to 2 and a '
        "one-sentence reason."
    )


def test_the_schema_requires_every_marker_on_the_scale_and_nothing_else() -> None:
    grade = {"type": "integer", "enum": [0, 1, 2]}
    assert answer_schema(grades_answer(2, GRADES, reasons=False)) == {
        "type": "object",
        "properties": {"R1": grade, "R2": grade},
        "required": ["R1", "R2"],
        "additionalProperties": False,
    }
    with_reason = answer_schema(grades_answer(1, (1, 2, 3, 4), reasons=True))
    assert with_reason["properties"]["R1"] == {
        "type": "object",
        "properties": {
            "grade": {"type": "integer", "enum": [1, 2, 3, 4]},
            "reason": {"type": "string"},
        },
        "required": ["grade", "reason"],
        "additionalProperties": False,
    }


def test_a_structured_answer_is_read_by_its_keys() -> None:
    assert parse_passages('{"R2": 0, "R1": 2, "R3": 1}', 3, GRADES).grades == (
        ParsedGrade(2, None, None),
        ParsedGrade(0, None, None),
        ParsedGrade(1, None, None),
    )
    fenced = (
        '```json\n{"r1": {"grade": 1, "reason": "close"}, "R2": {"grade": 0, "reason": ""}}\n```'
    )
    assert parse_passages(fenced, 2, GRADES).grades == (
        ParsedGrade(1, "close", None),
        ParsedGrade(0, None, None),
    )


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ('{"R1": 2, "R3": 0}', "no 'R2' grade in the answer"),
        ('{"R1": 2, "R2": 7, "R3": 0}', "'R2' grade 7 is not on the scale [0, 1, 2]"),
        ('{"R1": 2, "R2": "high", "R3": 0}', "'R2' is not a grade: 'high'"),
        ('{"R1": 2, "R2": [1], "R3": 0}', "'R2' is not a grade: [1]"),
        ('{"R1": 2, "R2": true, "R3": 0}', "'R2' is not a grade: True"),
    ],
)
def test_a_key_without_a_good_grade_gets_no_grade(answer: str, error: str) -> None:
    read = parse_passages(answer, 3, GRADES)
    assert read.any_read
    assert read.grades[1] == ParsedGrade(None, None, error)
    assert [g.label for g in read.grades[::2]] == [2, 0]


def test_a_malformed_structured_answer_grades_nothing() -> None:
    for answer in ('{"R1": 2, "R2": ', "[2, 0, 1]", '{"grades": [2, 0, 1]}'):
        read = parse_passages(answer, 3, GRADES)
        assert not read.any_read


def test_each_result_weighs_its_own_block_and_an_equal_part_of_the_rest() -> None:
    cfg = cell()
    singles = [render(e, cfg.modality, cfg.prompt, cfg.dataset, n_images=0) for e in EXAMPLES]
    text = render_passages(singles, GRADES, reasons=False)
    weights = call_weights(singles, text, "You grade.")
    assert sum(weights) == pytest.approx(len(text) + len("You grade."))
    # The blocks as the call shows them: "R1\nname: Wrap dress\ncolour: red", ...
    blocks = [text.split(f"\n\nR{n}\n", 1)[1].split("\n\n", 1)[0] for n in (1, 2, 3)]
    own = [len(f"R{n}\n{block}") for n, block in enumerate(blocks, start=1)]
    assert [w - weights[0] for w in weights] == pytest.approx([o - own[0] for o in own])
    assert weights[2] < weights[0]  # the coat's one field against the dresses' two


def test_a_single_prompt_is_its_three_parts() -> None:
    cfg = cell()
    single = render(EXAMPLES[0], cfg.modality, cfg.prompt, cfg.dataset, n_images=0)
    assert 0 < single.static_chars < single.result_chars < single.answer_chars < len(single.text)
    assert single.text[single.static_chars :].startswith("Query: red dress\n")
    assert (
        single.text[single.result_chars : single.answer_chars]
        .strip()
        .startswith("The result, described by its catalogue fields:\nname: Wrap dress\ncolour: red")
    )
    assert single.text[single.answer_chars :].startswith("Reply with the grade alone")


def test_every_marker_is_read_by_its_own_line() -> None:
    answer = "R2: 0 - wrong colour\n**R1**: 2 — fits\nR3 : 1\n"
    assert parse_passages(answer, 3, GRADES).grades == (
        ParsedGrade(2, "fits", None),
        ParsedGrade(0, "wrong colour", None),
        ParsedGrade(1, None, None),
    )


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ("R1: 2\nR3: 0", "no 'R2: N' line in the answer"),
        ("R1: 2\nR2: 7\nR3: 0", "'R2' grade 7 is not on the scale [0, 1, 2]"),
        ("R1: 2\nR2: 1.5\nR3: 0", "'R2' grade 1.5 is not on the scale [0, 1, 2]"),
        ("R1: 2\nR2: 1\nR2: 0\nR3: 0", "'R2' is given 2 grades"),
        ("R1: 2\nThe second, R2: 1, fits\nR3: 0", "no 'R2: N' line in the answer"),
    ],
)
def test_a_marker_without_one_good_line_gets_no_grade(answer: str, error: str) -> None:
    grades = parse_passages(answer, 3, GRADES)
    assert grades.any_read
    assert grades.grades[1] == ParsedGrade(None, None, error)
    assert [g.label for g in grades.grades[::2]] == [2, 0]


def test_an_answer_without_any_marker_line_grades_nothing() -> None:
    for answer in ("2\nThe result matches.", "", None, "R9: 2"):
        read = parse_passages(answer, 3, GRADES)
        assert not read.any_read and all(g.label is None for g in read.grades)


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("prompt.passages_per_call=0", "prompt.passages_per_call=0: use a whole number, 1"),
        ("prompt.passages_per_call=-2", "prompt.passages_per_call=-2: use a whole number, 1"),
        ("prompt=aspects", "which prompt.aspects changes; use prompt.passages_per_call=1"),
        ("prompt=raters3", "which prompt.raters changes; use prompt.passages_per_call=1"),
        ("prompt=confidence", "which prompt.confidence changes"),
        ("prompt=nuggets", "which prompt.bank changes"),
        ("runner.samples=3", "with runner.samples=3: repeats are asked one result at a time"),
        (
            "prompt.answer_format=json",
            "prompt.answer_format='json': use one of auto, structured, lines",
        ),
    ],
)
def test_settings_that_cannot_go_with_several_results_are_refused_in_one_line(
    override: str, expected: str
) -> None:
    overrides = [override]
    if not override.startswith("prompt.passages_per_call"):
        overrides.append("prompt.passages_per_call=5")
    with pytest.raises(ConfigError) as info:
        typed_config(compose_config(overrides))
    assert expected in str(info.value) and "\n" not in str(info.value)
