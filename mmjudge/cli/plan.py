"""How many human labels would settle a judge's κ, and the choice between the best two.

    mmjudge plan SWEEP_DIR [--halfwidth 0.05] [--cost-per-label USD] [--budget USD]
                 [--pool N] [--next N --out FILE] [--n-boot 1000] [--seed 0]
                 [--format table|json]

A finished sweep is the pilot. Per dataset, for every single judge: the labelled items (and
queries, at the pilot's items per query) needed to know its κ to ± ``--halfwidth`` at 95%,
from the pilot's jackknife interval over queries (Student's t on the queries' effective
degrees of freedom) with the spread widened to its upper 95% bound, the count from the
spread itself and the count the analytic standard error of κ gives (items taken as
independent) beside it; and the items needed for the paired interval of κ(best) −
κ(runner-up) to exclude 0. A pilot too small to plan from (too few queries or labels, human
grades that do not vary) is refused in one line that says what pilot would do. With
``--cost-per-label``, the price of the labels beyond the pilot's, beside each judge's
dollars per million judgments. With ``--budget``, how to split it between human labels and
labels only the judge gives, for the narrowest prediction-powered interval of the mean grade
(``ppi_py.ppi_mean_power``, the judge's price per label from its ledger), and the human-only
sample size it is worth. With ``--next N --out FILE``, N items per dataset that no person has
graded yet, drawn with known inclusion probabilities (:mod:`mmjudge.estimation.next_items`),
written as a review file for ``mmjudge review import``, with a column
``inclusion_probability`` that ``mmjudge estimate --sample`` weights by. The method is
:mod:`mmjudge.estimation.planning`. On the folder of a race that asked people for grades as it
went (``race.labels=ask``) over a dataset without grades, the command refuses in one line: its
counts come from a uniformly drawn pilot, and the asked grades over-represent the judges'
disagreements (:func:`mmjudge.studies.reference_grades.uniform_pilot`).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from mmjudge.api.review import item_rows
from mmjudge.api.score_files import aligned_columns
from mmjudge.cli.exits import fail
from mmjudge.display import MISSING, number, percent, price, usd
from mmjudge.errors import MMJudgeError
from mmjudge.estimation.planning import draw_unlabelled, plan_sweep
from mmjudge.store import SavedRun, completed_runs
from mmjudge.store.plan_file import (
    DatasetPlan,
    JudgePlan,
    LabelPlan,
    SeparationEntry,
    plan_json,
)
from mmjudge.store.review_file import Draw, ReviewRow, write_review
from mmjudge.studies.disagreements import Candidate
from mmjudge.studies.reference_grades import uniform_pilot

PROG = "mmjudge plan"


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Human labels needed per dataset to know each judge's κ to ± a "
        "half-width and to tell the best judge from the runner-up, from a finished sweep.",
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR", type=Path, help="a finished sweep")
    p.add_argument(
        "--halfwidth",
        type=_positive,
        default=0.05,
        help="the half-width of κ's 95%% interval to plan for (default 0.05)",
    )
    p.add_argument(
        "--cost-per-label",
        type=_positive,
        default=None,
        metavar="USD",
        help="what one human label costs: the labels to add are then priced",
    )
    p.add_argument(
        "--budget",
        type=_positive,
        default=None,
        metavar="USD",
        help="a budget to split between human and judge labels for the narrowest interval "
        "of the mean grade (needs --cost-per-label; the judge's price is its ledger's)",
    )
    p.add_argument(
        "--pool",
        type=int,
        default=None,
        metavar="N",
        help="with --budget: how many items there are to label at most (default: no limit)",
    )
    p.add_argument(
        "--next",
        type=int,
        default=None,
        metavar="N",
        help="also draw N unlabelled items per dataset for people to label (needs --out)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --next: the review file to write (.csv or .jsonl; `mmjudge review import` "
        "reads it back)",
    )
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap and of the --next draw"
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    return p


def _n(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.0f}"


def _f(value: float | None) -> str:
    return number(value)


def format_table(plans: Sequence[DatasetPlan]) -> str:
    """Per dataset: a line per judge, then the best against the runner-up (or the one line
    that says why the pilot is too small to plan from)."""
    out = []
    for plan in plans:
        if plan.too_small is not None:
            out.append(f"{plan.dataset}: not planned: {plan.too_small}\n")
            continue
        h = plan.target_half_width
        header = [
            "judge",
            "$/million",
            "pilot items",
            "queries",
            "κ",
            "± now",
            f"items for ±{h:g}",
            "queries",
            "central",
            "analytic items",
            "design effect",
            "more items",
            "cost",
        ]
        body = [
            [
                j.judge,
                price(j.usd_per_million),
                _n(j.n_items),
                _n(j.n_queries),
                _f(j.kappa),
                _f(j.half_width),
                _n(j.needed_items),
                _n(j.needed_queries),
                _n(j.needed_items_central),
                _n(j.needed_items_analytic),
                number(j.design_effect, 1),
                _n(j.more_items),
                usd(j.usd),
            ]
            for j in plan.judges
        ]
        confidence = percent(plan.plan_confidence, 0)
        out.append(
            f"{plan.dataset}: κ to ±{h:g} (95% interval, jackknife over queries with t on "
            f"their effective number; the items and queries planned from the upper "
            f"{confidence} bound of the pilot's spread between queries, 'central' from the "
            "spread itself)\n"
        )
        out.append(aligned_columns(header, body))
        out.extend(
            f"{j.judge}: not planned: {j.too_small}" for j in plan.judges if j.too_small is not None
        )
        out.extend(_queries_text(j, h) for j in plan.judges if j.needs_more_queries)
        out.append(_separation_text(plan.separation) + "\n")
        if plan.budget is not None:
            out.append(_budget_text(plan))
    return "\n".join(out)


def _queries_text(j: JudgePlan, target: float) -> str:
    """A judge whose target needs new queries, not more labels in the pilot's."""
    have = f"; the dataset has {j.pool_queries:,}" if j.pool_queries else ""
    per_query = _n((j.n_items or 0) / j.n_queries if j.n_queries else None)
    return (
        f"{j.judge}: ±{target:g} needs more queries, not more labels in the pilot's "
        f"{_n(j.n_queries)} queries (all their items give about ±{_f(j.reachable_half_width)}"
        f"): about {_n(j.needed_queries)} queries of about {per_query} labelled items"
        f"{have}"
    )


