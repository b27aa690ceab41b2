"""Read a grade and an explanation out of a judge's answer text.

Accepted forms, tried in this order: a JSON object with a ``score`` (or ``grade``) key,
a ``score: N`` / ``grade: N`` line, and a leading number. Anything else is unparseable:
the label is null and the raw text is kept, never coerced to a grade.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple


class ParsedGrade(NamedTuple):
    label: int | None
    explanation: str | None
    error: str | None


_JSON_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)
_KEYED = re.compile(
    r"(?:^|\n)\W*(?:score|grade|relevance)\W*\s*[:=]\s*\**\s*(-?\d+(?:\.\d+)?)\b",
    re.IGNORECASE,
)
_LEADING = re.compile(r"^[\s*#>_`\"'\[(]*(-?\d+(?:\.\d+)?)(?![\d.]*\d)(?:\s*/\s*\d+)?")
_SEPARATORS = " \t\r\n*_`\"')].:-–—,;"


def parse_grade(text: str | None, grades: list[int] | tuple[int, ...]) -> ParsedGrade:
    """The grade (on ``grades``) and explanation in ``text``, or a parse error."""
    if text is None or not text.strip():
        return ParsedGrade(None, None, "empty answer")
    for attempt in (_from_json, _from_keyed, _from_leading):
        found = attempt(text)
        if found is None:
            continue
        value, explanation = found
        return _checked(value, explanation, grades)
    snippet = " ".join(text.split())[:60]
    return ParsedGrade(None, None, f"no grade found in answer: {snippet!r}")


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
        for key in ("score", "grade", "relevance"):
            value = obj.get(key)
            if isinstance(value, bool):
                continue
            if isinstance(value, int | float) or (
                isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value.strip())
            ):
                reason = obj.get("explanation") or obj.get("reason") or obj.get("rationale")
                return str(value).strip(), str(reason).strip() if reason else None
    return None


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
    rest = rest.lstrip(_SEPARATORS).rstrip()
    rest = re.sub(r"^(?:explanation|reason)\s*[:=]\s*", "", rest, flags=re.IGNORECASE)
    return rest.strip() or None
