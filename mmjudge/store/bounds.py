"""An estimate with its 95% interval as the files keep it: ``{estimate, low, high}``, each
null where it is undefined (:class:`Bounds`). The monitor's history, ``sweep_summary.json``
and a summary's stability block hold their intervals in this one shape."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Bounds:
    """An estimate with its 95% interval; None where it is undefined."""

    estimate: float | None = None
    """The point estimate."""
    low: float | None = None
    """The interval's lower end."""
    high: float | None = None
    """The interval's upper end."""

    @classmethod
    def of(cls, value: object) -> Bounds:
        """The bounds in a file's ``{estimate, low, high}`` block (anything else, or a number
        that is not finite, reads as undefined)."""
        if not isinstance(value, Mapping):
            return cls()
        return cls(*(finite_number(value.get(key)) for key in ("estimate", "low", "high")))

    def as_json(self) -> dict[str, float | None]:
        """The ``{estimate, low, high}`` block."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high}


def finite_number(value: object) -> float | None:
    """``value`` as a float when it is a finite number in a file, else None (JSON writes an
    undefined figure as null; a file written by hand may hold anything)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
