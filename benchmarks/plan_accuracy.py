"""How close is ``mmjudge plan``'s predicted half-width of κ to the one realised, and is the gap
noise or bias?

The pool is the synthetic one of ``tests/estimation/test_planning.py`` (1,500 queries whose
judge accuracy differs by query). Each of ``--pilots`` pilots of 200 queries plans κ to
±0.025; the planned number of queries is then drawn ``--draws`` times from the 1,300 held
back and κ's bootstrap half-width measured on each draw. Printed: the ratio predicted /
realised for one draw per pilot (what the test checks) and for the mean over the draws
(the realised half-width's own noise averaged out), their spread over the pilots, and the
realised half-width's own spread from draw to draw.

    python benchmarks/plan_accuracy.py --pilots 40 --draws 20
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmjudge.estimation import planning
from mmjudge.metrics import scoring
from tests.estimation.test_planning import PILOT, TARGET, labelled_pool

GRADES = [0, 1, 2, 3]


def one_pilot(pool: tuple, rep: int, draws: int) -> tuple[float, float, float]:
    """(predicted / realised on the first draw, predicted / mean realised, relative spread of
    the realised half-width over the draws) for pilot ``rep``."""
    queries, human, judge = pool
    rng = np.random.default_rng(100 + rep)
    order = rng.permutation(int(queries.max()) + 1)
    pilot = np.isin(queries, order[:PILOT])
    found = planning.plan_kappa(
        "j", queries[pilot], human[pilot], judge[pilot], GRADES, TARGET, n_boot=4000
    )
    wanted = math.ceil(found.needed / (found.n_items / found.n_queries))
    realised = []
    for i in range(draws):
        draw = rng if i == 0 else np.random.default_rng(10_000 + 100 * rep + i)
        held = np.isin(queries, draw.choice(order[PILOT:], wanted, replace=False))
        score = scoring.score_judge(queries[held], human[held], judge[held], GRADES, n_boot=4000)
        realised.append((score.kappa.high - score.kappa.low) / 2)
    mean = float(np.mean(realised))
    return TARGET / realised[0], TARGET / mean, float(np.std(realised)) / mean


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pilots", type=int, default=40)
    p.add_argument("--draws", type=int, default=20)
    args = p.parse_args()
    pool = labelled_pool(0)
    rows = np.array([one_pilot(pool, rep, args.draws) for rep in range(args.pilots)])
    print(f"{args.pilots} pilots of {PILOT} queries planning ±{TARGET}, predicted / realised:")
    for k, label in enumerate(("one draw", f"mean of {args.draws} draws")):
        r = rows[:, k]
        inside = np.mean(np.abs(r - 1) <= 0.15)
        print(
            f"  {label:18s} {r.min():.3f}-{r.max():.3f}, mean {r.mean():.3f}, "
            f"sd {r.std(ddof=1):.3f}, within 15%: {inside:.0%}"
        )
    print(f"  realised half-width, spread from draw to draw: {np.median(rows[:, 2]):.3f} (median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
