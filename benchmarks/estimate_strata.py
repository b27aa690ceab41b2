"""Would stratifying by query narrow mmjudge's prediction-powered intervals? Measured on the
LLMJudge label files, set up as in ``estimate_coverage.py``.

For each of ``--draws`` random labelled subsets, every column ``mmjudge estimate`` builds
(mean grade, share relevant, each system's nDCG@10 and P@10) is estimated three ways: PPI++
over all items (mmjudge's pooled estimate) and within each query, combined with the queries'
shares of the items as weights (post-stratified: the draw is not stratified, so the labelled
count per query varies), once with the weight on the judge tuned within each query
(``mmjudge.estimation.strata``, applied whatever its rule would say) and once at the pooled
weight. It prints each one's median interval width and coverage.

With ``--copies K`` the collection is K copies of every item and only the mean grade and the
share relevant are estimated (``estimate_coverage.setup``): coverage as on a large collection.

    python benchmarks/estimate_strata.py --labelled 500 --draws 1000
    python benchmarks/estimate_strata.py --labelled 2000 --draws 1000 --copies 20
"""

from __future__ import annotations

import sys

import numpy as np
import ppi_py
from estimate_coverage import draws_from_command_line

from mmjudge.estimation import prediction, strata


def _per_query(y, yhat, yrest, alpha, lams):
    """One query's intervals: PPI++ tuned within the query, or at the pooled weights."""
    if lams is None:
        low, high = ppi_py.ppi_mean_ci(y, yhat, yrest, alpha=alpha, lam_optim_mode="element")
        return np.ravel(low), np.ravel(high)
    pairs = [
        ppi_py.ppi_mean_ci(y[:, k], yhat[:, k], yrest[:, k], alpha=alpha, lam=lam)
        for k, lam in enumerate(lams)
    ]
    return np.array([np.ravel(a)[0] for a, _ in pairs]), np.array(
        [np.ravel(b)[0] for _, b in pairs]
    )


def stratified(columns, items, labelled, codes, n_queries, lams=None, alpha=0.05):
    """Post-stratified PPI: per query ``ppi_mean_ci`` (the weight on the judge tuned within
    the query, or ``lams``, one per column), weighted by the query's share of the items."""
    size = codes.size
    centre = np.zeros(len(columns.names))
    variance = np.zeros(len(columns.names))
    for q in range(n_queries):
        here = codes == q
        lab, rest = here & labelled, here & ~labelled
        if lab.sum() < 2 or rest.sum() < 1:
            return None
        y = columns.values(items.human[lab], lab)
        yhat = columns.values(items.judge[lab], lab)
        yrest = columns.values(items.judge[rest], rest)
        low, high = _per_query(y, yhat, yrest, alpha, lams)
        # a column constant on the query's labelled items (none in a system's top ten) has
        # no variance to tune a weight with: its labelled mean, with no spread
        flat = np.isnan(low) | np.isnan(high)
        mid = np.where(flat, y.mean(axis=0), (low + high) / 2)
        half = np.where(flat, 0.0, (high - low) / 2)
        weight = here.sum() / size
        centre += weight * mid
        variance += (weight * half) ** 2
    half = np.sqrt(variance)
    return centre + columns.offset - half, centre + columns.offset + half


def by_query(columns, items, labelled, codes, alpha=0.05):
    """mmjudge's own per-query estimate (``strata.stratified_means``, the weight tuned within
    each query), whatever ``strata.usable`` would say; ``None`` where a query has under 2
    labelled or no unlabelled items."""
    done = np.bincount(codes[labelled], minlength=codes.max() + 1)
    left = np.bincount(codes[~labelled], minlength=codes.max() + 1)
    if done.min() < 2 or left.min() < 1:
        return None
    y = columns.values(items.human[labelled], labelled)
    yhat = columns.values(items.judge[labelled], labelled)
    rest = columns.values(items.judge[~labelled], ~labelled)
    found = strata.stratified_means(
        ppi_py, prediction.tuned_weights, (y, yhat, rest), codes, labelled, alpha
    )
    return found.low + columns.offset, found.high + columns.offset


def main() -> int:
    found = draws_from_command_line(__doc__.splitlines()[0], labelled=500)
    if found is None:
        return 1
    args, items, design, truth = found
    pooled, own, shared, skipped = [], [], [], 0
    for seed in range(args.draws):
        mask = prediction.draw_labelled(items.human.size, args.labelled, seed)
        guess = prediction.pilot(design, items.human, items.judge, mask)
        columns = prediction.build_columns(design, guess)
        estimates = prediction.estimate_columns(columns, items, mask)
        lams = [e.lam for e in estimates]
        by_own = by_query(columns, items, mask, design.codes)
        by_shared = stratified(columns, items, mask, design.codes, design.n_queries, lams)
        if by_own is None or by_shared is None:
            skipped += 1
            continue
        pooled.append([(e.ppi[1], e.ppi[2]) for e in estimates])
        own.append(np.stack(by_own, axis=1))
        shared.append(np.stack(by_shared, axis=1))
    print(
        f"judge {args.judge}, {args.labelled} labelled, {len(pooled)} draws "
        f"({skipped} with a query of under 2 labelled items left out); "
        "median width and coverage"
    )
    truths = np.array([truth[n] for n in columns.names])
    heads = ("pooled PPI++", "by query, own λ", "by query, pooled λ")
    print(f"{'quantity':34s} {heads[0]:>17s} {heads[1]:>17s} {heads[2]:>19s}")
    cells = []
    for found in (pooled, own, shared):
        bounds = np.asarray(found, dtype=float)  # draws × columns × (low, high)
        width = np.median(bounds[..., 1] - bounds[..., 0], axis=0)
        cover = ((bounds[..., 0] <= truths) & (truths <= bounds[..., 1])).mean(axis=0)
        cells.append((width, cover))
    for k, name in enumerate(columns.names):
        parts = [f"{w[k]:9.3f} {c[k]:7.3f}" for w, c in cells]
        print(f"{name:34s} {parts[0]:>17s} {parts[1]:>17s} {parts[2]:>19s}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
