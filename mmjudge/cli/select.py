"""How good is the prompt (or model × prompt) you would pick, on items you did not pick it on?

    mmjudge select SWEEP_DIR [--dataset D] [--model M] [--baseline RUN_OR_PROMPT]
                 [--splits 200] [--seed 0] [--format table|json]

Every completed real run on a dataset is a candidate (panels and cascades are not; with
``--model``, only that model's runs, to choose a prompt for it). The
queries are split at random into two halves; the candidate with the highest κ on the first
half is *chosen* and then scored on the second half, which played no part in choosing it.
Repeated over ``--splits`` random splits, this reports:

- the chosen candidate's mean κ on the held-out half, beside its mean κ on the half it was
  chosen on (the difference is the *optimism* of reporting the winner's own score);
- the expected *regret*: the best held-out κ of any candidate minus the chosen one's;
- how often the chosen candidate beats the baseline on the held-out half (and how often the
  baseline itself was chosen);
- how often each candidate is chosen.

κ is Cohen's unweighted κ against the annotators' consensus (as in ``summary.json``) on the
items every candidate has a row for; a candidate's missing labels are left out of its own κ.
Splits are by query, so results of one query stay together. A winner's κ on the items it was
chosen on is never shown as what to expect from it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from mmjudge.cli.exits import fail
from mmjudge.display import number
from mmjudge.errors import MMJudgeError
from mmjudge.store import completed_runs
from mmjudge.studies.selection import SelectionStudy, select

PROG = "mmjudge select"


def _fmt(value: float | None, sign: bool = False) -> str:
    return number(value, sign=sign)


def _scale(r: SelectionStudy) -> str:
    """Chance and the human–human κ, beside the held-out κ."""
    humans = r.human_kappa
    if not humans:
        return "chance 0.000, humans – (fewer than two annotators)"
    if humans.low == humans.high:
        return f"chance 0.000, humans {_fmt(humans.low)}"
    return f"chance 0.000, humans {_fmt(humans.low)}–{_fmt(humans.high)}"


def _chance_line(r: SelectionStudy) -> list[str]:
    """A warning when the chosen candidate is at or below chance on some held-out halves."""
    rate = r.at_chance_rate
    if not rate:
        return []
    return [
        f"  not above chance: the chosen candidate's held-out κ is 0 or below (chance) in "
        f"{rate:.1%} of splits"
    ]


def format_table(results: Sequence[SelectionStudy]) -> str:
    """Plain text, one block per dataset."""
    out: list[str] = []
    for r in results:
        low_high = r.held_out_kappa_range
        spread = f" (90% of splits in [{low_high[0]:.3f}, {low_high[1]:.3f}])" if low_high else ""
        out += [
            f"{r.dataset}: {r.n_candidates} candidates, {r.n_queries} queries, "
            f"{r.n_items} items; {r.splits} random halvings of the queries "
            f"(seed {r.seed})",
            "The candidate with the best κ on one half is chosen, then scored on the other half.",
            f"  held-out κ of the chosen candidate   {_fmt(r.held_out_kappa)}{spread}; {_scale(r)}",
            *_chance_line(r),
            f"  its κ on the half it was chosen on   {_fmt(r.selection_kappa)} "
            f"(optimism {_fmt(r.optimism, sign=True)})",
            f"  expected regret                      {_fmt(r.expected_regret)} "
            "(best held-out κ of any candidate minus the chosen one's)",
        ]
        base = r.baseline
        if base is None:
            out.append("  baseline                             none (name one with --baseline)")
        else:
            out.append(
                f"  beats the baseline {base.name} on the held-out half in "
                f"{base.beaten_rate:.1%} of splits (mean gain "
                f"{_fmt(base.mean_gain, sign=True)}; the baseline itself chosen in "
                f"{base.chosen_rate:.1%})"
            )
        header = ["candidate", "chosen", "held-out κ when chosen", "κ on a random half"]
        body = [
            [
                c.name,
                f"{c.chosen_rate:.1%}",
                _fmt(c.held_out_kappa_when_chosen),
                _fmt(c.mean_half_kappa),
            ]
            for c in r.candidates
        ]
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
        out.append("")
        for row in [header, ["-" * w for w in widths], *body]:
            cells = [row[0].ljust(widths[0])] + [
                cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)
            ]
            out.append("  ".join(cells).rstrip())
        out.append("")
    return "\n".join(out)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Choose a prompt (or model × prompt) on half of the queries and score it on the "
            "other half, over many random halvings."
        ),
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR", type=Path, help="a sweep (or results) dir")
    p.add_argument("--dataset", help="only this dataset (default: each dataset found)")
    p.add_argument("--model", help="only this model's runs (choose a prompt for it)")
    p.add_argument(
        "--baseline",
        help="run directory, model/prompt/modality, prompt id or model to compare against "
        "(default: the run with prompt 'default' when there is exactly one)",
    )
    p.add_argument("--splits", type=int, default=200, help="random halvings (default 200)")
    p.add_argument("--seed", type=int, default=0, help="seed for the halvings")
    p.add_argument("--format", choices=("table", "json"), default="table")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        runs = completed_runs(Path(args.sweep_dir), include_virtual=False)
        if not runs:
            raise MMJudgeError(f"{args.sweep_dir}: no completed runs below it")
        results = select(
            runs,
            dataset=args.dataset,
            model=args.model,
            baseline=args.baseline,
            splits=args.splits,
            seed=args.seed,
        )
    except MMJudgeError as error:
        return fail(PROG, error)
    if args.format == "json":
        sys.stdout.write(
            json.dumps({"datasets": [dataclasses.asdict(r) for r in results]}, indent=2) + "\n"
        )
    else:
        sys.stdout.write(format_table(results))
    return 0
