"""benchmarks/e2e.py's steady rate: the least-squares slope of rows over time in the
10th–90th percentile window. With many calls in flight and a fixed latency, rows come in waves
(a round of calls returns together, and its rows are written over a fraction of the period);
the slope gives their rate, where the rate between the window's two end rows moves with where
in a wave those rows fall (by up to 7% on the waves below)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from e2e import steady_slope

PERIOD = 1.05


def waves(size: int, spread: float) -> list[tuple[float, int]]:
    """Rows sampled every 10 ms: ``size`` rows per wave, one wave every :data:`PERIOD`
    seconds, each written over ``spread`` seconds."""
    samples, t = [], 0.0
    while t < 12 * PERIOD:
        done = 0
        for wave in range(12):
            start = wave * PERIOD
            if t >= start:
                done = wave * size + min(size, int(size * (t - start) / spread))
        samples.append((t, done))
        t += 0.01
    return samples


@pytest.mark.parametrize(
    ("size", "spread"), [(1024, 0.7), (1024, 0.3), (1100, 0.3), (1300, 0.4), (950, 0.5)]
)
def test_the_slope_gives_the_rate_of_waves_wherever_the_window_ends_fall(
    size: int, spread: float
) -> None:
    assert steady_slope(waves(size, spread), 10_000) == pytest.approx(size / PERIOD, rel=0.015)


def test_a_steady_stream_gives_its_rate() -> None:
    samples = [(i * 0.01, int(i * 3.1)) for i in range(4000)]
    assert steady_slope(samples, 10_000) == pytest.approx(310, rel=0.01)
