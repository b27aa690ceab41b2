"""How well do judges' qrels agree with human qrels?

    mmjudge agree HUMAN_QRELS RUN_QRELS... [--format table|csv|json]
                  [--scale 0,1,2,3] [--out-of-scale error|drop|clip|keep]
                  [--n-boot N] [--seed S] [--relevant-from 2]
                  [--panel majority|mean|majority-max|majority-min|majority-random]
                  [--runs DIR [--measure nDCG@10 ...]] [--slices FILE]
                  [--trained JUDGE_DIR ...]

What each figure means, the scale, the system rankings, slices and panels:
:mod:`mmjudge.api.score_files`, which this command calls.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from mmjudge.api.score_files import non_negative, parse_scale, render, score_files
from mmjudge.cli.exits import fail
from mmjudge.errors import MMJudgeError
from mmjudge.metrics import scoring
from mmjudge.metrics.aggregate import AGGREGATORS
from mmjudge.metrics.label_scale import OUT_OF_SCALE

PROG = "mmjudge agree"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Agreement of judges' labels with human labels on their common pairs.",
    )
    p.add_argument(
        "human",
        metavar="HUMAN_QRELS",
        help="human judgments: TREC qrels, or JSON lines (.jsonl) with query_id, result_id, grade",
    )
    p.add_argument(
        "runs",
        metavar="RUN_QRELS",
        nargs="+",
        help="judge labels, in either form (the files the replay judge reads); a file of "
        "several runs (a run or judge field) is scored run by run",
    )
    _scoring_options(p)
    _scale_options(p)
    _ranking_options(p)
    p.add_argument(
        "--slices",
        metavar="FILE",
        default=None,
        help="a TSV of query<TAB>doc<TAB>slice (or query<TAB>slice): also score each judge "
        "on each slice, test whether its κ depends on the slice and name its worst",
    )
    p.add_argument(
        "--trained",
        action="append",
        default=[],
        metavar="JUDGE_DIR",
        help="a trained judge's folder (mmjudge distill --out): leave out the pairs it learnt "
        "from, for every judge, so its κ is a held-out one (repeatable)",
    )
    return p


def _scoring_options(p: argparse.ArgumentParser) -> None:
    """How the agreement is reported: the format, the bootstrap, panels of the judges."""
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument(
        "--n-boot",
        type=non_negative,
        default=scoring.N_BOOT,
        help="bootstrap resamples of queries for the κ intervals (0: no intervals)",
    )
    p.add_argument("--seed", type=int, default=scoring.SEED, help="bootstrap seed")
    p.add_argument(
        "--panel",
        action="append",
        default=[],
        choices=AGGREGATORS,
        metavar="HOW",
        help=(
            "add a panel of all the run files, combined by HOW: "
            f"{', '.join(AGGREGATORS)} (repeatable)"
        ),
    )


def _scale_options(p: argparse.ArgumentParser) -> None:
    """The grade scale, what counts as relevant, and what to do with grades off the scale."""
    p.add_argument(
        "--relevant-from",
        type=int,
        default=None,
        help="lowest grade counted as relevant for the binarised κ and P@10 "
        "(default: the lowest grade of the scale's upper half, 2 on 0–3)",
    )
    p.add_argument(
        "--scale",
        type=parse_scale,
        default=None,
        help="the grade scale, e.g. 0,1,2,3 or 0-3 (default: every whole number from the "
        "human file's lowest to its highest grade)",
    )
    p.add_argument(
        "--out-of-scale",
        choices=OUT_OF_SCALE,
        default="error",
        help="a judge grade off the scale: refuse the file (error, the default), leave the "
        "pair out (drop), move it to the nearest grade (clip) or score it as its own "
        "category (keep); the count is always printed",
    )


def _ranking_options(p: argparse.ArgumentParser) -> None:
    """System runs to rank by the human's and each judge's labels, and the measures."""
    p.add_argument(
        "--runs",
        dest="systems",
        metavar="DIR",
        default=None,
        help="a directory of TREC run files: also compare how the human and each judge's "
        "labels rank these systems (Kendall's τ, Spearman's ρ, RBO)",
    )
    p.add_argument(
        "--measure",
        action="append",
        default=[],
        help="ir_measures measure for --runs, e.g. nDCG@10 or 'P(rel=2)@10' (repeatable; "
        "default nDCG@10 and P@10 at --relevant-from)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (2 for unusable input files)."""
    args = parser().parse_args(argv)
    try:
        scored = score_files(
            args.human,
            args.runs,
            scale=args.scale,
            out_of_scale=args.out_of_scale,
            relevant_from=args.relevant_from,
            panels=args.panel,
            n_boot=args.n_boot,
            seed=args.seed,
            systems=args.systems,
            measures=args.measure,
            slices=args.slices,
            trained=args.trained,
        )
    except MMJudgeError as error:
        return fail(PROG, error)
    sys.stdout.write(render(scored, args.format))
    return 0
