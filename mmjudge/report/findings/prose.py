"""How the answers write numbers and names: escaped HTML fragments, links to the figure or
table an answer rests on, intervals, differences, prices and capped lists of names.

Every value that comes from a config or a dataset is escaped (``markupsafe``); tables and
cards use the same writers so a number reads the same everywhere in the report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from markupsafe import Markup, escape

from mmjudge import display
from mmjudge.display import number, usd_per_million
from mmjudge.report.analysis import Comparison, Interval

FIG_COST = "fig-kappa-cost"
FIG_BY_DATASET = "fig-kappa-by-dataset"
FIG_IMAGE = "fig-image-vs-text"
TABLE_BY_DATASET = "kappa-by-dataset"
TABLE_IMAGE = "image-vs-text"
TABLE_FRONTIER = "frontier"
TABLE_UNFINISHED = "unfinished"
NOT_DISTINGUISHABLE = "not distinguishable"
#: Names listed in one sentence at most.
MAX_NAMES = 5


def join(*parts: object) -> Markup:
    """Concatenate, escaping everything that is not already markup."""
    return Markup("").join(escape(p) if not isinstance(p, Markup) else p for p in parts)


def link(anchor: str, text: object) -> Markup:
    return Markup('<a href="#{}">{}</a>').format(anchor, text)


def dataset_anchor(index: int, name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "dataset"
    return f"dataset-{index}-{slug}"


def typographic(text: str) -> str:
    """The report's minus sign (``−``) in a figure :mod:`mmjudge.display` wrote."""
    return text.replace("-", "−")


def num(value: float, digits: int = 2, sign: bool = False) -> str:
    return typographic(number(value, digits, sign=sign))


def interval(value: Interval, digits: int = 2) -> str:
    return typographic(display.interval(value, digits))


def p_value(p: float) -> str:
    if not math.isfinite(p):
        return "p = –"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def difference(c: Comparison) -> str:
    """Δκ with its paired interval and p-value, and the items it is on."""
    return (
        f"Δκ {num(c.difference, sign=True)} "
        f"[{num(c.low, sign=True)}, {num(c.high, sign=True)}], {p_value(c.p_value)}, "
        f"on {c.n_items:,} shared items"
    )


def usd(value: float) -> str:
    """Dollars per million judgments, in words (:func:`mmjudge.display.usd_per_million`)."""
    return usd_per_million(value)


def capped(names: Sequence[str], limit: int = MAX_NAMES) -> str:
    """``a, b, c`` or, past ``limit`` names, ``a, b, c and 7 more``."""
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[:limit])} and {len(names) - limit} more"


def listed(items: Iterable[object], last: str = "and") -> Markup:
    """``a, b and c``, each item escaped unless it is markup already."""
    values = [join(i) for i in items]
    if len(values) <= 1:
        return join(*values)
    return join(Markup(", ").join(values[:-1]), f" {last} ", values[-1])
