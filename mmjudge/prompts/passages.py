"""Several results of one query in one call (``prompt.passages_per_call``): the prompt that
shows them, each under its marker, and the grade of each read out of the answer.

The prompt is the single-result prompt of the first result up to its result block (the
static part and the query, so the part a provider's prompt cache keeps is the same as with
one result per call), then one line that introduces the results, each result's block as its
own prompt shows it (without that prompt's line introducing the one result) under its marker,
then the instructions of :file:`passages.j2`: a JSON object with one key per marker where the
provider constrains the answer to a schema (:func:`answer_schema`, sent as its structured
output), else one ``R<n>: N`` line per marker; the grades alone unless the design asks for a
reason with each (``prompt.passage_reasons``). What is said once per call is kept short: it is
paid once per call, but each result's part in every call.

The answer is read by one parser (:func:`parse_passages`): a JSON object (the structured
answer) gives each marker's grade under its key; any other answer is read by one strict rule,
a line that starts with a marker, a colon and a whole number on the scale. A marker with no
grade, with a grade off the scale, or with two lines that disagree gets no grade and says why;
nothing is guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from mmjudge.prompts import RenderedPrompt, package_template
from mmjudge.prompts.parsing import ParsedGrade
from mmjudge.records import GradesAnswer

#: The marker of the result at each place in a call: ``R1``, ``R2``...
MARKER = "R{}"

_LINE = re.compile(
    r"^[ \t>*_`#-]*\[?(R\d+)\]?[ \t*_`]*[:=][ \t*_`]*(-?\d+(?:\.\d+)?)(?![\d.])[ \t*_`]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)
_REASON_LEAD = " \t-–—:,;.()"


def marker(position: int) -> str:
    """The marker of the result at ``position`` (1 for the first) in a call."""
    return MARKER.format(position)


#: The name of the structured answer (OpenAI's schema name, Anthropic's tool name).
ANSWER_NAME = "grades"


def render_passages(
    members: Sequence[RenderedPrompt],
    grades: Sequence[int],
    reasons: bool,
    structured: bool = False,
    *,
    shows_text: bool = True,
    shows_image: bool = False,
) -> str:
    """The text of one call about ``members`` (the single-result prompts of results of one
    query, in the order shown): the shared head, each result's block under its marker, the
    answer's instructions (a JSON object where ``structured``, else lines; a reason with each
    grade where ``reasons``). ``shows_text``/``shows_image``: what the cell's modality shows
    of each result, as the line introducing them says (pictures are placed after each marker:
    :func:`marker_ends`)."""
    first = members[0]
    if not (first.result_chars and first.answer_chars):
        raise ValueError("a prompt whose template marks no result block")  # shipped ones do
    head = first.text[: first.result_chars].rstrip()
    markers = [marker(n) for n in range(1, len(members) + 1)]
    blocks = [f"{name}\n{_shown(member)}" for name, member in zip(markers, members, strict=True)]
    ordered = sorted(grades)
    parts = {
        part: package_template("passages.j2")
        .render(
            part=part,
            markers=markers,
            bottom=ordered[0],
            top=ordered[-1],
            reasons=reasons,
            structured=structured,
            shows_text=shows_text,
            shows_image=shows_image,
        )
        .strip()
        for part in ("intro", "closing")
    }
    return "\n\n".join([head, parts["intro"], *blocks, parts["closing"]])


def call_weights(
    members: Sequence[RenderedPrompt], text: str, system: str | None
) -> tuple[float, ...]:
    """Each result's weight in the input of the call whose prompt is ``text`` (as
    :func:`render_passages` wrote it about ``members``, sent after ``system``): its own block
    under its marker, in characters, plus an equal part of the characters the call says once
    (:func:`mmjudge.costs.split.split_usage` shares the call's input tokens by them)."""
    own = [len(f"{marker(n)}\n{_shown(m)}") for n, m in enumerate(members, start=1)]
    shared = max(0, len(text) + len(system or "") - sum(own))
    return tuple(shared / len(members) + chars for chars in own)


def marker_ends(text: str, members: Sequence[RenderedPrompt]) -> tuple[int, ...]:
    """Where each result's marker line ends in ``text``, the prompt :func:`render_passages`
    wrote about ``members``, in their order: the place its pictures go, so that each result
    is read as its marker, its pictures, then its fields."""
    ends: list[int] = []
    start = 0
    for position, member in enumerate(members, start=1):
        name = marker(position)
        block = f"\n\n{name}\n{_shown(member)}"
        found = text.index(block, start)  # each block follows the one before it
        ends.append(found + 2 + len(name))
        start = found + len(block)
    return tuple(ends)


def _shown(member: RenderedPrompt) -> str:
    """What a result's own prompt shows of it: its block without the first line, which
    introduces the one result (the call's prompt introduces them all once)."""
    block = member.text[member.result_chars : member.answer_chars].strip()
    _intro, _, shown = block.partition("\n")
    return shown.strip() or block


def grades_answer(size: int, grades: Sequence[int], reasons: bool) -> GradesAnswer:
    """The structured answer a call about ``size`` results asks for."""
    return GradesAnswer(tuple(marker(n) for n in range(1, size + 1)), tuple(grades), reasons)


def answer_schema(answer: GradesAnswer) -> dict[str, object]:
    """The JSON schema of ``answer``: an object with every marker required and nothing else,
    each the grade (an integer on the scale) or, with reasons, ``{"grade", "reason"}``. It
    keeps to what strict structured output takes (every property required, no additional
    properties), so OpenAI and Anthropic take it alike."""
    grade: dict[str, object] = {"type": "integer", "enum": list(answer.grades)}
    value = grade
    if answer.reasons:
        value = {
            "type": "object",
            "properties": {"grade": grade, "reason": {"type": "string"}},
            "required": ["grade", "reason"],
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": {name: value for name in answer.markers},
        "required": list(answer.markers),
        "additionalProperties": False,
    }


class PassageGrades(NamedTuple):
    """What one answer says about each result of its call."""

    grades: tuple[ParsedGrade, ...]
    """Per place in the call (the first result first): its grade and reason, or why none."""

    @property
    def any_read(self) -> bool:
        """Whether the answer gave at least one result a grade (an answer that gave none is
        unreadable as a whole, and no result of it is asked again)."""
        return any(grade.label is not None for grade in self.grades)


def parse_passages(text: str | None, size: int, grades: Sequence[int]) -> PassageGrades:
    """The grade of each of the ``size`` results of a call from its answer ``text``: a JSON
    object's keys (the structured answer), else its ``R<n>: N`` lines."""
    read = _json_object(text)
    if read is not None:
        return _from_object(read, size, tuple(grades))
    found: dict[int, list[tuple[str, str]]] = {}
    for match in _LINE.finditer(text or ""):
        place = int(match.group(1)[1:])
        if 1 <= place <= size:
            found.setdefault(place, []).append((match.group(2), match.group(3)))
    scale = tuple(grades)
    out: list[ParsedGrade] = []
    for place in range(1, size + 1):
        lines = found.get(place, [])
        values = {value for value, _reason in lines}
        if not lines:
            out.append(ParsedGrade(None, None, f"no '{marker(place)}: N' line in the answer"))
        elif len(values) > 1:
            out.append(ParsedGrade(None, None, f"'{marker(place)}' is given {len(values)} grades"))
        else:
            value, reason = lines[0]
            out.append(_graded(place, value, reason.strip(_REASON_LEAD) or None, scale))
    return PassageGrades(tuple(out))


def _graded(place: int, value: str, reason: str | None, grades: tuple[int, ...]) -> ParsedGrade:
    number = float(value)
    if not number.is_integer() or int(number) not in grades:
        return ParsedGrade(
            None, reason, f"'{marker(place)}' grade {value} is not on the scale {list(grades)}"
        )
    return ParsedGrade(int(number), reason, None)


def _json_object(text: str | None) -> dict[str, Any] | None:
    """``text`` as a JSON object (within a code fence, as some servers that take no schema
    write it), or None when it is not one."""
    body = (text or "").strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    if not body.startswith("{"):
        return None
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _from_object(answer: dict[str, Any], size: int, grades: tuple[int, ...]) -> PassageGrades:
    """Each marker's grade from a structured answer: ``"R1": N`` or ``"R1": {"grade": N,
    "reason": "..."}``; keys are matched without regard to case."""
    keyed = {str(key).upper(): value for key, value in answer.items()}
    out: list[ParsedGrade] = []
    for place in range(1, size + 1):
        name = marker(place)
        value = keyed.get(name)
        reason = None
        if isinstance(value, dict):
            said = value.get("reason")
            reason = (str(said).strip() or None) if said is not None else None
            value = value.get("grade")
        if value is None:
            out.append(ParsedGrade(None, reason, f"no '{name}' grade in the answer"))
        elif isinstance(value, bool) or not isinstance(value, (int, float, str)):
            out.append(ParsedGrade(None, reason, f"'{name}' is not a grade: {value!r}"))
        else:
            try:
                out.append(_graded(place, str(value), reason, grades))
            except ValueError:
                out.append(ParsedGrade(None, reason, f"'{name}' is not a grade: {value!r}"))
    return PassageGrades(tuple(out))
