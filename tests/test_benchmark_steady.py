"""benchmarks/e2e.py's steady rate: the least-squares slope of rows over time in the
10th–90th percentile window, which gives the rate of rows that come in waves (many calls in
flight, a fixed latency) whatever the waves' phase, and of a steady stream."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from e2e import steady_slope


def waves(offset: float, period: float = 1.05, size: int = 1000, spread: float = 0.7):
    """Rows sampled every 10 ms: ``size`` rows per wave, each wave written over ``spread``
    seconds, one wave every ``period`` seconds, the first starting at ``offset``."""
    samples, t = [], 0.0
    while t < offset + 12 * period:
        done = 0
        for wave in range(12):
            start = offset + wave * period
            if t >= start:
                done = wave * size + min(size, int(size * (t - start) / spread))
        samples.append((t, done))
        t += 0.01
    return samples


@pytest.mark.parametrize("offset", [0.0, 0.2, 0.45, 0.8])
def test_the_slope_gives_the_rate_of_waves_whatever_their_phase(offset: float) -> None:
    rate = steady_slope(waves(offset), 10_000)
    assert rate == pytest.approx(1000 / 1.05, rel=0.03)


def test_a_steady_stream_gives_its_rate() -> None:
    samples = [(i * 0.01, int(i * 3.1)) for i in range(4000)]
    assert steady_slope(samples, 10_000) == pytest.approx(310, rel=0.01)
