"""The guarantee of races with people's grades asked (``race.labels=ask``) on the near-tied
stress populations of ``tests/studies/near_ties.py``, on more seeds than the tests race: the
races whose choice is more than δ below the full data's best, per setting and in all, beside
the one-sided allowance (the 99.5% quantile of Binomial(races, α)) and α itself.

    python benchmarks/race_labels_guarantee.py --seeds 500
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.studies.near_ties import ALPHA, differing_failures, population_failures


def _print(title: str, found: dict[tuple[object, ...], int], seeds: int) -> None:
    allowed = int(stats.binom.ppf(0.995, seeds, ALPHA))
    print(f"{title} ({seeds} races per setting; allowance {allowed}, α·races {ALPHA * seeds:g})")
    for setting, failed in found.items():
        print(f"    {setting!s:<28} {failed:>4} ({failed / seeds:.1%})")
    total, races = sum(found.values()), seeds * len(found)
    pooled = int(stats.binom.ppf(0.995, races, ALPHA))
    share = f"{total / races:.1%}"
    print(f"    {'all settings':<28} {total:>4} of {races:,} ({share}; allowance {pooled})")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=500, help="races per setting")
    args = parser.parse_args(argv)
    print(
        "$ python benchmarks/race_labels_guarantee.py "
        + " ".join(sys.argv[1:] if argv is None else argv)
    )
    for name in ("degraded", "flipped"):
        _print(
            f"{name} copy: (δ, round items, copy listed first)",
            dict(population_failures(name, "ask", args.seeds)),
            args.seeds,
        )
    _print(
        "differing grade distributions, δ = 0.02: (round items, order listed)",
        dict(differing_failures(args.seeds)),
        args.seeds,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
