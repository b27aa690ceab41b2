"""How much of the full grid a race spends, and how often it keeps the full grid's choice: the
judges of the LLMJudge collection (TREC qrels, grades 0-3) raced against the human qrels with
:func:`mmjudge.grid.simulation.simulate_race` (the real race's schedule through the grid's
loop), over many seeds of the item order.

Price tables (``--tables``): every judge at one price (what the race saves by κ alone);
prices from the sheet for the models the run names say they used, at a stated typical call
(input and output tokens, ``--input-tokens``/``--output-tokens``), the others at the median
of those; the five judges of highest κ at ``--dear`` times the others' price (no cheap judge
within δ of the best: the race must tell the dear ones apart); and, not run by default,
``top3``, the three of highest κ at that price (on LLMJudge all three are within δ of the
best, and no cheap judge is), and ``top1``, the best judge alone at that price, where two
cheap judges within δ of the best exist and the race must find the cheaper while the best is
dear. For each spending exponent ρ and round size it prints the mean and spread of the share
of the full grid's judgments and (list-price) dollars spent, how often the choice is within
δ of the full-data best judge and how often it is the full-data choice (the cheapest within δ
of the best), the mean number of rounds and how the races ended; then the same two rates for
a fixed sample of the same dollars — every judge on the same first items of the same order,
as many as the race's dollars buy — read with the same rule (its choice at those items).

    python benchmarks/race.py                      # ../shared/data/llmjudge, 200 seeds
    python benchmarks/race.py --seeds 50 --rho 2 3 --round-items 100 --target items
    python benchmarks/race.py --labels ask --rho 1 --round-items 200   # grades asked
    python benchmarks/race.py --tables top3 --spare-dear --rho 1 --round-items 200

With ``--labels ask`` the people's grades are asked round by round where the judges still
racing disagree (``race.labels=ask``; the qrels answer as an oracle), and each row adds the
grades asked (mean and spread) beside those the uniform race of the same seed needed. With
``--spare-dear`` dear judges judge only a sample of each round's items, their κ borrowing the
cheap judges' grades on the rest (``race.spare_dear=on``, :mod:`mmjudge.studies.race_spare`).
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
from omegaconf import OmegaConf

from mmjudge.config.race import RaceConfig
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import price_from_entry
from mmjudge.data.qrels import read_qrels, run_names
from mmjudge.grid.simulation import simulate_race
from mmjudge.locations import CONFIG_DIR
from mmjudge.records import Usage
from mmjudge.studies.judge_files import align
from mmjudge.studies.race_rule import (
    decide_round,
    planned_round_items,
    race_inputs,
    race_order,
)
from mmjudge.studies.race_simulation import full_data_choice, graded_order

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "llmjudge"
SHEET = "2026-10-31"
SCALE = (0.0, 1.0, 2.0, 3.0)
#: The price tables ``--tables`` chooses from.
TABLES = ("equal", "sheet", "top5", "top3", "top1")

#: Run-name fragment -> (the model it names, the sheet key that prices it, where the key is from).
NAMED_MODELS: list[tuple[str, str, str, str]] = [
    ("gpt4o", "GPT-4o", "model_id", "gpt4o"),
    ("llama70b", "Llama 3 70B", "price_key", "llama3_70b"),
    ("llama38b", "Llama 3 8B", "key", "self-hosted-gpu"),
]


class Collection(NamedTuple):
    names: list[str]
    human: np.ndarray
    judges: np.ndarray
    query_ids: list[str]
    doc_ids: list[str]


def load(root: Path) -> Collection:
    human = read_qrels(root / "test_qrels_human.txt")
    paths = sorted((root / "runs").glob("*.txt"))
    judges = {name: read_qrels(p) for name, p in zip(run_names(paths), paths, strict=True)}
    found = align(human, judges)
    return Collection(
        found.names, found.human, found.judges, found.query_ids.tolist(), found.doc_ids.tolist()
    )


def sheet_key(how: str, value: str) -> str:
    """The sheet key of a shipped model config (its model_id or price_key), or ``value``."""
    if how == "key":
        return value
    model = OmegaConf.load(CONFIG_DIR / "model" / f"{value}.yaml")
    return str(model.get(how) or model.model_id)


def sheet_prices(names: Sequence[str], usage: Usage) -> tuple[list[float], list[str]]:
    """Dollars per judgment from the sheet for the judges whose name says their model (at
    ``usage`` per call), the median of those for the others; and one line per judge."""
    sheet = OmegaConf.load(CONFIG_DIR / "pricing" / f"{SHEET}.yaml")
    known: dict[str, tuple[float, str]] = {}
    for name in names:
        plain = name.lower().replace("-", "").replace("_", "")
        for fragment, model, how, value in NAMED_MODELS:
            if fragment in plain:
                key = sheet_key(how, value)
                price = price_from_entry(key, sheet.models[key], SHEET)
                known[name] = (cost_of(usage, price).total_usd, f"{model} ({key})")
    median = statistics.median(p for p, _ in known.values())
    prices, lines = [], []
    for name in names:
        price, source = known.get(name, (median, "no model named: the median"))
        prices.append(price)
        lines.append(f"  {name:<26} ${price * 1e6:>8,.0f} per million  {source}")
    return prices, lines


@dataclass(frozen=True)
class Setting:
    rho: float
    round_items: int


@dataclass(frozen=True)
class Job:
    collection: Collection
    prices: tuple[float, ...]
    setting: Setting
    alpha: float
    delta: float
    target: str
    seed: int
    labels: str = "uniform"
    spare_dear: str = "off"
    label_usd: float = 0.0


class Seed(NamedTuple):
    """One seed's race, and the fixed sample of the same dollars."""

    judged: float
    """Share of the full grid's judgments the race made."""
    dollars: float
    """Share of the full grid's list-price dollars."""
    rounds: int
    chosen: int
    ending: str
    fixed_chosen: int
    """The choice of a fixed sample of the same dollars, read with the same rule."""
    grades: int
    """People's grades the race needed (``race.labels``)."""
    uniform_grades: int
    """People's grades the uniform race of the same seed needed."""
    judge_usd: float = 0.0
    """The race's list-price dollars of judge calls."""
    uniform_judge_usd: float = 0.0
    """The uniform race's."""
    fixed_share_grades: int = 0
    """With ``--label-usd``: the grades the same race asked with the even share fixed
    (``race.label_usd`` unset)."""
    fixed_share_judge_usd: float = 0.0
    """Its judge dollars."""
    fixed_share_chosen: int = -1
    """Its choice."""


