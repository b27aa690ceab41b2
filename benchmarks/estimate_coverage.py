"""Coverage of mmjudge's prediction-powered intervals on the LLMJudge label files.

The human qrels are the truth. One participant's labels are the judge; the other participants'
files become retrieval systems (each ranks a query's passages by that file's grade plus seeded
noise: the shared data has no system runs). For each of ``--draws`` random labelled subsets of
``--labelled`` items, every quantity is estimated as ``mmjudge estimate`` does, and the share
of 95% intervals holding the value on all human labels is printed (prediction-powered, and
human-only beside it) with the median interval widths, and in how many draws the mean grade
and the share relevant were estimated per query (``mmjudge.estimation.strata``'s rule).

With ``--copies K`` the collection is K copies of every item and there are no systems: a draw
of a few thousand labels is then a small share of it, so the intervals lose the
conservatism of drawing a large share of a small collection without replacement, and the
coverage of the mean grade and the share relevant is measured as on a large collection.

With ``--draw disagreement`` the labelled items are drawn as ``mmjudge plan --next`` draws
them (favouring items the judge and two other files grade differently) and weighed by their
inclusion probabilities, as ``mmjudge estimate --sample`` weighs them.

With ``--pool-systems`` each system's nDCG@10 and P@10 are estimated over all items at once
instead of in the system's top tens and outside them apart: the estimate before that split,
for comparison.

    python benchmarks/estimate_coverage.py
    python benchmarks/estimate_coverage.py --judge RMITIR-llama70B --labelled 500 --draws 300
    python benchmarks/estimate_coverage.py --labelled 500 --pool-systems
    python benchmarks/estimate_coverage.py --labelled 500 --draw disagreement
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from mmjudge.data.qrels import read_qrels
from mmjudge.estimation import next_items, prediction

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "llmjudge"


def setup(judge: str, copies: int = 0) -> tuple[prediction.ItemLabels, prediction.Design]:
    """The human labels as the truth, ``judge``'s file as the judge (clipped to 0-3) and the
    other files as retrieval systems (grade plus seeded noise); with ``copies``, that many
    copies of every item in its own query and no systems."""
    human = read_qrels(DATA / "test_qrels_human.txt")
    files = {path.stem: read_qrels(path) for path in sorted((DATA / "runs").glob("*.txt"))}
    items = prediction.shared_items(human, files[judge])
    items = items._replace(judge=np.clip(items.judge, 0, 3))
    if copies:
        many = prediction.ItemLabels(
            items.queries * copies,
            [f"{doc}#{k}" for k in range(copies) for doc in items.docs],
            np.tile(items.human, copies),
            np.tile(items.judge, copies),
        )
        return many, prediction.prepare(many, None, [0, 1, 2, 3], 2)
    rng = np.random.default_rng(1)
    systems = {
        f"by-{name}": {
            q: {d: float(min(max(g, 0), 3)) + 1.5 * rng.random() for d, g in docs.items()}
            for q, docs in qrels.items()
        }
        for name, qrels in files.items()
        if name != judge
    }
    return items, prediction.prepare(items, systems, [0, 1, 2, 3], 2)


class Draws(NamedTuple):
    """What a coverage benchmark draws from: its command line, the items and the design, and
    each quantity's value on all the human labels (the truth the intervals should contain)."""

    args: argparse.Namespace
    items: prediction.ItemLabels
    design: prediction.Design
    truth: dict[str, float]


