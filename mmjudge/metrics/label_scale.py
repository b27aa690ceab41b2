"""A label file's grades checked against a grade scale (for ``mmjudge agree``).

The scale is given (``--scale 0,1,2,3`` or ``0-3``) or inferred from the human file as every
whole number from its lowest to its highest grade. A judge's grade off the scale is refused
with a one-line message naming the file, the line and the grade, or, as the user asks,
dropped, clipped to the nearest grade of the scale, or kept as a category of its own; the
number of such grades is returned either way so it can be reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from mmjudge.data.qrels import Qrels, QrelsFile
from mmjudge.errors import MMJudgeError
from mmjudge.metrics.aggregate import round_to_scale

OUT_OF_SCALE = ("error", "drop", "clip", "keep")


class Scale(NamedTuple):
    """The grade scale label files are checked against."""

    grades: list[int]
    source: str
    """Where it came from, for messages: the human file or ``--scale``."""

    def text(self) -> str:
        g = self.grades
        if len(g) > 2 and g == list(range(g[0], g[-1] + 1)):
            return f"{g[0]}–{g[-1]}"
        return ", ".join(str(x) for x in g)


def human_scale(human: QrelsFile, given: Sequence[int] | None) -> Scale:
    """``--scale`` (every human grade must lie on it), else every whole number from the
    human file's lowest to its highest grade."""
    grades = [g for docs in human.qrels.values() for g in docs.values()]
    if given is None:
        return Scale(list(range(min(grades), max(grades) + 1)), "from the human file")
    scale = Scale(sorted(set(given)), "set by --scale")
    stray = _off_scale(human, scale.grades)
    if stray:
        line, grade, count = stray
        raise MMJudgeError(
            f"{human.path}:{line}: human grade {grade} is outside --scale {scale.text()} "
            f"({count} such grade{'s' if count != 1 else ''} in the file); widen --scale"
        )
    return scale


def _off_scale(labels: QrelsFile, grades: Sequence[int]) -> tuple[int, int, int] | None:
    """(line, grade) of the first grade off the scale and how many there are, or None."""
    allowed = set(grades)
    found = sorted(
        (labels.lines[(query, doc)], grade)
        for query, docs in labels.qrels.items()
        for doc, grade in docs.items()
        if grade not in allowed
    )
    return (*found[0], len(found)) if found else None


def apply_scale(
    labels: QrelsFile, scale: Scale, how: str, remedies: str = "drop, clip or keep"
) -> tuple[Qrels, int]:
    """A judge's labels checked against ``scale``: refused (``error``), or with the grades
    off it dropped, clipped to the nearest grade of the scale, or kept; and their count.
    ``remedies`` names the ``--out-of-scale`` choices the refusal suggests."""
    stray = _off_scale(labels, scale.grades)
    if stray is None:
        return labels.qrels, 0
    line, grade, count = stray
    if how == "error":
        raise MMJudgeError(
            f"{labels.path}:{line}: grade {grade} is outside the scale {scale.text()} "
            f"({scale.source}; {count} such grade{'s' if count != 1 else ''} in the file); "
            f"pass --out-of-scale {remedies} to go on, or --scale to widen it"
        )
    if how == "keep":
        return labels.qrels, count
    allowed = set(scale.grades)
    out: Qrels = {}
    for query, docs in labels.qrels.items():
        kept = out.setdefault(query, {})
        for doc, g in docs.items():
            if g in allowed:
                kept[doc] = g
            elif how == "clip":
                kept[doc] = int(round_to_scale([g], scale.grades)[0])
    return out, count
