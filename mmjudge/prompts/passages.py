"""Several results of one query in one call (``prompt.passages_per_call``): the prompt that
shows them, each under its marker, and the grade of each read out of the answer.

The prompt is the single-result prompt of the first result up to its result block (the
static part and the query, so the part a provider's prompt cache keeps is the same as with
one result per call), then one line that introduces the results, each result's block as its
own prompt shows it (without that prompt's line introducing the one result) under its marker,
then the instructions of :file:`passages.j2`: one ``R<n>: N`` line per marker. What is said
once per call is kept short: it is paid once per call, but each result's part in every call.

The answer is read by one strict rule (:func:`parse_passages`): a line that starts with a
marker, a colon and a whole number on the scale. A marker with no such line, with a grade off
the scale, or with two lines that disagree gets no grade and says why; nothing is guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

from mmjudge.prompts import RenderedPrompt, package_template
from mmjudge.prompts.parsing import ParsedGrade

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


def render_passages(
    members: Sequence[RenderedPrompt],
    grades: Sequence[int],
    explanation: bool,
    *,
    shows_text: bool = True,
    shows_image: bool = False,
) -> str:
    """The text of one call about ``members`` (the single-result prompts of results of one
    query, in the order shown): the shared head, each result's block under its marker, the
    answer's instructions. ``shows_text``/``shows_image``: what the cell's modality shows of
    each result, as the line introducing them says (pictures are placed after each marker:
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
            explanation=explanation,
            shows_text=shows_text,
            shows_image=shows_image,
        )
        .strip()
        for part in ("intro", "closing")
    }
    return "\n\n".join([head, parts["intro"], *blocks, parts["closing"]])


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
    """The grade of each of the ``size`` results of a call from its answer ``text``."""
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
