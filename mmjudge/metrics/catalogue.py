"""The measure catalogue: every agreement measure declared once, and every view iterates it.

A measure is one :class:`Measure`, declared in a module of its own under
:mod:`mmjudge.metrics.measures` and registered there with :func:`register`: its name, its
label, what it compares, how it is computed, its range, its direction and how many digits it
is shown with. :func:`measures` lists the catalogue in order; ``summary.json``
(:func:`mmjudge.metrics.scoring.agreement_summary`), a judge's score
(:class:`mmjudge.metrics.scoring.JudgeScore`), the report's tables and CSV files and
``mmjudge agree`` all go through it, so none of them names a measure. Adding one is its
module, its test and a line of the docs (``docs/agreement.md``, "Adding a measure").

Every module of :mod:`mmjudge.metrics.measures` is loaded the first time the catalogue is
read; a module there is a measure, so dropping a file in is all the registration needs.
"""

from __future__ import annotations

import enum
import functools
import importlib
import math
import pkgutil
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from mmjudge.metrics.labels import FloatArray

#: The package whose every module declares one measure.
MEASURES_PACKAGE = "mmjudge.metrics.measures"

HEADLINE = "kappa"
"""The measure judges are ranked, charted, compared and chosen by; where a table has room for
one interval, it is this measure's."""


class ScoringScale(NamedTuple):
    """The grade scale a measure is computed on."""

    grades: tuple[float, ...]
    """The scale's grades in order (κ's categories: weights follow positions on it)."""
    relevant_from: float
    """The lowest grade counted as relevant, for measures on binarised grades."""


PairStatistic = Callable[[FloatArray, FloatArray], float]
"""A measure of two aligned label arrays (reference first; ``nan`` = no label, and only items
both labelled count), ``nan`` where it is undefined."""

RatersStatistic = Callable[[FloatArray], float]
"""A measure of a raters × items matrix (``nan`` = not rated)."""


class Comparison(enum.Enum):
    """What a measure sets against what. Each has its key in ``summary.json``'s ``metrics``
    block (:meth:`key`)."""

    CONSENSUS = "the judge against the assessors' consensus"
    """On the judge's scored items; every view shows it (key: the measure's name)."""
    EACH_ASSESSOR = "the judge against each assessor"
    """Keyed by assessor, in ``<name>_by_annotator``."""
    HUMAN_HUMAN = "each pair of assessors against each other: the ceiling"
    """Keyed ``"a vs b"``, in ``human_human_<name>``."""
    POOLED = "the judge and every assessor as raters of one matrix"
    """On the scored items, in ``<name>_pooled``; needs :attr:`Measure.raters`."""
    HUMANS = "the assessors alone, on the judge's scored items"
    """In ``<name>_humans`` (undefined with one assessor); needs :attr:`Measure.raters`."""

    def key(self, name: str) -> str:
        """Where the figure of measure ``name`` goes in ``summary.json``'s ``metrics`` block."""
        if self is Comparison.EACH_ASSESSOR:
            return f"{name}_by_annotator"
        if self is Comparison.HUMAN_HUMAN:
            return f"human_human_{name}"
        if self is Comparison.POOLED:
            return f"{name}_pooled"
        if self is Comparison.HUMANS:
            return f"{name}_humans"
        return name

    @property
    def many_raters(self) -> bool:
        """Whether the figure is over a matrix of raters rather than a pair of them."""
        return self in (Comparison.POOLED, Comparison.HUMANS)


#: Names a measure cannot take: the other entries of ``summary.json``'s ``metrics`` block and
#: the fields of a score (a measure is read by its name in both).
RESERVED = frozenset(
    {
        "n",
        "n_scored",
        "n_queries",
        "n_unparseable",
        "n_off_scale",
        "n_items",
        "unparseable_rate",
        "grades",
        "relevant_from",
        "intervals",
        "bootstrap",
        "pairwise",
        "confusion_matrix",
        "label_distribution",
        "values",
        "by_rater",
    }
)


