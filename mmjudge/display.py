"""How mmjudge writes a number, an interval, a sum of money and a missing value: one writer
each, used by the console lines, the commands' tables and the report.

- A value that is missing or undefined (None, NaN, an infinity) is written :data:`MISSING`,
  never ``nan``.
- A number that rounds to zero is written without a sign (``0.000``, or ``+0.000`` where a sign
  is asked for), never ``-0.000``.
- An interval is ``estimate [low, high]``; one whose ends are undefined is its estimate alone.
- Money is written in dollars, as precisely as its size needs: ``$1,234``, ``$12.50``, and
  below a dollar two significant figures up to four decimals (``$0.15``, ``$0.012``,
  ``$0.0076``); an amount too small for that is ``<$0.0001``, nothing is ``$0``.
  A chart's axis writes its ticks shorter (:func:`usd_tick`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Protocol

#: What every view writes for a value that is missing or undefined.
MISSING = "–"

#: The smallest sum of money :func:`usd` writes in figures.
SMALLEST_USD = 0.0001


class IntervalLike(Protocol):
    """An estimate with the ends of its interval (None or NaN where undefined): the in-memory
    :class:`~mmjudge.metrics.scoring.Interval` and the files' :class:`~mmjudge.store.bounds.Bounds`
    both are."""

    @property
    def estimate(self) -> float | None: ...

    @property
    def low(self) -> float | None: ...

    @property
    def high(self) -> float | None: ...


def finite(value: object) -> float | None:
    """``value`` as a float when it is a finite number (NumPy's included), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    x = float(value)
    return x if math.isfinite(x) else None


def number(value: float | None, digits: int = 3, *, sign: bool = False) -> str:
    """``value`` at ``digits`` decimals (with its sign when ``sign``); :data:`MISSING` when it
    is undefined. A value that rounds to zero carries no minus."""
    x = finite(value)
    if x is None:
        return MISSING
    text = f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"
    if text.startswith("-") and float(text) == 0:
        text = ("+" if sign else "") + text[1:]
    return text


def bracketed(
    estimate: float | None,
    low: float | None,
    high: float | None,
    show: Callable[[float | None], str],
) -> str:
    """The one layout of an interval, its figures written by ``show``: ``estimate [low, high]``;
    the estimate alone when an end is undefined; :data:`MISSING` when the estimate is."""
    if finite(estimate) is None:
        return MISSING
    if finite(low) is None or finite(high) is None:
        return show(estimate)
    return f"{show(estimate)} [{show(low)}, {show(high)}]"


def interval(value: IntervalLike, digits: int = 3, *, sign: bool = False) -> str:
    """``0.412 [0.380, 0.444]`` (see :func:`bracketed`), at ``digits`` decimals."""
    return bracketed(value.estimate, value.low, value.high, lambda x: number(x, digits, sign=sign))


def percent_interval(value: IntervalLike, digits: int = 1) -> str:
    """``41.2% [38.0%, 44.4%]`` (see :func:`bracketed`)."""
    return bracketed(value.estimate, value.low, value.high, lambda x: percent(x, digits))


def usd(value: float | None) -> str:
    """A sum of money in dollars, as precisely as its size needs (see the module's notes)."""
    x = finite(value)
    if x is None:
        return MISSING
    if x < 0:
        text = usd(-x)
        return text if text == "$0" else "-" + text
    if x == 0:
        return "$0"
    if x >= 100:
        return f"${x:,.0f}"
    if x >= 1:
        return f"${x:,.2f}"
    if x < SMALLEST_USD / 2:
        return f"<${SMALLEST_USD:g}"
    decimals = min(4, max(2, 1 - math.floor(math.log10(x))))  # two significant figures
    return f"${x:.{decimals}f}"


def price(value: float | None) -> str:
    """A judge's price (dollars per million judgments in a column headed so): ``$0.15``;
    ``free`` for nothing."""
    x = finite(value)
    return "free" if x == 0 else usd(x)


def usd_per_million(value: float | None) -> str:
    """Dollars per million judgments in a sentence: ``$0.15 per million``; ``free``."""
    text = price(value)
    return text if text in ("free", MISSING) else f"{text} per million"


def usd_tick(value: float) -> str:
    """A chart axis's tick: ``$2M``, ``$150k``, ``$0.5``."""
    if value >= 1e6:
        return f"${value / 1e6:g}M"
    if value >= 1e3:
        return f"${value / 1e3:g}k"
    return f"${value:g}"


def percent(value: float | None, digits: int = 1) -> str:
    """A share as a percentage: ``38.1%``; :data:`MISSING` when undefined."""
    x = finite(value)
    return MISSING if x is None else f"{100 * x:.{digits}f}%"
