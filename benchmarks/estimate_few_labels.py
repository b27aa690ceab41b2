"""Coverage of the mean grade's and the share relevant's 95% intervals from 2 to 300 labels,
on every judge of the LLMJudge files: the table in docs/estimates.md ("From a handful of
labels").

The human qrels are the truth and each participant's file in turn the judge (grades clipped
to 0-3). For each labelled count ``n`` of ``--sizes`` and each of ``--draws`` simple random
draws of ``n`` items (seeds 0, 1, ...: the same draws for every judge), the two means are
estimated as ``mmjudge estimate --labelled n`` estimates them, and the share of 95%
intervals holding the value on all 4,423 human labels is counted, PPI++ and human-only,
with the intervals' median widths, the median effective n, and three ways an interval can
fail outright: no width, lying wholly outside the quantity's range, or collapsed (PPI++
under a quarter of the human-only width: a judge that correlates about 0.5 with the humans,
as these do, can narrow it by a seventh, not by three quarters).

The human-only interval does not depend on the judge, so its coverage is one number per
size. For PPI++ the lowest and highest coverage over the judges are printed; the last lines
give the smallest size from which every coverage at that size and every larger one listed
holds ``--bar`` (0.93), PPI++ and human-only apart.

With ``--shuffled`` each judge is replaced by the human grades shuffled over the items (a
judge that grades at random with the humans' own mix of grades): what the effective n
credits to a judge that adds nothing.

    python benchmarks/estimate_few_labels.py                       # the docs' table, ~40 min
    python benchmarks/estimate_few_labels.py --sizes 2,5,10 --draws 300
    python benchmarks/estimate_few_labels.py --shuffled --sizes 10,100,300
    python benchmarks/estimate_few_labels.py --judges Olz-gpt4o --sizes 500,1000,2000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mmjudge.data.qrels import read_qrels
from mmjudge.estimation import prediction

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llmjudge"
SIZES = "2,3,4,5,6,7,8,10,12,15,20,25,30,40,50,75,100,150,200,250,300"
MEANS = ("mean grade", "share relevant")


class Tally(NamedTuple):
    """One judge, size and quantity over every draw."""

    ppi_hits: int
    human_hits: int
    ppi_width: float
    """Median PPI++ width."""
    human_width: float
    zero: int
    """Draws with an interval of no width (either way)."""
    outside: int
    """Draws with an interval wholly outside the quantity's range."""
    collapsed: int
    """Draws whose PPI++ interval is under a quarter of the human-only width."""
    gain: float
    """Median effective n minus n."""
    by_query: int
    """Draws estimated per query (every query with 40 labelled items)."""


def judges(
    shuffled: bool, names: list[str] | None = None
) -> tuple[prediction.ItemLabels, dict[str, np.ndarray]]:
    """The human labels and each judge's grades (those ``names``, or all) on the same
    items, in the human file's order (the LLMJudge files all grade the same 4,423 pairs)."""
    human = read_qrels(DATA / "test_qrels_human.txt")
    found: dict[str, np.ndarray] = {}
    items = None
    for path in sorted((DATA / "runs").glob("*.txt")):
        if names and path.stem not in names:
            continue
        shared = prediction.shared_items(human, read_qrels(path))
        items = items or shared
        if shared.docs != items.docs or shared.queries != items.queries:
            raise SystemExit(f"{path}: does not grade the same pairs as the others")
        grades = np.clip(shared.judge, 0, 3)
        if shuffled:
            grades = np.random.default_rng(len(found)).permutation(shared.human)
        found[path.stem] = grades
    if items is None:
        raise SystemExit(f"no judges' files in {DATA / 'runs'}")
    return items, found


