"""The one writer of numbers, intervals, money and missing values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mmjudge import display
from mmjudge.display import MISSING
from mmjudge.metrics.scoring import Interval
from mmjudge.store.bounds import Bounds


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf, "0.3", True])
def test_an_undefined_value_is_written_missing(value: object) -> None:
    assert display.number(value) == MISSING  # type: ignore[arg-type]
    assert display.usd(value) == MISSING  # type: ignore[arg-type]
    assert display.percent(value) == MISSING  # type: ignore[arg-type]


def test_numpy_numbers_are_numbers() -> None:
    assert display.number(np.int64(3), 1) == "3.0"
    assert display.usd(np.float32(2.5)) == "$2.50"
    assert display.number(np.float64("nan")) == MISSING


def test_a_value_that_rounds_to_zero_has_no_minus() -> None:
    assert display.number(-0.0001) == "0.000"
    assert display.number(-0.0001, sign=True) == "+0.000"
    assert display.number(-0.0006) == "-0.001"
    assert display.number(0.25, 2, sign=True) == "+0.25"


def test_an_interval_reads_the_same_from_memory_and_from_a_file() -> None:
    in_memory = Interval(0.4123, 0.38, 0.4441)
    on_file = Bounds(0.4123, 0.38, 0.4441)
    assert display.interval(in_memory) == display.interval(on_file) == "0.412 [0.380, 0.444]"
    assert display.interval(Interval(0.5, math.nan, math.nan)) == "0.500"
    assert display.interval(Bounds(0.5)) == "0.500"
    assert display.interval(Bounds()) == display.interval(Interval(math.nan, 0, 1)) == MISSING
    assert display.interval(Interval(-0.0001, -0.02, 0.03), sign=True) == "+0.000 [-0.020, +0.030]"
    assert display.percent_interval(Bounds(0.1, 0.05, 0.2)) == "10.0% [5.0%, 20.0%]"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "$0"),
        (1234.4, "$1,234"),
        (12.5, "$12.50"),
        (0.5, "$0.50"),
        (0.15, "$0.15"),
        (0.0123, "$0.012"),
        (0.00764, "$0.0076"),
        (0.00012, "$0.0001"),
        (0.00004, "<$0.0001"),
        (-2.5, "-$2.50"),
        (-0.0, "$0"),
    ],
)
def test_money_is_written_as_precisely_as_its_size_needs(value: float, text: str) -> None:
    assert display.usd(value) == text


def test_a_price_is_free_or_dollars_per_million() -> None:
    assert display.price(0) == display.usd_per_million(0) == "free"
    assert display.usd_per_million(0.15) == "$0.15 per million"
    assert display.usd_per_million(150) == "$150 per million"
    assert display.usd_per_million(None) == MISSING
    assert display.usd_tick(2e6) == "$2M" and display.usd_tick(1500) == "$1.5k"
