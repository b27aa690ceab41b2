"""The z a race's intervals use at each round: an error-spending boundary computed jointly over
the race's planned rounds (see :mod:`mmjudge.studies.race_rule`).

A pair of cells' κ difference, standardised, is at round t (u_t = m_t / N of the items drawn)
approximately a normal variable Z_t, and the Z of one pair at two rounds s < t are
correlated as nested samples are. Where the target is the population the items were drawn
from (the items an independent sample of it), corr(Z_s, Z_t) = √(u_s / u_t): a Brownian
motion W observed at the times τ_t = u_t, Z_t = W(τ_t) / √τ_t, and the last round (u = 1)
is a look like any other. Where the target is the N items themselves (a sample drawn without
replacement), corr(Z_s, Z_t) = √(u_s (1 − u_t) / (u_t (1 − u_s))): the times are
τ_t = u_t / (1 − u_t), and the last round, where the items decide exactly, needs no boundary.
A union bound over rounds (Bonferroni) ignores the correlation and asks a larger z than
needed; here the boundary
z_1, z_2, … is found so that the chance of crossing it first at round t is exactly the round's
share of the error budget — the error-spending construction of Lan and DeMets (1983) — by the
recursive numerical integration of Armitage, McPherson and Rowe (1969): the density of W on
the rounds' continuation regions is carried from round to round on a grid, and each z is
solved from the crossing probability, which is exact given that density.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import ndtr

#: Grid points carrying the density from round to round, and how many standard deviations
#: below zero it reaches (501 points give the z of 2,001 to within 2·10⁻⁴ over 20 rounds, in
#: a fifteenth of the time).
POINTS = 501
DEPTH = 9.0


def look_fractions(round_items: int, n_items: int, *, last: bool = False) -> tuple[float, ...]:
    """The share of the ``n_items`` drawn at each planned round before the last (u < 1), and
    at the last (u = 1) with ``last``."""
    rounds = math.ceil(n_items / round_items)
    before = tuple(t * round_items / n_items for t in range(1, rounds))
    return (*before, 1.0) if last else before


def _above(level: float, grid: np.ndarray, mass: np.ndarray, step: float) -> float:
    """P(not crossed before, W(τ_t) ≥ level): the carried density's mass at each grid point
    times the chance its step of standard deviation ``step`` ends at or above ``level``."""
    return float(np.sum(mass * (1.0 - ndtr((level - grid) / step))))


@functools.lru_cache(maxsize=64)
def spending_boundary(
    shares: tuple[float, ...], fractions: tuple[float, ...], *, without_replacement: bool = True
) -> tuple[float, ...]:
    """z_t for each planned round: a standard normal path with the correlation of nested
    samples at ``fractions`` first crosses z_t at round t with chance ``shares[t]`` (``inf``
    where a round has nothing to spend). ``without_replacement``: samples of a finite set of
    items (every fraction below 1), else independent draws from a population."""
    times = [u / (1 - u) if without_replacement else u for u in fractions]
    grid = np.zeros(1)
    density = np.ones(1)  # W(0) = 0: a point mass, weight 1
    weights = np.ones(1)
    previous = 0.0
    out = []
    for share, time in zip(shares, times, strict=True):
        step = math.sqrt(time - previous)
        previous = time

        mass = weights * density

        reach = float(mass.sum())  # the chance of having come this far
        if share <= 0 or share >= reach:
            z = math.inf if share <= 0 else -math.inf
        else:
            low, high = -DEPTH * math.sqrt(time), DEPTH * math.sqrt(time) + 10.0
            for _ in range(80):  # bisection on the level of W
                middle = (low + high) / 2
                low, high = (
                    (middle, high) if _above(middle, grid, mass, step) > share else (low, middle)
                )
            z = (low + high) / 2 / math.sqrt(time)
        out.append(z)
        top = z * math.sqrt(time) if math.isfinite(z) else DEPTH * math.sqrt(time)
        new_grid = np.linspace(-DEPTH * math.sqrt(time), top, POINTS)
        spacing = new_grid[1] - new_grid[0]
        kernel = np.exp(-0.5 * ((new_grid[:, None] - grid[None, :]) / step) ** 2) / (
            step * math.sqrt(2 * math.pi)
        )
        new_density = kernel @ mass
        grid, density = new_grid, new_density
        weights = np.full(POINTS, spacing)
        weights[[0, -1]] = spacing / 2
    return tuple(out)
