"""The cheapest judge that is as good as the best one, per dataset.

    python -m mmjudge.frontier SWEEP_DIR [--n-boot 1000] [--seed 0] [--level 0.95]
                               [--format table|json]

For each dataset under SWEEP_DIR:

1. the *best single judge*: the real run (any model × prompt × modality) with the highest
   Cohen's κ against the annotators' consensus;
2. every candidate (real runs, panels and cascades, the best included) is compared with it
   by a paired bootstrap over queries on the items both label: the interval of
   κ(best) − κ(candidate). A candidate whose interval reaches 0 or below is *not
   distinguishably worse* than the best;
3. the answer is the cheapest such candidate by $ per million judgments (ties: the higher
   κ, then the name). The best judge always qualifies, so there is always an answer.

Both κ are printed with their bootstrap intervals on the common items, with the interval of
the difference and the $ per million of each. The best judge is picked on the very items it
is scored on, so its κ flatters it; ``python -m mmjudge.select`` estimates what choosing
costs on held-out queries.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge import metrics
from mmjudge.errors import MMJudgeError
from mmjudge.panels import SavedRun, common_keys, completed_runs, human_consensus

PROG = "python -m mmjudge.frontier"
OPTIMISM_NOTE = (
    "the best judge is picked on the items it is scored on, so its κ is optimistic; "
    "see python -m mmjudge.select for held-out estimates"
)


def _none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _compare(
    best: SavedRun,
    other: SavedRun,
    grades: list[int],
    *,
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, Any]:
    """κ of both on the items both label, with intervals, and the paired difference."""
    runs = [best, other]
    keys = common_keys(runs)
    human = human_consensus(runs, keys)
    a, b = best.labels(keys), other.labels(keys)
    keep = ~(np.isnan(human) | np.isnan(a) | np.isnan(b))
    human, a, b = human[keep], a[keep], b[keep]
    queries = np.array([key[0] for key, ok in zip(keys, keep, strict=True) if ok], dtype=object)
    kappa = functools.partial(metrics.cohen_kappa, labels=grades)
    out: dict[str, Any] = {"n_items": int(keep.sum()), "n_queries": len(set(queries.tolist()))}
    if not keep.any():
        return out | {"kappa_best": None, "kappa": None, "difference": None}
    ci_best = metrics.bootstrap_ci(kappa, queries, human, a, n_boot=n_boot, seed=seed, level=level)
    ci_other = metrics.bootstrap_ci(kappa, queries, human, b, n_boot=n_boot, seed=seed, level=level)
    paired = metrics.paired_bootstrap(
        kappa, queries, human, a, b, n_boot=n_boot, seed=seed, level=level
    )
    return out | {
        "kappa_best": {
            "estimate": _none(ci_best.estimate),
            "low": _none(ci_best.low),
            "high": _none(ci_best.high),
        },
        "kappa": {
            "estimate": _none(ci_other.estimate),
            "low": _none(ci_other.low),
            "high": _none(ci_other.high),
        },
        "difference": {
            "estimate": _none(paired.difference),
            "low": _none(paired.low),
            "high": _none(paired.high),
            "p_value": _none(paired.p_value),
        },
    }


def _entry(run: SavedRun) -> dict[str, Any]:
    return {
        "name": run.name,
        "kind": run.kind,
        "run_dir": str(run.run_dir),
        "usd_per_million": run.usd_per_million,
    }


def _dataset_answer(
    runs: Sequence[SavedRun], *, n_boot: int, seed: int, level: float
) -> dict[str, Any] | None:
    grades = runs[0].grades
    singles = [run for run in runs if run.kind == "single"]
    scored = []
    for run in singles:
        keys = list(run.rows)
        value = metrics.cohen_kappa(human_consensus([run], keys), run.labels(keys), grades)
        if not math.isnan(value):
            scored.append((value, run))
    if not scored:
        return None
    best_kappa, best = max(scored, key=lambda pair: (pair[0], -pair[1].usd_per_million))
    candidates = []
    for run in runs:
        comparison = _compare(best, run, grades, n_boot=n_boot, seed=seed, level=level)
        difference = comparison.get("difference")
        low = None if difference is None else difference.get("low")
        qualifies = run is best or (low is not None and low <= 0.0)
        candidates.append({**_entry(run), **comparison, "qualifies": qualifies})
    qualifying = [c for c in candidates if c["qualifies"]]
    answer = min(
        qualifying,
        key=lambda c: (
            c["usd_per_million"],
            -((c.get("kappa") or {}).get("estimate") or -2.0),
            c["name"],
        ),
    )
    return {
        "dataset": runs[0].summary.get("dataset"),
        "best": {**_entry(best), "kappa": best_kappa},
        "answer": answer,
        "candidates": sorted(candidates, key=lambda c: (c["usd_per_million"], c["name"])),
        "n_boot": n_boot,
        "seed": seed,
        "level": level,
        "note": OPTIMISM_NOTE,
    }


def frontier_answer(
    sweep_dir: Path,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    dataset: str | None = None,
) -> list[dict[str, Any]]:
    """Per dataset: the best single judge and the cheapest judge, panel or cascade not
    distinguishably worse (see the module docstring). One dict per dataset with ``best``,
    ``answer`` (κ and interval on the items it shares with the best, the interval of the
    difference, $ per million) and every ``candidates`` entry checked."""
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(completed_runs(Path(sweep_dir)), key=lambda r: r.name):
        by_dataset.setdefault(str(run.summary.get("dataset")), []).append(run)
    if dataset is not None:
        by_dataset = {k: v for k, v in by_dataset.items() if k == dataset}
    out = []
    for name in sorted(by_dataset):
        found = _dataset_answer(by_dataset[name], n_boot=n_boot, seed=seed, level=level)
        if found is not None:
            out.append(found)
    return out


# --------------------------------------------------------------------------- output


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _interval(value: dict[str, Any] | None) -> str:
    if not value or value.get("estimate") is None:
        return "-"
    if value.get("low") is None:
        return _fmt(value["estimate"])
    return f"{_fmt(value['estimate'])} [{_fmt(value['low'])}, {_fmt(value['high'])}]"


def format_table(answers: Sequence[dict[str, Any]]) -> str:
    out: list[str] = []
    for a in answers:
        best, answer = a["best"], a["answer"]
        pct = f"{a['level'] * 100:g}%"
        out += [
            f"{a['dataset']}:",
            f"  best single judge   {best['name']}  κ={_fmt(best['kappa'])}  "
            f"${best['usd_per_million']:,.2f} per million",
            f"  cheapest as good    {answer['name']} ({answer['kind']})  "
            f"${answer['usd_per_million']:,.2f} per million",
            f"    on the {answer['n_items']} items both label: κ(best) "
            f"{_interval(answer.get('kappa_best'))}, κ {_interval(answer.get('kappa'))}",
            f"    κ(best) − κ: {_interval(answer.get('difference'))} ({pct} interval, paired "
            f"bootstrap over {answer['n_queries']} queries)",
            f"  note: {a['note']}",
            "",
        ]
        header = ["candidate", "kind", "$/million", "κ", f"κ(best) − κ [{pct}]", "as good"]
        body = [
            [
                c["name"],
                c["kind"],
                f"{c['usd_per_million']:,.2f}",
                _fmt((c.get("kappa") or {}).get("estimate")),
                _interval(c.get("difference")),
                "yes" if c["qualifies"] else "no",
            ]
            for c in a["candidates"]
        ]
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
        for row in [header, ["-" * w for w in widths], *body]:
            cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + [
                cell.rjust(width) for cell, width in zip(row[2:], widths[2:], strict=True)
            ]
            out.append("  " + "  ".join(cells).rstrip())
        out.append("")
    return "\n".join(out)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Per dataset: the best single judge, and the cheapest judge, panel or "
        "cascade whose κ is not distinguishably lower.",
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR", type=Path, help="a sweep (or results) dir")
    p.add_argument("--dataset", help="only this dataset")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--level", type=float, default=0.95, help="interval coverage (default 0.95)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.n_boot < 1:
            raise MMJudgeError(f"--n-boot must be at least 1, got {args.n_boot}")
        if not 0.0 < args.level < 1.0:
            raise MMJudgeError(f"--level must lie between 0 and 1, got {args.level}")
        answers = frontier_answer(
            args.sweep_dir,
            n_boot=args.n_boot,
            seed=args.seed,
            level=args.level,
            dataset=args.dataset,
        )
        if not answers:
            raise MMJudgeError(f"{args.sweep_dir}: no completed run with a defined κ below it")
    except MMJudgeError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    if args.format == "json":
        sys.stdout.write(json.dumps({"datasets": answers}, indent=2) + "\n")
    else:
        sys.stdout.write(format_table(answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