def fixed_sample_choice(
    c: Collection, prices: Sequence[float], order: np.ndarray, rule: RaceConfig, dollars: float
) -> int:
    """Every judge on the first items of ``order`` that ``dollars`` buy (the same number for
    each), decided by the race's rule at its last round on those items."""
    graded = graded_order(c.human, order, SCALE)
    size = int(np.clip(round(dollars / sum(prices)), 1, graded.size))
    sample = graded[:size]
    inputs = race_inputs(c.human[sample], c.judges[:, sample], prices, SCALE)
    last = -(-size // planned_round_items(rule, size).items)
    decision = decide_round(inputs, [size] * len(prices), rule, last)
    assert decision.chosen is not None
    return decision.chosen


def one_race(job: Job) -> Seed:
    """The race of one seed and the fixed sample of its dollars."""
    c = job.collection
    rule = RaceConfig(
        alpha=job.alpha,
        delta=job.delta,
        round_items=job.setting.round_items,
        rho=job.setting.rho,
        target=job.target,
        labels=job.labels,
        spare_dear=job.spare_dear,
        label_usd=job.label_usd,
    )
    order = race_order(job.seed, c.query_ids, c.doc_ids)
    out = simulate_race(
        c.human, c.judges, job.prices, order, rule, scale=SCALE, names=c.names, seed=job.seed
    )
    uniform = out
    if rule.asks:  # the same seed's race with every item's grade, for its count
        plain = dataclasses.replace(rule, labels="uniform")
        uniform = simulate_race(c.human, c.judges, job.prices, order, plain, scale=SCALE)
    fixed = fixed_sample_choice(c, job.prices, order, rule, out.list_usd)
    assert out.human_labels is not None and uniform.human_labels is not None
    unpriced = out
    if rule.asks and rule.label_usd > 0:  # the same race with the even share fixed
        fixed_share = dataclasses.replace(rule, label_usd=0.0)
        unpriced = simulate_race(
            c.human, c.judges, job.prices, order, fixed_share, scale=SCALE, seed=job.seed
        )
    assert unpriced.human_labels is not None
    return Seed(
        out.judgments / out.full_judgments,
        out.list_usd / out.full_list_usd,
        len(out.rounds),
        out.chosen,
        out.ending,
        fixed,
        out.human_labels.total,
        uniform.human_labels.total,
        out.list_usd,
        uniform.list_usd,
        unpriced.human_labels.total,
        unpriced.list_usd,
        unpriced.chosen,
    )


def spread(values: Sequence[float]) -> str:
    v = np.asarray(values)
    p10, p90 = np.percentile(v, [10, 90])
    return f"{v.mean():5.1%} ({v.min():.0%} {p10:.0%} {p90:.0%} {v.max():.0%})"


def count_spread(values: Sequence[int]) -> str:
    v = np.asarray(values)
    p10, p90 = np.percentile(v, [10, 90])
    return f"{v.mean():,.0f} ({v.min():,} {p10:,.0f} {p90:,.0f} {v.max():,})"


def table(
    pool: multiprocessing.pool.Pool,
    collection: Collection,
    prices: Sequence[float],
    settings: Sequence[Setting],
    args: argparse.Namespace,
) -> list[str]:
    kappas, choice = full_data_choice(
        collection.human, collection.judges, prices, scale=SCALE, delta=args.delta
    )
    best = int(np.nanargmax(kappas))
    lines = [
        f"  full data: best {collection.names[best]} κ={kappas[best]:.4f}; "
        f"choice (cheapest within δ) {collection.names[choice]} κ={kappas[choice]:.4f}",
        f"  {'ρ':>3} {'round':>5}  {'judgments: mean (min p10 p90 max)':<34} "
        f"{'dollars: mean (min p10 p90 max)':<34} {'within δ':>8} {'= choice':>8} {'rounds':>6}"
        f"  {'fixed sample: within δ':>22} {'= choice':>8}  endings",
    ]
    if args.labels == "ask":
        lines[-1] += (
            "\n    people's grades asked: mean (min p10 p90 max) | the uniform race's | "
            "asked / uniform (mean of ratios)"
        )
    for setting in settings:
        jobs = [
            Job(
                collection,
                tuple(prices),
                setting,
                args.alpha,
                args.delta,
                args.target,
                seed,
                args.labels,
                "on" if args.spare_dear else "off",
                args.label_usd,
            )
            for seed in range(args.seeds)
        ]
        found: list[Seed] = pool.map(one_race, jobs)

        def rates(chosen: Sequence[int]) -> str:
            within = np.mean([kappas[c] >= kappas[best] - args.delta for c in chosen])
            same = np.mean([c == choice for c in chosen])
            return f"{within:>8.1%} {same:>8.1%}"

        endings = Counter(seed.ending for seed in found)
        lines.append(
            f"  {setting.rho:>3g} {setting.round_items:>5}  "
            f"{spread([f.judged for f in found]):<34} {spread([f.dollars for f in found]):<34} "
            f"{rates([f.chosen for f in found])} {np.mean([f.rounds for f in found]):>6.1f}"
            f"  {rates([f.fixed_chosen for f in found]):>31}  "
            + ", ".join(f"{name} {count}" for name, count in endings.most_common())
        )
        if args.labels == "ask":
            ratio = np.mean([f.grades / f.uniform_grades for f in found])
            lines.append(
                f"    grades asked {count_spread([f.grades for f in found])} | uniform race "
                f"{count_spread([f.uniform_grades for f in found])} | {ratio:.1%}"
            )
        if args.labels == "ask" and args.label_usd > 0:
            lines.append("    " + label_trade_line(found, args.label_usd, rates))
    return lines


def label_trade_line(
    found: Sequence[Seed], label_usd: float, rates: Callable[[Sequence[int]], str]
) -> str:
    """Judge and grade dollars (means over seeds) of the race whose even share is priced
    (``race.label_usd``), of the same race with the share fixed, and of the uniform race."""

    def total(judges: Sequence[float], grades: Sequence[int]) -> str:
        j, g = float(np.mean(judges)), float(np.mean(grades)) * label_usd
        return f"${j:,.2f} + ${g:,.2f} = ${j + g:,.2f}"

    priced = total([f.judge_usd for f in found], [f.grades for f in found])
    fixed = total([f.fixed_share_judge_usd for f in found], [f.fixed_share_grades for f in found])
    uniform = total([f.uniform_judge_usd for f in found], [f.uniform_grades for f in found])
    fixed_rates = rates([f.fixed_share_chosen for f in found])
    return (
        f"at ${label_usd:g} a grade (judges + grades, mean): priced share {priced}"
        f" | fixed share {fixed} [within δ, = choice:{fixed_rates}]"
        f" | uniform race {uniform}"
    )


def dear_table(
    pool: multiprocessing.pool.Pool,
    collection: Collection,
    count: int,
    settings: Sequence[Setting],
    args: argparse.Namespace,
) -> list[str]:
    """The table with the ``count`` judges of highest κ at ``--dear`` times the others' price,
    headed by which cheap judges are within δ of the best (the race must find one)."""
    kappas, _ = full_data_choice(
        collection.human,
        collection.judges,
        [1.0] * len(collection.names),
        scale=SCALE,
        delta=args.delta,
    )
    top = set(np.argsort(-kappas)[:count].tolist())
    dear = [args.dear if i in top else 1.0 for i in range(len(collection.names))]
    best = float(np.nanmax(kappas))
    within = [
        f"{collection.names[i]} (κ {kappas[i]:.4f})"
        for i in range(len(collection.names))
        if i not in top and kappas[i] >= best - args.delta
    ]
    words = {5: "five judges", 3: "three judges", 1: "judge"}.get(count, f"{count} judges")
    said = (
        "cheap judges within δ of the best: " + ", ".join(within)
        if within
        else "no cheap judge within δ of the best"
    )
    lines = [f"\nthe {words} of highest κ at {args.dear:g}× the others' price ({said})"]
    return lines + table(pool, collection, dear, settings, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with runs/ and qrels")
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--delta", type=float, default=0.02)
    parser.add_argument("--rho", type=float, nargs="+", default=[1.0, 2.0, 3.0])
    parser.add_argument("--round-items", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--input-tokens", type=int, default=1000)
    parser.add_argument("--output-tokens", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--target", choices=("population", "items"), default="population")
    parser.add_argument(
        "--labels",
        choices=("uniform", "ask"),
        default="uniform",
        help="race.labels: every item's grade, or grades asked where the judges disagree",
    )
    parser.add_argument(
        "--label-usd",
        type=float,
        default=0.0,
        help="race.label_usd with --labels ask: a person's grade's price, which sets the even "
        "share; each row adds judge and grade dollars beside the same race with the share fixed",
    )
    parser.add_argument(
        "--spare-dear",
        action="store_true",
        help="race.spare_dear=on: dear judges judge a sample of each round's items",
    )
    parser.add_argument(
        "--dear", type=float, default=10.9, help="the dear judges' price ratio (top5, top3, top1)"
    )
    parser.add_argument(
        "--tables",
        nargs="+",
        choices=TABLES,
        default=["equal", "sheet", "top5"],
        help="price tables: every judge at $1, sheet prices, the five, three or one judges of "
        "highest κ dear",
    )
    args = parser.parse_args(argv)
    if not (args.data / "test_qrels_human.txt").exists():
        print(f"no LLMJudge data at {args.data} (runs/*.txt and test_qrels_human.txt)")
        return 2
    started = time.perf_counter()
    print("$ python benchmarks/race.py " + " ".join(sys.argv[1:] if argv is None else argv))
    collection = load(args.data)
    n_items = int((~np.isnan(collection.human)).sum())
    print(
        f"{len(collection.names)} judges, {n_items:,} items with a human grade; "
        f"α={args.alpha}, δ={args.delta}, race.target={args.target}, "
        + ("race.labels=ask, " if args.labels == "ask" else "")
        + ("race.spare_dear=on, " if args.spare_dear else "")
        + f"{args.seeds} seeds of the item order"
    )
    settings = [Setting(rho, n) for rho in args.rho for n in args.round_items]
    usage = Usage(input_tokens=args.input_tokens, output_tokens=args.output_tokens)
    prices, price_lines = sheet_prices(collection.names, usage)
    with multiprocessing.Pool(args.jobs) as pool:
        if "equal" in args.tables:
            print("\nequal prices (every judge $1 per judgment)")
            for line in table(pool, collection, [1.0] * len(collection.names), settings, args):
                print(line)
        if "sheet" in args.tables:
            print(
                f"\nsheet prices ({SHEET} sheet, a typical call of {args.input_tokens:,} input "
                f"and {args.output_tokens} output tokens)"
            )
            for line in price_lines:
                print(line)
            for line in table(pool, collection, prices, settings, args):
                print(line)
        for count in (5, 3, 1):
            if f"top{count}" in args.tables:
                for line in dear_table(pool, collection, count, settings, args):
                    print(line)
    print(f"\n{time.perf_counter() - started:.0f} s on {args.jobs} processes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
