"""One estimated quantity three ways — human-only, judge-only and prediction-powered — and
the sample size the prediction-powered interval is worth: the record every view of
``mmjudge estimate`` (the table, the JSON, the report's card) reads."""

from __future__ import annotations

import math
from typing import NamedTuple


class Estimate(NamedTuple):
    """One quantity three ways."""

    name: str
    """The quantity, e.g. ``mean grade`` or ``nDCG@10 sysA``."""
    human_only: tuple[float, float, float]
    """(estimate, low, high) from the labelled items alone: the classical interval, with the
    two pseudo-items of :mod:`mmjudge.estimation.small_sample` for a mean over all items."""
    judge_only: float
    """The judge's labels on every item: biased by the judge's errors, no interval."""
    ppi: tuple[float, float, float]
    """(estimate, low, high): prediction-powered (PPI++, tuned weight), with the same
    pseudo-items where the human-only interval has them."""
    lam: float
    """The weight PPI++ gave the judge (0: ignored, 1: plain PPI); for a system measure
    split by its top tens, the weight tuned in them."""
    n_labelled: int
    """Human-labelled items used."""
    strata: int = 1
    """How many parts the estimates were made in apart (1: pooled over all items): the
    queries, for the mean grade and the share relevant; 2 (the system's top tens and the
    rest) for a system measure (:mod:`mmjudge.estimation.strata`)."""

    population: int = 0
    """Items estimated over (0: unknown): no number of human labels is worth more."""

    clipped: bool = False
    """An interval (or estimate) reached past the values the quantity can take and was cut
    to them (:func:`mmjudge.estimation.small_sample.fit`)."""

    outside: bool = False
    """An interval lies wholly outside the values the quantity can take; it is shown as it
    came, not cut to a point (:func:`mmjudge.estimation.small_sample.fit`)."""

    no_width: bool = False
    """An interval came out with no width (the labelled items' values of the quantity do not
    vary, e.g. none in a system's top tens): it is not given (its bounds are ``nan``), as no
    sample shows a quantity exactly (:func:`mmjudge.estimation.small_sample.fit`)."""

    human_se: float = math.nan
    """The standard error the human-only interval was made from."""

    ppi_se: float = math.nan
    """The standard error the PPI++ interval was made from, the same way as
    :attr:`human_se` (the same pseudo-items, strata and parts; the judge's weight apart)."""

    @property
    def uncapped_effective_n(self) -> float:
        """``n · (human-only standard error / PPI++ standard error)²``; ``nan`` where either
        is zero or unknown."""
        if not (self.ppi_se > 0 and self.human_se > 0):
            return math.nan
        return self.n_labelled * (self.human_se / self.ppi_se) ** 2

    @property
    def effective_n(self) -> float:
        """The number of human labels whose human-only estimate would be as precise as the
        prediction-powered one, ``n · (human-only standard error / PPI++ standard error)²``,
        at most the :attr:`population` (labelling every item is the most human labels can
        do). The two standard errors are made the same way (per query when the PPI++ one
        is, with the same pseudo-items when it has them), and compared before any
        small-sample quantile or cut to the range, so what it gains is the judge's alone.
        ``nan`` where undefined."""
        found = self.uncapped_effective_n
        return min(found, float(self.population)) if self.population > 0 else found

    @property
    def capped(self) -> bool:
        """The effective sample size was cut to the population."""
        return self.population > 0 and self.uncapped_effective_n > self.population
