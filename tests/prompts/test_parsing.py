import pytest

from mmjudge.prompts.parsing import parse_confidence, parse_grade

GRADES = [0, 1, 2]


@pytest.mark.parametrize(
    ("text", "label", "explanation"),
    [
        ("2\nThe dress is navy as asked.", 2, "The dress is navy as asked."),
        ("1 - right garment, wrong colour", 1, "right garment, wrong colour"),
        ("**0**\nNot a jacket.", 0, "Not a jacket."),
        ("Score: 2\nExplanation: exact match", 2, "exact match"),
        ("grade = 1", 1, None),
        ("Relevance: 0", 0, None),
        ('{"score": 1, "explanation": "close colour"}', 1, "close colour"),
        ('```json\n{"score": "2", "reason": "fits"}\n```', 2, "fits"),
        ("Here is my answer.\nScore: 0", 0, "Here is my answer."),
        ("2/2 fits well", 2, "fits well"),
    ],
)
def test_accepted_forms(text: str, label: int, explanation: str | None) -> None:
    parsed = parse_grade(text, GRADES)
    assert parsed.error is None
    assert parsed.label == label
    assert parsed.explanation == explanation


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        (None, "empty"),
        ("The result looks relevant to me.", "no grade"),
        ("3\nvery relevant", "outside the scale"),
        ("1.5", "not a whole number"),
        ("10 out of 10", "outside the scale"),
        ('{"score": true}', "no grade"),
        ("I cannot help with that.", "no grade"),
    ],
)
def test_unparseable_answers_are_never_coerced(text: str | None, reason: str) -> None:
    parsed = parse_grade(text, GRADES)
    assert parsed.label is None
    assert parsed.error is not None and reason in parsed.error


def test_scale_other_than_zero_to_two() -> None:
    assert parse_grade("4\nperfect caption", [1, 2, 3, 4]).label == 4
    assert parse_grade("0", [1, 2, 3, 4]).label is None


# --------------------------------------------------------------------------- multi-part answers


@pytest.mark.parametrize(
    ("text", "label", "explanation"),
    [
        ("intent: 2\ntrust: 1\noverall: 2\nThe dress fits.", 2, "The dress fits."),
        ("intent: 2\ntrust: 0\noverall: 0", 0, None),
        (
            "Intent: 1\nTrust: 2\n**Overall grade:** 1\nRight type, wrong colour.",
            1,
            "Right type, wrong colour.",
        ),
        ("rater 1: 2\nrater 2: 1\nrater 3: 2\nfinal: 1\nMost agree.", 1, "Most agree."),
        ("Rater 1: 0\nRater 2: 0\nRater 3: 2\nFinal grade: 0", 0, None),
        ("rater 1: 2\nrater 2: 2\nFinal relevance grade: 2 (relevant)", 2, "(relevant)"),
        ("final: 1/2.", 1, None),
        ('{"intent": 2, "trust": 1, "overall": 0}', 0, None),
        ('{"raters": [2, 1, 2], "final": 1, "reason": "split"}', 1, "split"),
        ('{"score": 2, "overall": 1}', 1, None),  # the overall grade wins over a score
        # an explanation line that merely starts with a part name is not a part grade
        ("2\nIntent: a tee, and this is one.", 2, "Intent: a tee, and this is one."),
        ("1\nOverall: 2 of the 3 colours are right", 1, "Overall: 2 of the 3 colours are right"),
        ("2\nconfidence: 4", 2, None),
    ],
)
def test_final_grade_of_multi_part_answers(text: str, label: int, explanation: str | None) -> None:
    parsed = parse_grade(text, GRADES)
    assert parsed.error is None and parsed.label == label
    assert parsed.explanation == explanation


def test_explanations_drop_part_and_confidence_lines() -> None:
    parsed = parse_grade("intent: 2\ntrust: 1\noverall: 2\nFits.\nconfidence: 5", GRADES)
    assert parsed.explanation == "Fits."
    assert parse_grade("2\nIntent: it is a tee.", GRADES).explanation == "Intent: it is a tee."


@pytest.mark.parametrize(
    "text",
    [
        "intent: 2\ntrust: 1",  # aspects only
        "rater 1: 2\nrater 2: 1\nrater 3: 2",  # raters only
        "Rater 1: 2\nRater 2: 0\nScore: 1",  # a score line is not a final grade here
        "intent: 2\ntrust: 1\noverall: high",
    ],
)
def test_part_grades_are_never_the_label(text: str) -> None:
    parsed = parse_grade(text, GRADES)
    assert parsed.label is None
    assert parsed.error == "answer lists aspect or rater grades but no final grade"


def test_final_grade_is_checked_against_the_scale() -> None:
    assert "outside the scale" in (parse_grade("intent: 2\noverall: 3", GRADES).error or "")
    assert parse_grade("rater 1: 4\nfinal: 4", [1, 2, 3, 4]).label == 4


@pytest.mark.parametrize(
    ("text", "confidence"),
    [
        ("2\nconfidence: 4", 4),
        ("2\nBecause.\n**Confidence:** 5", 5),
        ("overall: 1\nConfidence level: 2/5", 2),
        ('{"score": 1, "confidence": 3}', 3),
        ("2\nconfidence: 9", None),
        ("2\nconfidence: 3.5", None),
        ("2\nconfidence: high", None),
        ("2", None),
        (None, None),
    ],
)
def test_stated_confidence(text: str | None, confidence: int | None) -> None:
    assert parse_confidence(text) == confidence


def test_short_answers_parsed_once_give_what_parsing_each_gives() -> None:
    from mmjudge.prompts.parsing import MEMO_CHARS, _parse

    answers = ["Grade: 2", "1", "grade 7", "", "  ", "Final: 0\nbecause", "x" * (MEMO_CHARS + 1)]
    for grades in ([0, 1, 2], (0, 1, 2, 3), [1, 0]):
        for _round in range(2):
            for text in answers:
                assert parse_grade(text, grades) == _parse(text, list(grades))
    assert parse_grade(None, [0, 1]) == _parse(None, [0, 1])