def draws_from_command_line(
    description: str, labelled: int, extra: Callable[[argparse.ArgumentParser], None] | None = None
) -> Draws | None:
    """The shared command line (``--judge``, ``--labelled``, ``--draws``, ``--copies``, and
    what ``extra`` adds) read and the LLMJudge files set up; None, said on stderr, when the
    files are absent."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--judge", default="Olz-gpt4o")
    p.add_argument("--labelled", type=int, default=labelled)
    p.add_argument("--draws", type=int, default=1000)
    p.add_argument("--copies", type=int, default=0)
    if extra is not None:
        extra(p)
    args = p.parse_args()
    if not (DATA / "test_qrels_human.txt").is_file():
        print(f"no LLMJudge files at {DATA}", file=sys.stderr)
        return None
    items, design = setup(args.judge, args.copies)
    return Draws(args, items, design, prediction.exact_values(design, items.human))


#: The other label files whose disagreement with the judge steers ``--draw disagreement``.
DISAGREEING = ("RMITIR-llama70B", "TREMA-direct", "h2oloo-fewself")


def _own_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pool-systems",
        action="store_true",
        help="estimate the system measures over all items at once, as before they were "
        "split by their top tens (for comparison)",
    )
    p.add_argument(
        "--draw",
        choices=("random", "disagreement"),
        default="random",
        help="random: a simple random sample (as mmjudge estimate --labelled); disagreement: "
        "mmjudge plan --next's draw by the disagreement of the judge and two other files, "
        "each labelled item weighed by its inclusion probability (as mmjudge estimate --sample)",
    )


class Drawer:
    """Labelled subsets as ``--draw`` asks: a mask and, for a draw by disagreement, each
    labelled item's inclusion probability."""

    def __init__(self, items: prediction.ItemLabels, judge: str, how: str) -> None:
        self.items, self.how = items, how
        self.keys = list(zip(items.queries, items.docs, strict=True))
        self.row = {key: i for i, key in enumerate(self.keys)}
        if how == "random":  # the other files are read only to draw by disagreement
            return
        others = [name for name in DISAGREEING if name != judge][:2]
        self.grades = np.column_stack(
            [items.judge]
            + [
                [min(max(float(qrels[q][d]), 0.0), 3.0) for q, d in self.keys]
                for qrels in (read_qrels(DATA / "runs" / f"{name}.txt") for name in others)
            ]
        )

    def draw(self, n: int, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
        if self.how == "random":
            return prediction.draw_labelled(self.items.human.size, n, seed), None
        drawn = next_items.draw_next(self.keys, self.grades, n, seed)
        mask = np.zeros(len(self.keys), dtype=bool)
        chance = np.zeros(len(self.keys))
        for key, p in zip(drawn.keys, drawn.probabilities, strict=True):
            mask[self.row[key]], chance[self.row[key]] = True, p
        return mask, chance[mask]


def main() -> int:
    found = draws_from_command_line(__doc__.splitlines()[0], labelled=2000, extra=_own_flags)
    if found is None:
        return 1
    args, items, design, truth = found
    drawer = Drawer(items, args.judge, args.draw)
    hits: dict[str, list[bool]] = {}
    alone: dict[str, list[bool]] = {}
    per_query = 0
    widths: dict[str, list[tuple[float, float]]] = {}
    for seed in range(args.draws):
        mask, chances = drawer.draw(args.labelled, seed)
        if args.pool_systems:
            columns = prediction.build_columns(
                design, prediction.pilot(design, items.human, items.judge, mask)
            )
            found = prediction.estimate_columns(
                columns, items, mask, probabilities=chances, queries=design.codes
            )
        else:
            found = prediction.estimate(design, items, mask, probabilities=chances)
        per_query += found[0].strata > 1
        for e in found:
            hits.setdefault(e.name, []).append(e.ppi[1] <= truth[e.name] <= e.ppi[2])
            alone.setdefault(e.name, []).append(e.human_only[1] <= truth[e.name] <= e.human_only[2])
            widths.setdefault(e.name, []).append(
                (e.human_only[2] - e.human_only[1], e.ppi[2] - e.ppi[1])
            )
    r = np.corrcoef(items.human, items.judge)[0, 1]
    print(
        f"judge {args.judge} (r = {r:.2f} with the humans), {args.labelled} of "
        f"{items.human.size} items labelled ({args.draw}), {args.draws} draws; mean grade and "
        f"share relevant per query in {per_query}"
    )
    print(f"{'':34s} {'coverage':>17s} {'median width':>18s}")
    print(f"{'quantity':34s} {'PPI++':>7s} {'human':>9s} {'human-only':>10s} {'PPI++':>7s}")
    for name, hit in hits.items():
        h, w = np.median(np.asarray(widths[name]), axis=0)
        print(f"{name:34s} {np.mean(hit):7.3f} {np.mean(alone[name]):9.3f} {h:10.3f} {w:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
