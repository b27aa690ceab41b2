"""The fewest people's grades any design that weights grades by 1/π could need, against the
uniform race's, for each pair of the LLMJudge judges (``race.labels=ask``,
:mod:`mmjudge.studies.race_labels`).

For a pair's κ difference, an item's term is ψ (the difference of the two κ's influences at
its person grade and its two judge grades). With items asked with probability π, the
grades needed for a given interval scale as E[π] · E[ψ²/π]; the least, at π ∝ s (s the
root-mean-square ψ of the item's two judge grades, over the person grades seen with them),
is (E s)², against E ψ² with every grade (the uniform race). The ratio is printed per pair
with the share of items the two grade differently, computed on every item both graded.

    python benchmarks/race_labels_bound.py      # ../shared/data/llmjudge
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmjudge.studies.race_labels import influence
from mmjudge.studies.race_pairs import grade_codes
from mmjudge.studies.race_simulation import full_data_choice

sys.path.insert(0, str(Path(__file__).resolve().parent))
from race import DATA, SCALE, load


def least_share(human: np.ndarray, first: np.ndarray, second: np.ndarray) -> float:
    """(E s)² / E ψ² for one pair (grades as codes 0..3)."""
    k = len(SCALE)
    counts = np.zeros((k, k, k))
    np.add.at(counts, (human, first, second), 1.0)
    phi = influence(np.stack([counts.sum(axis=2), counts.sum(axis=1)]))
    psi = phi[0][:, :, None] - phi[1][:, None, :]
    given = counts / np.maximum(counts.sum(axis=0, keepdims=True), 1.0)
    s = np.sqrt((given * psi**2).sum(axis=0))[first, second]
    return float(np.mean(s) ** 2 / np.mean(psi[human, first, second] ** 2))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with runs/ and qrels")
    args = parser.parse_args(argv)
    if not (args.data / "test_qrels_human.txt").exists():
        print(f"no LLMJudge data at {args.data} (runs/*.txt and test_qrels_human.txt)")
        return 2
    print(
        "$ python benchmarks/race_labels_bound.py "
        + " ".join(sys.argv[1:] if argv is None else argv)
    )
    c = load(args.data)
    kappas, _ = full_data_choice(c.human, c.judges, [1.0] * len(c.names), scale=SCALE, delta=0.0)
    human, judges = grade_codes(c.human, SCALE), grade_codes(c.judges, SCALE)
    ranked = np.argsort(-kappas).tolist()
    print(f"{'pair (by κ on all items)':<62} {'differ':>6} {'least grades / uniform':>23}")
    found = []
    for i, j in itertools.combinations(ranked, 2):
        both = (human >= 0) & (judges[i] >= 0) & (judges[j] >= 0)
        share = least_share(human[both], judges[i][both], judges[j][both])
        found.append(share)
        differ = np.mean(judges[i][both] != judges[j][both])
        pair = f"{c.names[i]} ({kappas[i]:.3f}) vs {c.names[j]} ({kappas[j]:.3f})"
        print(f"{pair:<62} {differ:>6.0%} {share:>23.0%}")
    print(f"all {len(found)} pairs: {min(found):.0%} to {max(found):.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
