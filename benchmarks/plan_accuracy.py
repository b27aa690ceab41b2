"""How close is ``mmjudge plan``'s predicted half-width of κ to the one realised, how often does
a small pilot ask for too few labels, and do its intervals hold?

Synthetic (the default): the pool of ``tests/estimation/test_planning.py`` (1,500 queries whose
judge accuracy differs by query). Each of ``--pilots`` pilots of 200 queries plans κ to
±0.025 from its own spread (``central``); the planned number of queries is then drawn
``--draws`` times from the 1,300 held back and the half-width of κ's interval (the plan's:
jackknife over queries, t) measured on each draw. Printed: the ratio predicted / realised for
one draw per pilot and for the mean over the draws, their spread over the pilots, and the
realised half-width's own spread from draw to draw.

LLMJudge (``--llmjudge Q``): pilots of Q whole queries of the shared LLMJudge files, each of
the seven participants' files as the judge in turn (see :func:`llmjudge`).

    python benchmarks/plan_accuracy.py --pilots 40 --draws 20
    python benchmarks/plan_accuracy.py --llmjudge 8 --pilots 40
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mmjudge.estimation import pilot, planning
from mmjudge.metrics import scoring
from mmjudge.metrics.jackknife import kappa_jackknife, paired_kappa_jackknife
from tests.estimation.test_planning import PILOT, TARGET, labelled_pool

GRADES = [0, 1, 2, 3]


def one_pilot(pool: tuple, rep: int, draws: int) -> tuple[float, float, float]:
    """(predicted / realised on the first draw, predicted / mean realised, relative spread of
    the realised half-width over the draws) for pilot ``rep``."""
    queries, human, judge = pool
    rng = np.random.default_rng(100 + rep)
    order = rng.permutation(int(queries.max()) + 1)
    chosen = np.isin(queries, order[:PILOT])
    found = planning.plan_kappa(
        "j", queries[chosen], human[chosen], judge[chosen], GRADES, TARGET, n_boot=0
    )
    wanted = math.ceil(found.needed / (found.n_items / found.n_queries))
    realised = []
    for i in range(draws):
        draw = rng if i == 0 else np.random.default_rng(10_000 + 100 * rep + i)
        held = np.isin(queries, draw.choice(order[PILOT:], wanted, replace=False))
        realised.append(kappa_jackknife(queries[held], human[held], judge[held], GRADES).half_width)
    mean = float(np.mean(realised))
    return TARGET / realised[0], TARGET / mean, float(np.std(realised)) / mean


DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llmjudge"


class Pool(NamedTuple):
    """The LLMJudge items every participant's file grades, with each file's grades."""

    queries: np.ndarray
    """Query id of each item."""
    human: np.ndarray
    """The human grade of each item."""
    judges: dict[str, np.ndarray]
    """Each file's grade of each item (clipped to 0–3)."""


def read_pool(data: Path) -> Pool:
    """The items of ``data``'s human qrels that every file of ``data/runs`` grades."""
    from mmjudge.data.qrels import read_qrels
    from mmjudge.estimation.prediction import shared_items

    human = read_qrels(data / "test_qrels_human.txt")
    files = {path.stem: read_qrels(path) for path in sorted((data / "runs").glob("*.txt"))}
    graded = {}
    for name, qrels in files.items():
        items = shared_items(human, qrels)
        pairs = zip(items.queries, items.docs, strict=True)
        graded[name] = dict(zip(pairs, items.judge, strict=True))
    keys = sorted(set.intersection(*(set(by_key) for by_key in graded.values())))
    judges = {
        name: np.clip(np.array([by_key[k] for k in keys], dtype=float), 0, 3)
        for name, by_key in graded.items()
    }
    queries = np.array([k[0] for k in keys], dtype=object)
    grade = {(q, d): float(g) for q, docs in human.items() for d, g in docs.items()}
    return Pool(queries, np.array([grade[k] for k in keys], dtype=float), judges)


def _share(flags: list[bool]) -> str:
    return f"{np.mean(flags):.0%}" if flags else "-"


def _ratios(label: str, ratios: list[float]) -> str:
    r = np.asarray(ratios)
    return (
        f"  {label:28s} asked too few in {np.mean(r < 1):4.0%}; planned / needed queries: "
        f"median {np.median(r):.2f}, 10th-90th percentile {np.quantile(r, 0.1):.2f}-"
        f"{np.quantile(r, 0.9):.2f}"
    )


