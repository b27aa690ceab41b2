"""The cheapest judge that is as good as the best one, per dataset.

    python -m mmjudge.frontier SWEEP_DIR [--n-boot 1000] [--seed 0] [--level 0.95]
                               [--format table|json]

For each dataset under SWEEP_DIR:

1. the *best single judge*: the real run (any model × prompt × modality) with the highest
   Cohen's κ against the annotators' consensus on the items it graded, printed with its
   interval and its α exactly as the report and ``summary.json`` give them;
2. every candidate (real runs, panels and cascades, the best included) is compared with it
   on the items both graded, by :func:`~mmjudge.agreement.scoring.compare_judges`, the
   function behind the report's comparisons: κ of both on those shared items,
   Δκ = κ(best) − κ(candidate) with its paired query-bootstrap interval and p-value. A
   candidate whose interval reaches 0 or below is *not distinguishably worse* than the best;
3. the answer is the cheapest such candidate by $ per million judgments (ties: the higher
   κ, then the name). The best judge always qualifies, so there is always an answer.

Every κ printed says which items it is on. The best judge is picked on the very items it is
scored on, so its κ flatters it; ``python -m mmjudge.select`` estimates what choosing costs
on held-out queries.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmjudge.agreement import scoring
from mmjudge.agreement.members import human_consensus
from mmjudge.errors import MMJudgeError
from mmjudge.runs import Key, SavedRun, common_keys, completed_runs

PROG = "python -m mmjudge.frontier"
OPTIMISM_NOTE = (
    "the best judge is picked on the items it is scored on, so its κ is optimistic; "
    "see python -m mmjudge.select for held-out estimates"
)


def _queries(keys: Sequence[Key]) -> np.ndarray:
    return np.array([key[0] for key in keys], dtype=object)


def own_score(run: SavedRun, *, n_boot: int, seed: int, level: float) -> scoring.JudgeScore:
    """A run against the consensus on the items it graded (as in its summary and the
    report)."""
    keys = list(run.rows)
    return scoring.score_judge(
        _queries(keys),
        human_consensus([run], keys),
        run.labels(keys),
        run.grades,
        relevant_from=run.relevant_from,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )


def compare_runs(
    best: SavedRun, other: SavedRun, *, n_boot: int, seed: int, level: float
) -> scoring.PairedComparison | None:
    """``best`` against ``other`` on the items both graded (``None`` without any)."""
    keys = common_keys([best, other])
    return scoring.compare_judges(
        _queries(keys),
        human_consensus([best, other], keys),
        best.labels(keys),
        other.labels(keys),
        best.grades,
        n_boot=n_boot,
        seed=seed,
        level=level,
    )


def _comparison_entry(found: scoring.PairedComparison | None) -> dict[str, Any]:
    if found is None:
        return {"n_items": 0, "n_queries": 0, "kappa_best": None, "kappa": None, "difference": None}
    values = found.as_dict()
    return {
        "n_items": found.n_items,
        "n_queries": found.n_queries,
        "kappa_best": values["kappa_a"],
        "kappa": values["kappa_b"],
        "difference": {
            "estimate": values["difference"],
            "low": values["low"],
            "high": values["high"],
            "p_value": values["p_value"],
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
    singles = [run for run in runs if run.kind == "single"]
    scored = []
    for run in singles:
        value = own_score(run, n_boot=0, seed=seed, level=level).kappa.estimate
        if not math.isnan(value):
            scored.append((value, run))
    if not scored:
        return None
    _, best = max(scored, key=lambda pair: (pair[0], -pair[1].usd_per_million))
    best_score = own_score(best, n_boot=n_boot, seed=seed, level=level)
    candidates = []
    for run in runs:
        comparison = _comparison_entry(
            compare_runs(best, run, n_boot=n_boot, seed=seed, level=level)
        )
        difference = comparison.get("difference")
        low = None if difference is None else difference.get("low")
        qualifies = run is best or (low is not None and low <= 0.0)
        candidates.append({**_entry(run), **comparison, "qualifies": qualifies})
    qualifying = [c for c in candidates if c["qualifies"]]
    answer = min(
        qualifying,
        key=lambda c: (c["usd_per_million"], -(c["kappa"] or -2.0), c["name"]),
    )
    return {
        "dataset": runs[0].summary.cell.dataset,
        "best": {
            **_entry(best),
            "kappa": best_score.kappa.as_dict(),
            "alpha": scoring.none_if_nan(best_score.alpha),
            "n_items": best_score.n_items,
            "n_queries": best_score.n_queries,
        },
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
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    level: float = scoring.LEVEL,
    dataset: str | None = None,
) -> list[dict[str, Any]]:
    """Per dataset: the best single judge and the cheapest judge, panel or cascade not
    distinguishably worse (see the module docstring). One dict per dataset with ``best``
    (κ with its interval on its ``n_items`` items), ``answer`` (κ of both on the
    ``n_items`` items it shares with the best, the paired interval of the difference and
    its p-value, $ per million) and every ``candidates`` entry checked, in the same form."""
    by_dataset: dict[str, list[SavedRun]] = {}
    for run in sorted(completed_runs(Path(sweep_dir)), key=lambda r: r.name):
        by_dataset.setdefault(run.summary.cell.dataset, []).append(run)
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


def _p(value: float | None) -> str:
    if value is None:
        return "-"
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def format_table(answers: Sequence[dict[str, Any]]) -> str:
    out: list[str] = []
    for a in answers:
        best, answer = a["best"], a["answer"]
        pct = f"{a['level'] * 100:g}%"
        difference = answer.get("difference") or {}
        out += [
            f"{a['dataset']}:",
            f"  best single judge   {best['name']}  κ {_interval(best['kappa'])} ({pct} "
            f"interval), α {_fmt(best['alpha'])} on its {best['n_items']} items  "
            f"${best['usd_per_million']:,.2f} per million",
            f"  cheapest as good    {answer['name']} ({answer['kind']})  "
            f"${answer['usd_per_million']:,.2f} per million",
            f"    on the {answer['n_items']} items both graded: κ(best) "
            f"{_fmt(answer.get('kappa_best'))}, κ {_fmt(answer.get('kappa'))}",
            f"    κ(best) − κ: {_interval(difference)}, p {_p(difference.get('p_value'))} "
            f"({pct} interval, paired bootstrap over {answer['n_queries']} queries)",
            f"  note: {a['note']}",
            "",
        ]
        out += _candidate_table(a["candidates"], pct)
        out.append("")
    return "\n".join(out)


def _candidate_table(candidates: Sequence[dict[str, Any]], pct: str) -> list[str]:
    """One line per candidate; every κ on the items it shares with the best judge."""
    header = [
        "candidate",
        "kind",
        "$/million",
        "shared items",
        "κ(best)",
        "κ",
        f"κ(best) − κ [{pct}]",
        "p",
        "as good",
    ]
    body = [
        [
            c["name"],
            c["kind"],
            f"{c['usd_per_million']:,.2f}",
            str(c["n_items"]),
            _fmt(c.get("kappa_best")),
            _fmt(c.get("kappa")),
            _interval(c.get("difference")),
            _p((c.get("difference") or {}).get("p_value")),
            "yes" if c["qualifies"] else "no",
        ]
        for c in candidates
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = []
    for row in [header, ["-" * w for w in widths], *body]:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + [
            cell.rjust(width) for cell, width in zip(row[2:], widths[2:], strict=True)
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


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