def _separation_text(sep: SeparationEntry | None) -> str:
    if sep is None:
        return "best against runner-up: fewer than two judges with a κ to plan from"
    pair = f"best against runner-up: {sep.best} − {sep.runner_up}"
    if sep.too_small is not None:
        return f"{pair}: not planned: {sep.too_small}"
    if sep.half_width is None:
        return (
            f"{pair}: the same grade on every one of {_n(sep.n_items)} shared items, so no "
            "number of labels tells them apart (Δκ is 0)"
        )
    lead = (
        f"{pair}, Δκ {_f(sep.difference)} ± {_f(sep.half_width)} on "
        f"{_n(sep.n_items)} shared items in {_n(sep.n_queries)} queries"
    )
    if sep.separated:
        return lead + ": already told apart at 95%"
    if sep.needed_items is None:
        return lead + ": no number of labels tells them apart (Δκ is 0)"
    cost = f", about {usd(sep.usd)}" if sep.usd is not None else ""
    return (
        lead + f"\n  to separate them you need about {_n(sep.more_items)} more labelled "
        f"items (≈{_n(sep.needed_items)} in all, ≈{_n(sep.needed_queries)} queries){cost}"
    )


def _budget_text(plan: DatasetPlan) -> str:
    """Per judge: the split of the budget, and what it is worth in human-only labels."""
    header = [
        "judge",
        "human labels",
        "judge-only labels",
        "cost",
        "correlation",
        "effective n",
        "human-only n",
    ]
    body, notes = [], []
    for j in plan.judges:
        split = j.budget_split
        if split is None:
            continue
        if split.too_small is not None:
            notes.append(f"{j.judge}: {split.too_small}")
            continue
        judge_only = split.judge_only_labels
        body.append(
            [
                j.judge,
                _n(split.human_labels),
                "every item" if judge_only is None else _n(judge_only),
                usd(split.cost),
                _f(split.correlation),
                _n(split.effective_n),
                _n(split.human_only_n),
            ]
        )
    title = (
        f"a budget of {usd(plan.budget)} for the mean grade (prediction-powered, "
        f"human label {usd(plan.cost_per_label)}):\n"
    )
    table = aligned_columns(header, body) if body else ""
    return title + table + "".join(f"{note}\n" for note in notes)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (2 for unusable input)."""
    args = parser().parse_args(argv)
    try:
        if args.n_boot < 2:
            raise MMJudgeError(f"--n-boot must be at least 2, got {args.n_boot}")
        if args.budget is not None and args.cost_per_label is None:
            raise MMJudgeError("--budget needs --cost-per-label (what one human label costs)")
        if args.pool is not None and args.pool < 2:
            raise MMJudgeError(f"--pool must be at least 2, got {args.pool}")
        if (args.next is None) != (args.out is None):
            raise MMJudgeError("--next N and --out FILE go together: give both or neither")
        if args.next is not None and args.next < 1:
            raise MMJudgeError(f"--next must be at least 1, got {args.next}")
        if args.out is not None and args.out.suffix not in (".csv", ".jsonl"):
            raise MMJudgeError(f"--out {args.out}: name a .csv or .jsonl file")
        runs = completed_runs(Path(args.sweep_dir))
        not_read = uniform_pilot(Path(args.sweep_dir), runs)
        plans = plan_sweep(
            runs,
            half_width=args.halfwidth,
            cost_per_label=args.cost_per_label,
            budget=args.budget,
            pool=args.pool,
            n_boot=args.n_boot,
            seed=args.seed,
        )
        if not plans and args.next is None:
            raise MMJudgeError(
                f"{args.sweep_dir}: no completed run with a defined κ below it; with no human "
                "labels yet, --next N --out FILE draws the first items for people to grade"
            )
        if plans and args.next is None and not any(_planned(p) for p in plans):
            raise MMJudgeError("; ".join(_refusals(plans)))
        written = None if args.next is None else write_next(runs, args.next, args.seed, args.out)
    except MMJudgeError as error:
        return fail(PROG, error)
    if args.format == "json":
        sys.stdout.write(plan_json(LabelPlan(tuple(plans))))
    elif plans:
        if not_read:
            print(f"grades: the dataset's own; {not_read}")
        sys.stdout.write(format_table(plans))
    else:
        print(f"{args.sweep_dir}: no judge has a defined κ yet (too few human labels)")
    if written:
        print(written, file=sys.stderr)
    return 0


def _planned(plan: DatasetPlan) -> bool:
    """Whether any judge of a dataset's plan was planned (its pilot not too small)."""
    return plan.too_small is None and any(j.too_small is None for j in plan.judges)


