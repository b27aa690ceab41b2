"""Bootstrap intervals over many queries are summed a few resamples at a time, so their memory
stays small, and the numbers are exactly those of summing every resample at once."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from mmjudge.metrics import accuracy, mean_absolute_error, resampling
from mmjudge.metrics.kappa import cohen_kappa


def _labels(n: int, n_queries: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    queries = rng.integers(0, n_queries, size=n).astype(str)
    human = rng.integers(0, 3, size=n).astype(float)
    judge = np.where(rng.random(n) < 0.7, human, rng.integers(0, 3, size=n)).astype(float)
    other = np.where(rng.random(n) < 0.6, human, rng.integers(0, 3, size=n)).astype(float)
    judge[::97] = np.nan  # unparseable answers
    return queries, human, judge, other


def test_summing_in_pieces_equals_summing_at_once() -> None:
    rng = np.random.default_rng(3)
    n_groups = 501
    draws = rng.integers(0, n_groups, size=(37, n_groups))
    stats = [rng.integers(0, 9, size=(n_groups, 9)).astype(float) for _ in range(2)]
    whole = [resampling._resample_counts(draws, n_groups).astype(float) @ stat for stat in stats]
    blocks = [
        resampling._narrow(resampling._resample_counts(draws[start : start + 5], n_groups))
        for start in range(0, len(draws), 5)
    ]
    pieces = resampling._resampled_sums(blocks, stats)
    for a, b in zip(whole, pieces, strict=True):
        assert a.shape == b.shape
        assert np.array_equal(a, b)


@pytest.mark.parametrize("cells", [1, 1_000, 10**9])
def test_intervals_do_not_depend_on_how_many_resamples_are_summed_together(
    monkeypatch: pytest.MonkeyPatch, cells: int
) -> None:
    queries, human, judge, other = _labels(6_000, 900)
    monkeypatch.setattr(resampling, "_COUNT_CELLS", 10**9)
    fns = [cohen_kappa, accuracy, mean_absolute_error]
    expected = resampling.bootstrap_ci_many(fns, queries, human, judge, n_boot=300)
    paired = resampling.paired_bootstrap(cohen_kappa, queries, human, judge, other, n_boot=300)
    monkeypatch.setattr(resampling, "_COUNT_CELLS", cells)
    assert resampling.bootstrap_ci_many(fns, queries, human, judge, n_boot=300) == expected
    assert (
        resampling.paired_bootstrap(cohen_kappa, queries, human, judge, other, n_boot=300) == paired
    )


def _whole_blocks(seed: int, n_groups: int, n_boot: int) -> np.ndarray:
    """The resamples as drawn before they came in pieces: up to 4,000,000 codes per call."""
    rng = np.random.default_rng(seed)
    block = max(1, min(n_boot, 4_000_000 // n_groups))
    draws = [
        rng.integers(0, n_groups, size=(min(block, n_boot - start), n_groups))
        for start in range(0, n_boot, block)
    ]
    return np.concatenate(draws)


# Each case crosses at least two boundaries of the 4,000,000-code draws (the last one partial)
# and ends its blocks on a short piece, with as few resamples as that takes.
@pytest.mark.parametrize(
    ("n_groups", "n_boot"),
    [(1, 1000), (2, 1000), (7, 1000), (1_251, 1000), (12_501, 700), (40_000, 250)],
)
def test_resamples_in_pieces_are_the_resamples_drawn_whole(n_groups: int, n_boot: int) -> None:
    pieces = list(resampling._resamples(np.random.default_rng(5), n_groups, n_boot))
    assert max(piece.size for piece in pieces) <= max(resampling._COUNT_CELLS, 2 * n_groups)
    assert np.array_equal(np.concatenate(pieces), _whole_blocks(5, n_groups, n_boot))


def test_counts_kept_for_the_next_interval_give_the_same_numbers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counts kept from one interval serve the next with the same seed, queries and number
    of resamples; the numbers equal those counted afresh, and a seed or size not seen before
    gets its own counts."""
    queries, human, judge, other = _labels(6_000, 900)
    monkeypatch.setattr(resampling, "_kept", type(resampling._kept)())
    monkeypatch.setattr(resampling, "_KEPT_CELLS", 0)  # nothing kept: counted every time
    fresh = [
        resampling.bootstrap_ci(cohen_kappa, queries, human, judge, n_boot=300, seed=seed)
        for seed in (0, 1)
    ]
    fresh_pair = resampling.paired_bootstrap(cohen_kappa, queries, human, judge, other, n_boot=300)
    assert not resampling._kept
    monkeypatch.setattr(resampling, "_KEPT_CELLS", 10**9)
    for _ in range(2):
        kept = [
            resampling.bootstrap_ci(cohen_kappa, queries, human, judge, n_boot=300, seed=seed)
            for seed in (0, 1)
        ]
        assert kept == fresh
        pair = resampling.paired_bootstrap(cohen_kappa, queries, human, judge, other, n_boot=300)
        assert pair == fresh_pair
    n_groups = len(set(queries))
    assert set(resampling._kept) == {(0, n_groups, 300), (1, n_groups, 300)}
    assert all(b.dtype == np.uint8 for blocks in resampling._kept.values() for b in blocks)


def test_kept_counts_stay_within_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    queries, human, judge, _ = _labels(6_000, 900)
    monkeypatch.setattr(resampling, "_kept", type(resampling._kept)())
    n_groups = len(set(queries))
    monkeypatch.setattr(resampling, "_KEPT_CELLS", n_groups * 300 * 2)
    for seed in range(4):
        resampling.bootstrap_ci(cohen_kappa, queries, human, judge, n_boot=300, seed=seed)
    assert list(resampling._kept) == [(2, n_groups, 300), (3, n_groups, 300)]  # the latest two


def _blas_threads() -> list[int]:
    from threadpoolctl import threadpool_info

    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_resampled_sums_use_one_blas_thread() -> None:
    """Small products on several BLAS threads cost more than they save: the sums run with
    the BLAS held to one thread, and the setting is given back afterwards."""
    before = _blas_threads()
    seen: list[list[int]] = []

    def blocks() -> Iterator[np.ndarray]:
        for _ in range(3):
            seen.append(_blas_threads())
            yield np.ones((4, 50), dtype=np.uint8)

    sums = resampling._resampled_sums(blocks(), [np.ones((50, 9))])
    assert np.array_equal(sums[0], np.full((12, 9), 50.0))
    assert len(seen) == 3 and all(threads == [1] * len(before) for threads in seen)
    assert _blas_threads() == before
