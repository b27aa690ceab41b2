"""The race's guarantee against a copy of a judge wrong on about 1.5% of the items the judge
has right (more than 0.02 κ below it): δ = 0 and 0.02, rounds of 50 and 100, 1,000 seeds
each, the copy listed first and second (see :mod:`tests.studies.near_ties`)."""

from __future__ import annotations

import pytest

from tests.studies.near_ties import check_population


@pytest.mark.slow  # about a minute
def test_near_tied_judges_keep_the_guarantee_at_every_round_size_in_either_order() -> None:
    check_population("degraded")
