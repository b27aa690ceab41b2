"""Read a grade and an explanation out of a judge's answer text.

Accepted forms, tried in this order:

1. a JSON object with a ``final`` or ``overall`` key (or ``score``, ``grade``,
   ``relevance``), the first of those keys present winning;
2. a ``final: N`` / ``overall: N`` line (also ``final grade: N``, ``**Overall:** N``...);
   the last such line counts;
3. a ``score: N`` / ``grade: N`` / ``relevance: N`` line;
4. a leading number.

Answers to the aspect and multi-rater prompt variants list several grades (``intent: 2``,
``trust: 1``, ``rater 1: 2``...) before the one that counts. Those part grades are never
read as the label: an answer that has such lines but no final/overall grade is unparseable.
Anything else that matches no form is unparseable too: the label is null and the raw text
is kept, never coerced to a grade.

A stated confidence (``confidence: C`` with C from 1 to 5, asked for by prompts with
``confidence: true``) is read separately by :func:`parse_confidence`.
"""

from __future__ import annotations

import functools
import json
import re
from typing import NamedTuple


class ParsedGrade(NamedTuple):
    label: int | None
    explanation: str | None
    error: str | None


#: Aspect names the aspect prompt variant asks for (see ``mmjudge/prompts``).
ASPECTS = ("intent", "trust")
#: Range of a stated confidence.
CONFIDENCE_RANGE = (1, 5)

_NUMBER = r"(-?\d+(?:\.\d+)?)\b"
_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_JSON_KEYS = ("final", "overall", "final_grade", "overall_grade", "score", "grade", "relevance")
_FINAL = re.compile(
    r"(?:^|\n)[^\w\n]*(?:final|overall)"
    r"(?:[ \t]+(?:relevance|grade|score|rating|answer|verdict|label)){0,2}"
    r"[^\w\n]*?[:=][ \t*_]*(-?\d+(?:\.\d+)?)(?:[ \t]*/[ \t]*\d+)?[ \t*_.)\]]*(?=$|[-–—(:,;])",
    re.IGNORECASE | re.MULTILINE,
)
_KEYED = re.compile(
    r"(?:^|\n)\W*(?:score|grade|relevance)\W*\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)\b",
    re.IGNORECASE,
)
_LEADING = re.compile(r"^[\s*#>_`\"'\[(]*(-?\d+(?:\.\d+)?)(?![\d.]*\d)(?:\s*/\s*\d+)?")
#: A line that holds one part of a multi-part answer: an aspect or one rater's grade.
_PART_LINE = re.compile(
    r"^[^\w\n]*(?:(?:" + "|".join(ASPECTS) + r")|(?:rater|assessor|annotator|reviewer|judge)"
    r"[ \t]*#?[ \t]*\d+)[^\w\n]*?[:=][ \t*_]*-?\d",
    re.IGNORECASE | re.MULTILINE,
)
_CONFIDENCE_LINE = re.compile(
    r"^[^\w\n]*confidence(?:[ \t]+(?:level|score))?[^\w\n]*?[:=][ \t*_]*" + _NUMBER,
    re.IGNORECASE | re.MULTILINE,
)
_SEPARATORS = " \t\r\n*_`\"')].:-–—,;"


#: Answers up to this long are parsed once per run and scale (a cell's short answers repeat:
#: "Grade: 2" thousands of times); longer ones, explanations mostly, are parsed each time.
MEMO_CHARS = 200


def parse_grade(text: str | None, grades: list[int] | tuple[int, ...]) -> ParsedGrade:
    """The grade (on ``grades``) and explanation in ``text``, or a parse error."""
    if text is not None and len(text) <= MEMO_CHARS:
        return _parse_short(text, tuple(grades))
    return _parse(text, grades)


@functools.lru_cache(maxsize=4096)
def _parse_short(text: str, grades: tuple[int, ...]) -> ParsedGrade:
    return _parse(text, grades)


def _parse(text: str | None, grades: list[int] | tuple[int, ...]) -> ParsedGrade:
    if text is None or not text.strip():
        return ParsedGrade(None, None, "empty answer")
    for attempt in (_from_json, _from_final):
        found = attempt(text)
        if found is not None:
            return _checked(*found, grades)
    if _PART_LINE.search(text):
        return ParsedGrade(None, None, "answer lists aspect or rater grades but no final grade")
    for attempt in (_from_keyed, _from_leading):
        found = attempt(text)
        if found is not None:
            return _checked(*found, grades)
    snippet = " ".join(text.split())[:60]
    return ParsedGrade(None, None, f"no grade found in answer: {snippet!r}")


def parse_confidence(text: str | None) -> int | None:
    """The stated confidence (1 to 5) in ``text``, or ``None`` when none is stated or it
    is not a whole number in range."""
    if not text:
        return None
    value: object = None
    for match in _JSON_OBJECT.finditer(text):
        try:
            obj = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "confidence" in obj:
            value = obj["confidence"]
            break
    if value is None:
        found = _CONFIDENCE_LINE.findall(text)
        value = found[-1] if found else None
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    low, high = CONFIDENCE_RANGE
    if not number.is_integer() or not low <= number <= high:
        return None
    return int(number)


def _checked(
    value: str, explanation: str | None, grades: list[int] | tuple[int, ...]
) -> ParsedGrade:
    number = float(value)
    if not number.is_integer():
        return ParsedGrade(None, explanation, f"grade {value} is not a whole number")
    grade = int(number)
    if grade not in grades:
        return ParsedGrade(None, explanation, f"grade {grade} is outside the scale {list(grades)}")
    return ParsedGrade(grade, explanation or None, None)


def _from_json(text: str) -> tuple[str, str | None] | None:
    for match in _JSON_OBJECT.finditer(text):
        try:
            obj = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        for key in _JSON_KEYS:
            value = obj.get(key)
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float) or (
                isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip())
            ):
                reason = obj.get("explanation") or obj.get("reason") or obj.get("rationale")
                return str(value).strip(), str(reason).strip() if reason else None
    return None


def _from_final(text: str) -> tuple[str, str | None] | None:
    matches = list(_FINAL.finditer(text))
    if not matches:
        return None
    match = matches[-1]
    rest = text[: match.start()] + "\n" + text[match.end() :]
    return match.group(1), _explanation(rest)


def _from_keyed(text: str) -> tuple[str, str | None] | None:
    match = _KEYED.search(text)
    if match is None:
        return None
    rest = text[: match.start()] + "\n" + text[match.end() :]
    return match.group(1), _explanation(rest)


def _from_leading(text: str) -> tuple[str, str | None] | None:
    match = _LEADING.match(text)
    if match is None:
        return None
    return match.group(1), _explanation(text[match.end() :])


def _explanation(rest: str) -> str | None:
    """What is left of the answer once the grade is taken out, without the lines that hold
    part grades or a stated confidence."""
    rest = "\n".join(
        line
        for line in rest.splitlines()
        if not (_PART_LINE.match(line) or _CONFIDENCE_LINE.match(line))
    )
    rest = rest.lstrip(_SEPARATORS).rstrip()
    rest = re.sub(r"^(?:explanation|reason)\s*[:=]\s*", "", rest, flags=re.IGNORECASE)
    return rest.strip() or None
