"""The race's guarantee against a copy of a judge with 1% of its grades changed at random
(about 0.01 κ below it): δ = 0 and 0.02, rounds of 50 and 100, 1,000 seeds each, the copy
listed first and second (see :mod:`tests.studies.near_ties`)."""

from __future__ import annotations

import pytest

from tests.studies.near_ties import check_population


@pytest.mark.slow  # about a minute
def test_near_tied_judges_keep_the_guarantee_at_every_round_size_in_either_order() -> None:
    check_population("flipped")
