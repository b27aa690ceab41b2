"""How well do judges' qrels agree with human qrels?

    mmjudge agree SWEEP_DIR [--n-boot N] [--seed S]
    mmjudge agree HUMAN_QRELS RUN_QRELS... [--format table|csv|json]
                  [--scale 0,1,2,3] [--out-of-scale error|drop|clip|keep]
                  [--n-boot N] [--seed S] [--relevant-from 2]
                  [--panel majority|mean|majority-max|majority-min|majority-random]
                  [--runs DIR [--measure nDCG@10 ...]] [--slices FILE]
                  [--trained JUDGE_DIR ...]

What each figure means, the scale, the system rankings, slices and panels:
:mod:`mmjudge.api.score_files`, which this command calls. Given a sweep or race folder
instead, each of its judges' κ against the dataset's grades, or, on a race over a dataset
without grades, against the grades the race asked for, weighted 1/π
(:mod:`mmjudge.api.folder_agreement`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mmjudge.api.folder_agreement import folder_agreement, format_folder
from mmjudge.api.score_files import non_negative, parse_scale, render, score_files
from mmjudge.cli.exits import fail
from mmjudge.errors import MMJudgeError
from mmjudge.metrics import scoring
from mmjudge.metrics.aggregate import AGGREGATORS
from mmjudge.metrics.label_scale import OUT_OF_SCALE
from mmjudge.studies.asked_agreement import asked_reference

PROG = "mmjudge agree"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Agreement of judges' labels with human labels on their common pairs.",
    )
    p.add_argument(
        "human",
        metavar="HUMAN_QRELS|SWEEP_DIR",
        help="human judgments: TREC qrels, or JSON lines (.jsonl) with query_id, result_id, "
        "grade; or a sweep or race folder, whose judges are scored against the dataset's "
        "grades or the grades its race asked for (race.labels=ask), weighted 1/π",
    )
    p.add_argument(
        "runs",
        metavar="RUN_QRELS",
        nargs="*",
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
    if Path(args.human).is_dir():
        return _folder(args)
    try:
        if not args.runs:
            raise MMJudgeError("give RUN_QRELS after HUMAN_QRELS, or a sweep folder alone")
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


def _folder(args: argparse.Namespace) -> int:
    """``mmjudge agree SWEEP_DIR``: each judge's κ against the folder's people's grades."""
    try:
        given = [
            flag
            for flag, value in (
                ("RUN_QRELS", args.runs),
                ("--runs", args.systems),
                ("--slices", args.slices),
                ("--panel", args.panel),
                ("--trained", args.trained),
                ("--scale", args.scale),
                ("--relevant-from", args.relevant_from),
            )
            if value
        ]
        if args.format != "table":
            given.append("--format")
        if args.systems and asked_reference(Path(args.human)) is not None:
            raise MMJudgeError(
                f"--runs with {args.human}: its people's grades were asked adaptively, a "
                "sample weighted 1/π that leaves most of each system's top ten ungraded, and "
                "mmjudge does not weigh nDCG or P@10 by it; rank systems against grades of "
                "their top tens (a qrels file), or read each judge's weighted κ without --runs"
            )
        if given:
            raise MMJudgeError(
                f"{args.human} is a folder: its judges' κ is scored as its summaries score it, "
                f"so {', '.join(given)} do not apply; for them, export its labels "
                "(mmjudge export) and pass the qrels files"
            )
        found = folder_agreement(args.human, n_boot=args.n_boot, seed=args.seed)
    except MMJudgeError as error:
        return fail(PROG, error)
    sys.stdout.write(format_folder(found))
    return 0
