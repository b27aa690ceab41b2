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
    python benchmarks/plan_accuracy.py --llmjudge 8 --pilots 40
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


DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llmjudge"


def llmjudge(pilots: int, pilot_queries: int, n_boot: int) -> int:
    """Pilots of ``pilot_queries`` whole LLMJudge queries (every human label of them), one
    participant's file as the judge (each of the seven in turn): each pilot plans κ for the
    half-width that the held-back queries (the other 25 − ``pilot_queries``) realise, and
    the planned count of queries is set against theirs. Printed per plan (central: the
    pilot's half-width; widened: its upper 80% bound): the share of pilots that asked too
    few and the median of planned / needed."""
    from mmjudge.data.qrels import read_qrels
    from mmjudge.estimation.prediction import shared_items

    if not (DATA / "test_qrels_human.txt").is_file():
        print(f"no LLMJudge files at {DATA}", file=sys.stderr)
        return 1
    human = read_qrels(DATA / "test_qrels_human.txt")
    ratios: dict[str, list[float]] = {"central": [], "widened": []}
    files = sorted((DATA / "runs").glob("*.txt"))
    for path in files:
        items = shared_items(human, read_qrels(path))
        queries = np.asarray(items.queries, dtype=object)
        judge = np.clip(items.judge, 0, 3)
        names = sorted(set(items.queries))
        for rep in range(pilots):
            rng = np.random.default_rng(rep)
            chosen = set(rng.choice(names, pilot_queries, replace=False))
            pilot = np.array([q in chosen for q in items.queries])
            held = ~pilot
            score = scoring.score_judge(
                queries[held], items.human[held], judge[held], GRADES, n_boot=n_boot
            )
            realised = (score.kappa.high - score.kappa.low) / 2
            found = planning.plan_kappa(
                path.stem,
                queries[pilot],
                items.human[pilot],
                judge[pilot],
                GRADES,
                realised,
                n_boot=n_boot,
            )
            needed = len(names) - pilot_queries
            per_query = found.n_items / found.n_queries
            ratios["central"].append(found.needed / per_query / needed)
            ratios["widened"].append(found.needed_upper / per_query / needed)
    print(
        f"LLMJudge: {len(files)} judges x {pilots} pilots of {pilot_queries} whole queries, "
        f"planned for the half-width the other {len(names) - pilot_queries} queries realise:"
    )
    for label, found_ratios in ratios.items():
        r = np.asarray(found_ratios)
        print(
            f"  {label:8s} asked too few in {np.mean(r < 1):.0%}, planned / needed queries: "
            f"median {np.median(r):.2f}, 10th-90th percentile {np.quantile(r, 0.1):.2f}-"
            f"{np.quantile(r, 0.9):.2f}"
        )
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pilots", type=int, default=40)
    p.add_argument("--draws", type=int, default=20)
    p.add_argument(
        "--llmjudge",
        type=int,
        default=None,
        metavar="Q",
        help="instead: pilots of Q whole queries of the LLMJudge files (../shared/data)",
    )
    p.add_argument("--n-boot", type=int, default=1000)
    args = p.parse_args()
    if args.llmjudge is not None:
        return llmjudge(args.pilots, args.llmjudge, args.n_boot)
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
