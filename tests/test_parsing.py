import pytest

from mmjudge.parsing import parse_grade

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