def tally(items: prediction.ItemLabels, n: int, draws: int) -> dict[str, Tally]:
    """Every draw of ``n`` labelled items estimated as the command does (the means do not
    depend on the first guess the system measures are expanded around, so the columns are
    built once)."""
    design = prediction.prepare(items, None, [0, 1, 2, 3], 2)
    everything = np.ones(items.human.size, dtype=bool)
    columns = prediction.build_columns(
        design, prediction.pilot(design, items.human, items.judge, everything)
    )
    truth = prediction.exact_values(design, items.human)
    rows: dict[str, list[tuple[float, ...]]] = {name: [] for name in MEANS}
    for seed in range(draws):
        mask = prediction.draw_labelled(items.human.size, n, seed)
        found = prediction.estimate_columns(columns, items, mask, queries=design.codes)
        for e in found:
            value = truth[e.name]
            ppi, human = e.ppi[2] - e.ppi[1], e.human_only[2] - e.human_only[1]
            rows[e.name].append(
                (
                    e.ppi[1] <= value <= e.ppi[2],
                    e.human_only[1] <= value <= e.human_only[2],
                    ppi,
                    human,
                    min(ppi, human) <= 0,
                    e.outside,
                    ppi < human / 4,
                    e.effective_n - n,
                    e.strata > 1,
                )
            )
    out = {}
    for name, found in rows.items():
        a = np.asarray(found, dtype=float)
        out[name] = Tally(
            int(a[:, 0].sum()),
            int(a[:, 1].sum()),
            float(np.median(a[:, 2])),
            float(np.median(a[:, 3])),
            int(a[:, 4].sum()),
            int(a[:, 5].sum()),
            int(a[:, 6].sum()),
            float(np.nanmedian(a[:, 7])) if np.isfinite(a[:, 7]).any() else float("nan"),
            int(a[:, 8].sum()),
        )
    return out


def holds_from(sizes: list[int], worst: dict[int, float], bar: float) -> int | None:
    """The smallest size from which every listed size's coverage is at least ``bar``."""
    found = None
    for n in reversed(sizes):
        if worst[n] < bar:
            break
        found = n
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default=SIZES, help=f"labelled counts (default {SIZES})")
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--bar", type=float, default=0.93)
    p.add_argument("--shuffled", action="store_true", help="judges that grade at random")
    p.add_argument("--judges", default=None, help="comma-separated judges (default: all)")
    args = p.parse_args()
    if not (DATA / "test_qrels_human.txt").is_file():
        print(f"no LLMJudge files at {DATA}", file=sys.stderr)
        return 1
    started, load = time.perf_counter(), os.getloadavg()[0]
    sizes = sorted(int(s) for s in args.sizes.split(","))
    items, graded = judges(args.shuffled, args.judges.split(",") if args.judges else None)
    found = {
        (judge, n): tally(items._replace(judge=grades), n, args.draws)
        for judge, grades in graded.items()
        for n in sizes
    }
    kind = "shuffled human grades" if args.shuffled else "LLMJudge participants"
    print(
        f"{len(graded)} judges ({kind}): {', '.join(graded)}; {args.draws} draws per size "
        f"of the {items.human.size:,} items; coverage of the 95% intervals"
    )
    head = (
        f"{'n':>4} {'quantity':15s} {'PPI++ coverage':>15s} {'human-only':>10s} "
        f"{'PPI++ width':>13s} {'human width':>11s} {'eff. n gain':>13s} "
        f"{'zero':>4} {'outside':>7} {'collapsed':>9} {'by query':>8}"
    )
    print(head)
    worst: dict[str, dict[int, float]] = {"PPI++": {}, "human-only": {}}
    for n in sizes:
        for name in MEANS:
            cells = [found[(judge, n)][name] for judge in graded]
            ppi = [c.ppi_hits / args.draws for c in cells]
            human = cells[0].human_hits / args.draws
            widths = [c.ppi_width for c in cells]
            gains = [c.gain for c in cells]
            worst["PPI++"][n] = min(worst["PPI++"].get(n, 1.0), min(ppi))
            worst["human-only"][n] = min(worst["human-only"].get(n, 1.0), human)
            print(
                f"{n:4d} {name:15s} {min(ppi):7.3f}-{max(ppi):.3f} {human:10.3f} "
                f"{min(widths):6.3f}-{max(widths):.3f} {cells[0].human_width:11.3f} "
                f"{min(gains):+6.1f}-{max(gains):+.1f} {sum(c.zero for c in cells):4d} "
                f"{sum(c.outside for c in cells):7d} {sum(c.collapsed for c in cells):9d} "
                f"{sum(c.by_query for c in cells):8d}"
            )
    for way, by_size in worst.items():
        start = holds_from(sizes, by_size, args.bar)
        lowest = min(by_size.values())
        print(
            f"{way}: every coverage >= {args.bar} from n = {start} on; lowest "
            f"{lowest:.3f} (n = {min(by_size, key=lambda k: by_size[k])})"
        )
    print(
        f"{time.perf_counter() - started:.0f} s on {os.cpu_count()} cores; load average "
        f"{load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