def _refusals(plans: Sequence[DatasetPlan]) -> list[str]:
    """Why each dataset, or each judge of it, was not planned."""
    out = []
    for plan in plans:
        if plan.too_small is not None:
            out.append(f"{plan.dataset}: {plan.too_small}")
        out.extend(f"{j.judge}: {j.too_small}" for j in plan.judges)
    return out


def write_next(runs: Sequence[SavedRun], n: int, seed: int, out: Path) -> str:
    """Draw ``n`` unlabelled items per dataset and write them as a review file with their
    inclusion probabilities and the number of unlabelled items drawn from (which ``mmjudge
    estimate --sample`` checks the qrels against); returns the line saying what was
    written."""
    rows: list[ReviewRow] = []
    parts = []
    for dataset, drawn in draw_unlabelled(runs, n, seed).items():
        group = [
            run for run in runs if run.kind == "single" and run.summary.cell.dataset == dataset
        ]
        chosen = [Candidate(key, ["drawn for labelling"]) for key in drawn.keys]
        for row, pi in zip(
            item_rows(dataset, group, chosen, out.parent), drawn.probabilities, strict=True
        ):
            rows.append(dataclasses.replace(row, draw=Draw(float(pi), drawn.pool)))
        parts.append(f"{dataset}: {len(drawn.keys)} of {drawn.pool} unlabelled items")
    if not rows:
        raise MMJudgeError(
            "--next: every item the judges graded already has a human grade; nothing to draw"
        )
    write_review(rows, out)
    return f"{out}: " + "; ".join(parts) + " (columns inclusion_probability, pool_size)"
