"""Cut points that turn a local judge's score (term overlap, a cosine) into a grade.

A score at or above the i-th cut point earns at least the (i+1)-th grade of the scale, so a
scale of n grades needs n - 1 increasing cut points. A local judge gets them in one of two
ways:

- **Given** (``model.thresholds`` or a per-modality override): used as they are, and the
  dataset's scale must have exactly one grade more than there are values, or the run stops
  before it starts with a one-line error.
- **Derived** (the default): from a *score span* ``[low, high]``. Below ``low`` a result gets
  the lowest grade, from ``high`` up the highest, and the grades between split the span into
  equal steps; on a two-grade scale the one cut point is the span's middle. On a three-grade
  scale the span's ends are the two cut points themselves, so a span is written like the
  familiar pair of cut-offs and works unchanged on a four-, five- or two-grade scale.

Why derive rather than calibrate on the dataset's labels: a free baseline is worth having
because it is independent of the labels it is scored against. Cut points fitted to those
labels (to their grade distribution, or to maximise κ) would make its κ optimistic, just as
a prompt chosen on the items it is scored on is; fit them on held-out data of your own and
pass them as ``model.thresholds`` when you want calibrated ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple

from mmjudge.errors import ConfigError


class CutPoints(NamedTuple):
    """The cut points used on one scale, and where they came from."""

    values: list[float]
    """Increasing, one fewer than the scale's grades."""
    source: str
    """The setting they were given in or derived from, for ``summary.json``."""


def check_increasing(name: str, where: str, values: Any) -> list[float]:
    """``values`` as floats; a one-line :class:`ConfigError` unless strictly increasing numbers."""
    if not isinstance(values, Sequence) or isinstance(values, str):
        raise ConfigError(f"{where} for '{name}' must be a list of numbers, not {values!r}")
    try:
        numbers = [float(value) for value in values]
    except (TypeError, ValueError):
        raise ConfigError(f"{where} for '{name}' must be numbers, got {list(values)}") from None
    if any(b <= a for a, b in itertools.pairwise(numbers)):
        raise ConfigError(f"{where}={numbers} for '{name}' must increase strictly")
    return numbers


def check_span(name: str, where: str, values: Any) -> tuple[float, float]:
    """A score span: exactly two increasing numbers."""
    numbers = check_increasing(name, where, values)
    if len(numbers) != 2:
        raise ConfigError(
            f"{where}={numbers} for '{name}' must be two numbers [low, high]: the score below "
            "which a result gets the lowest grade and from which it gets the highest"
        )
    return numbers[0], numbers[1]


def spread(span: tuple[float, float], n_grades: int) -> list[float]:
    """``n_grades - 1`` cut points in equal steps from ``span[0]`` to ``span[1]`` (the middle
    of the span when there is only one)."""
    low, high = span
    count = n_grades - 1
    if count <= 0:
        return []
    if count == 1:
        return [(low + high) / 2]
    step = (high - low) / (count - 1)
    return [low + i * step for i in range(count - 1)] + [high]


def given(name: str, where: str, values: list[float], grades: Sequence[int]) -> CutPoints:
    """Cut points set by the user, checked against the scale."""
    needed = len(grades) - 1
    if len(values) != needed:
        raise ConfigError(
            f"{where}={values} for '{name}' has {len(values)} cut points but the dataset's "
            f"scale {list(grades)} needs {needed}; give {needed}, or leave {where} empty to "
            "derive them from the score span"
        )
    return CutPoints(list(values), f"given in {where}")


def derived(where: str, span: tuple[float, float], grades: Sequence[int]) -> CutPoints:
    """Cut points spread over ``span`` for the scale's number of grades."""
    values = spread(span, len(grades))
    return CutPoints(
        values, f"derived from {where}=[{span[0]}, {span[1]}] for {len(grades)} grades"
    )


def grade_for(score: float, cut_points: Sequence[float], grades: Sequence[int]) -> int:
    """The grade a score earns: the lowest grade plus one step per cut point it reaches."""
    ordered = sorted(grades)
    position = sum(score >= cut for cut in cut_points)
    return ordered[min(position, len(ordered) - 1)]