@dataclass(frozen=True)
class Measure:
    """One agreement measure: all that any view needs to compute, store and show it."""

    name: str
    """Its key: in ``summary.json``, CSV headers, ``agree --format json`` and as an attribute
    of a score (``score.kappa_linear``)."""
    label: str
    """How pages and the console name it (``κ linear``)."""
    description: str
    """What it is, in a line (the docs' table of measures)."""
    statistic: Callable[[ScoringScale], PairStatistic]
    """How it is computed: given the scale, the function of (reference, judge) labels."""
    order: int
    """Where it stands among the measures (columns follow it: κ is 10, α 50...)."""
    compares: frozenset[Comparison] = frozenset({Comparison.CONSENSUS})
    """What it is reported for; the judge against the consensus is what every table shows."""
    raters: Callable[[ScoringScale], RatersStatistic] | None = None
    """Given the scale, the function of a raters × items matrix; needed by
    :attr:`Comparison.POOLED` and :attr:`Comparison.HUMANS`."""
    interval: bool = False
    """Whether it gets a bootstrap interval over queries (tables show it beside the value)."""
    low: float = -1.0
    """The lowest value it can take (``-inf``: no bound)."""
    high: float = 1.0
    """The highest value it can take (``inf``: no bound, e.g. it grows with the scale)."""
    higher_is_better: bool = True
    """Its direction: True when a higher value means closer agreement."""
    chance: float | None = None
    """What a judge answering at random gets (κ: 0); None where that depends on how the
    grades are spread (accuracy)."""
    digits: int = 3
    """Decimals it is shown with."""
    short: str = ""
    """Its header in plain-text tables (``kappa_lin``); the name when empty."""

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"measure name {self.name!r}: use a lower-case identifier")
        if self.name in RESERVED:
            raise ValueError(f"measure name {self.name!r} is taken by the metrics block")
        if any(c.many_raters for c in self.compares) and self.raters is None:
            raise ValueError(f"measure {self.name!r}: pooled or humans-only needs `raters`")
        if not self.low < self.high:
            raise ValueError(f"measure {self.name!r}: its range needs low < high")
        if self.digits < 0:
            raise ValueError(f"measure {self.name!r}: digits must be 0 or more")

    @property
    def header(self) -> str:
        """The plain-text header (:attr:`short`, else the name)."""
        return self.short or self.name

    @property
    def direction(self) -> str:
        """``higher is better`` or ``lower is better``."""
        return "higher is better" if self.higher_is_better else "lower is better"

    def summary_keys(self) -> list[str]:
        """Its keys in ``summary.json``'s ``metrics`` block, one per comparison."""
        return [c.key(self.name) for c in Comparison if c in self.compares]

    def within_range(self, value: float) -> bool:
        """Whether ``value`` is undefined (``nan``) or lies in the declared range."""
        return math.isnan(value) or self.low <= value <= self.high


_registered: dict[str, Measure] = {}
_lock = threading.Lock()


def register(measure: Measure) -> Measure:
    """Add ``measure`` to the catalogue (its module does this once) and return it. A name or a
    ``summary.json`` key that another measure has is refused."""
    with _lock:
        taken = {key for m in _registered.values() for key in m.summary_keys()}
        clash = sorted(taken.intersection(measure.summary_keys()))
        if measure.name in _registered or clash:
            raise ValueError(f"measure {measure.name!r}: {clash or measure.name} already taken")
        _registered[measure.name] = measure
    return measure


@contextmanager
def restored() -> Iterator[None]:
    """The catalogue as it is now, put back when the ``with`` block ends: whatever was
    registered inside it (a measure tried out in a test or a notebook) is dropped."""
    _load()
    with _lock:
        before = dict(_registered)
    try:
        yield
    finally:
        with _lock:
            _registered.clear()
            _registered.update(before)


@contextmanager
def registered(measure: Measure) -> Iterator[Measure]:
    """``measure`` in the catalogue for the length of a ``with`` block."""
    with restored():
        yield register(measure)


@functools.cache
def _load() -> None:
    """Import every module of :data:`MEASURES_PACKAGE`: each registers its measure."""
    package = importlib.import_module(MEASURES_PACKAGE)
    for found in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not found.name.startswith("_"):
            importlib.import_module(f"{MEASURES_PACKAGE}.{found.name}")


def measures(comparison: Comparison | None = None) -> tuple[Measure, ...]:
    """The catalogue in order; only the measures reported for ``comparison`` when given."""
    _load()
    with _lock:
        every = sorted(_registered.values(), key=lambda m: (m.order, m.name))
    return tuple(m for m in every if comparison is None or comparison in m.compares)


def measure(name: str) -> Measure:
    """The measure called ``name``; a one-line error listing the catalogue otherwise."""
    _load()
    with _lock:
        found = _registered.get(name)
        names = sorted(_registered)
    if found is None:
        raise KeyError(f"no measure {name!r}; the catalogue has {', '.join(names)}")
    return found


__all__ = [
    "HEADLINE",
    "Comparison",
    "Measure",
    "PairStatistic",
    "RatersStatistic",
    "ScoringScale",
    "measure",
    "measures",
    "register",
    "registered",
    "restored",
]