def llmjudge(pilots: int, pilot_queries: int, n_boot: int, data: Path, confidence: float) -> int:
    """Pilots of ``pilot_queries`` whole LLMJudge queries (every human label of them), one
    participant's file as the judge (each of the seven in turn). Printed:

    - **labels**: each pilot plans κ for the half-width that the held-back queries (the other
      25 − ``pilot_queries``) realise, with the plan's interval and with the report's
      bootstrap; the share of pilots whose plan asked for fewer queries than that, and
      planned / needed, for the plan (upper 95% bound) and ``central``;
    - **intervals**: the share of pilots whose 95% interval of κ holds κ on all 25 queries
      (the plan's jackknife interval, and the report's bootstrap for comparison);
    - **best against runner-up**: on each pilot, the two judges with the highest κ there (as
      ``plan`` picks them): the share whose paired Δκ interval holds Δκ on all 25 queries,
      the share said to be "already told apart", and how many of those named the wrong judge
      better (and the same two for the report's paired bootstrap); the same over every pair
      of judges."""
    if not (data / "test_qrels_human.txt").is_file():
        print(f"no LLMJudge files at {data} (--data names the folder)", file=sys.stderr)
        return 1
    pool = read_pool(data)
    names = sorted(set(pool.queries.tolist()))
    needed = len(names) - pilot_queries
    ratios: dict[str, list[float]] = {"plan": [], "central": [], "plan, report's": []}
    held_kappa: dict[str, list[bool]] = {"plan's interval": [], "report's bootstrap": []}
    refused = 0
    full = {
        name: kappa_jackknife(pool.queries, pool.human, grades, GRADES).estimate
        for name, grades in pool.judges.items()
    }
    tallies = ("held", "apart", "wrong", "report apart", "report wrong")
    pairs: dict[str, list[bool]] = {name: [] for name in tallies}
    every: dict[str, list[bool]] = {name: [] for name in tallies}
    for rep in range(pilots):
        rng = np.random.default_rng(rep)
        chosen = set(rng.choice(names, pilot_queries, replace=False).tolist())
        in_pilot = np.array([q in chosen for q in pool.queries])
        held = ~in_pilot
        kappas = {}
        for name, grades in pool.judges.items():
            q, h, j = pool.queries[in_pilot], pool.human[in_pilot], grades[in_pilot]
            realised = kappa_jackknife(pool.queries[held], pool.human[held], grades[held], GRADES)
            score = scoring.score_judge(
                pool.queries[held], pool.human[held], grades[held], GRADES, n_boot=n_boot
            )
            report = (score.kappa.high - score.kappa.low) / 2
            try:
                found = planning.plan_kappa(
                    name,
                    q,
                    h,
                    j,
                    GRADES,
                    realised.half_width,
                    n_boot=n_boot,
                    confidence=confidence,
                )
            except pilot.PilotTooSmall:
                refused += 1
                continue
            kappas[name] = found.kappa
            per_query = found.n_items / found.n_queries
            ratios["plan"].append(found.needed_upper / per_query / needed)
            ratios["central"].append(found.needed / per_query / needed)
            wide = planning.plan_kappa(
                name, q, h, j, GRADES, report, n_boot=0, confidence=confidence
            )
            ratios["plan, report's"].append(wide.needed_upper / per_query / needed)
            truth = full[name]
            held_kappa["plan's interval"].append(abs(found.kappa - truth) <= found.half_width)
            boot = scoring.score_judge(q, h, j, GRADES, n_boot=n_boot).kappa
            held_kappa["report's bootstrap"].append(boot.low <= truth <= boot.high)
        ranked = sorted(kappas, key=lambda name: -kappas[name])
        for a, b in itertools.combinations(ranked, 2):
            found = paired_kappa_jackknife(
                pool.queries[in_pilot],
                pool.human[in_pilot],
                pool.judges[a][in_pilot],
                pool.judges[b][in_pilot],
                GRADES,
            )
            boot = scoring.compare_judges(
                pool.queries[in_pilot],
                pool.human[in_pilot],
                pool.judges[a][in_pilot],
                pool.judges[b][in_pilot],
                GRADES,
                n_boot=n_boot,
            )
            truth = full[a] - full[b]
            apart = found.half_width > 0 and abs(found.estimate) > found.half_width
            wrong = apart and (found.estimate > 0) != (truth > 0)
            boot_apart = boot is not None and boot.distinguishable
            boot_wrong = boot_apart and boot is not None and (boot.difference > 0) != (truth > 0)
            for tally in [every, *([pairs] if (a, b) == tuple(ranked[:2]) else [])]:
                tally["held"].append(abs(found.estimate - truth) <= found.half_width)
                tally["apart"].append(bool(apart))
                tally["wrong"].append(bool(wrong))
                tally["report apart"].append(boot_apart)
                tally["report wrong"].append(bool(boot_wrong))
    print(
        f"LLMJudge: {len(pool.judges)} judges x {pilots} pilots of {pilot_queries} whole "
        f"queries ({refused} refused as too small), planned for the half-width the other "
        f"{needed} queries realise:"
    )
    print(_ratios(f"plan (upper {confidence:.0%} bound)", ratios["plan"]))
    print(_ratios("central (the pilot's spread)", ratios["central"]))
    print(_ratios("plan, for the report's ±", ratios["plan, report's"]))
    print(
        "  kappa on all 25 queries held by the pilot's 95% interval: "
        + ", ".join(f"{label} {_share(flags)}" for label, flags in held_kappa.items())
    )
    for label, tally in (("best against runner-up", pairs), ("every pair of judges", every)):
        print(
            f"  {label}: paired interval held Δκ of all 25 queries in {_share(tally['held'])}, "
            f"'already told apart' in {_share(tally['apart'])} "
            f"({sum(tally['wrong'])} of {sum(tally['apart'])} with the wrong judge better); "
            f"the report's paired bootstrap {_share(tally['report apart'])} "
            f"({sum(tally['report wrong'])} of {sum(tally['report apart'])})"
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
    p.add_argument("--data", type=Path, default=DATA, help=f"the LLMJudge folder (default {DATA})")
    p.add_argument("--n-boot", type=int, default=1000)
    p.add_argument(
        "--confidence",
        type=float,
        default=pilot.PLAN_CONFIDENCE,
        help="with --llmjudge: the bound of the pilot's spread to plan with "
        f"(default {pilot.PLAN_CONFIDENCE}, as mmjudge plan)",
    )
    args = p.parse_args()
    if args.llmjudge is not None:
        return llmjudge(args.pilots, args.llmjudge, args.n_boot, args.data, args.confidence)
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
