"""What a judge's cheap labels add to a few human ones: prediction-powered estimates.

    mmjudge estimate HUMAN_QRELS JUDGE_QRELS --labelled N [--seed S] [--runs DIR]
    mmjudge estimate SWEEP_DIR [--judge NAME] --labelled N …
                     [--format table|json] [--scale 0,1,2,3] [--out-of-scale error|drop|clip]
                     [--relevant-from 2]

Given a sweep folder instead of the two files, the human consensus and the labels of its judge
(``--judge NAME`` where it holds several) are read from its saved records, as ``mmjudge export``
would write them, without writing them.

A random ``N`` of the human labels (``--seed``) are treated as the only ones known; the
rest are held back and give the value each estimate aims at. On the items both files grade,
the command prints the mean grade and the share of relevant items (and, with ``--runs``, each
system's nDCG@10 and P@10) three ways: from the labelled items alone, from the judge's labels
on every item (biased by the judge's errors, so without an interval), and prediction-powered
(PPI++ with a tuned weight, through ``ppi_py``), each interval's width and the human-only
sample size the prediction-powered interval is worth. With ``--runs``, Kendall's τ-b says how
the estimated orderings of the systems compare. The method is
:mod:`mmjudge.estimation.prediction`; the manual's "Prediction-powered estimates" page says
when its intervals hold.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mmjudge.api.estimate_sample import asked_sample, sampled_items
from mmjudge.api.score_files import aligned_columns, non_negative, parse_scale
from mmjudge.api.sweep_labels import sweep_labels
from mmjudge.cli.exits import fail
from mmjudge.data.qrels import QrelsFile, load_qrels, read_systems
from mmjudge.display import bracketed, number
from mmjudge.errors import MMJudgeError
from mmjudge.estimation.estimates import (
    HeldBack,
    RankingCheck,
    as_dict,
    capped_line,
    effective_cell,
    estimates_for,
    held_back,
    notes,
    strata_line,
    top_ten_line,
)
from mmjudge.estimation.prediction import shared_items
from mmjudge.metrics import scoring
from mmjudge.metrics.label_scale import apply_scale, human_scale
from mmjudge.studies.asked_agreement import AskedReference, asked_reference
from mmjudge.studies.reference_grades import not_read_line

PROG = "mmjudge estimate"


def _inputs(p: argparse.ArgumentParser) -> None:
    """The labels read: two qrels files, or a sweep folder and the judge picked in it."""
    p.add_argument(
        "human",
        metavar="HUMAN_QRELS|SWEEP_DIR",
        help="human judgments (TREC qrels), or a sweep folder: its human consensus and one "
        "judge's labels are read from the saved records, with no export step",
    )
    p.add_argument(
        "judge",
        metavar="JUDGE_QRELS",
        nargs="?",
        default=None,
        help="the judge's labels (TREC qrels); not with a sweep folder",
    )
    p.add_argument(
        "--judge",
        dest="judge_name",
        default=None,
        metavar="NAME",
        help="with a sweep folder that holds several judges: the one to use (its run "
        "folder's name, or its model's name)",
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Prediction-powered estimates from a judge's labels and a random part of "
        "the human labels, beside the human-only and judge-only ones.",
    )
    _inputs(p)
    p.add_argument(
        "--labelled",
        type=non_negative,
        default=None,
        metavar="N",
        help="how many human labels to treat as known (drawn at random); the rest are held "
        "back as the truth",
    )
    p.add_argument(
        "--sample",
        type=Path,
        default=None,
        metavar="REVIEW_FILE",
        help="instead of --labelled: the items drawn by `mmjudge plan --next` (the review "
        "file, with its inclusion_probability column) are labelled, weighted by their "
        "inclusion probabilities, and so are the pairs the human file grades outside the "
        "draw (for certain); the items are then every pair the judge grades",
    )
    p.add_argument(
        "--dataset",
        default=None,
        metavar="NAME",
        help="with --sample: the dataset whose rows to read, when the review file holds several",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the random draw (default 0)")
    p.add_argument(
        "--runs",
        dest="systems",
        metavar="DIR",
        default=None,
        help="a directory of TREC run files: also estimate each system's nDCG@10 and P@10",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--scale", type=parse_scale, default=None, help="the grade scale, e.g. 0-3")
    p.add_argument(
        "--out-of-scale",
        choices=("error", "drop", "clip"),
        default="error",
        help="a judge grade off the scale: refuse the file, leave the pair out, or move it "
        "to the nearest grade",
    )
    p.add_argument(
        "--relevant-from",
        type=int,
        default=None,
        help="lowest grade counted as relevant (default: the lowest of the scale's upper "
        "half, 2 on 0–3)",
    )
    p.set_defaults(left_out=0)  # set from a sweep folder with a trained judge
    p.set_defaults(grades_read=None)  # set from a race's folder that asked for grades
    return p


def read_inputs(args: argparse.Namespace) -> tuple[QrelsFile, QrelsFile]:
    """The human and the judge's qrels: two files, or a sweep folder's consensus and the
    labels of its judge (``--judge``), read from its records in memory."""
    if Path(args.human).is_dir():
        if args.judge is not None:
            raise MMJudgeError(
                f"{args.human} is a sweep folder: give it alone and pick its judge with "
                "--judge NAME, not a qrels file beside it"
            )
        labels = sweep_labels(args.human, args.judge_name)
        args.judge = Path(args.human) / labels.name
        args.left_out = labels.left_out
        return labels.human, labels.judge
    if args.judge is None:
        raise MMJudgeError("give JUDGE_QRELS after HUMAN_QRELS, or a sweep folder alone")
    if args.judge_name is not None:
        raise MMJudgeError("--judge NAME picks a judge of a sweep folder; here give its qrels")
    return load_qrels(args.human), load_qrels(args.judge)


def compute(args: argparse.Namespace) -> HeldBack:
    """Read the files and estimate; raises :class:`MMJudgeError` naming what is unusable."""
    if args.labelled is not None and args.sample is not None:
        raise MMJudgeError("give one of --labelled N (a random draw) or --sample REVIEW_FILE")
    human, judge_file = read_inputs(args)
    asked = asked_reference(Path(args.human)) if Path(args.human).is_dir() else None
    if not human.qrels and asked is not None:
        return _from_asked(args, judge_file, asked)
    if args.labelled is None and args.sample is None:
        raise MMJudgeError("give one of --labelled N (a random draw) or --sample REVIEW_FILE")
    if not human.qrels:
        raise MMJudgeError(f"{args.human}: no judgments in the file")
    if asked is not None:
        args.grades_read = f"the dataset's own; {not_read_line(asked)}"
    scale = human_scale(human, args.scale)
    judge, _ = apply_scale(judge_file, scale, args.out_of_scale, "drop or clip")
    threshold = scoring.relevance_threshold(
        np.asarray(scale.grades, dtype=float), args.relevant_from
    )
    systems = read_systems(args.systems) if args.systems else None
    if args.sample is not None:
        paths = (args.human, args.judge, args.sample)
        items, labelled, probabilities = sampled_items(human.qrels, judge, paths, args.dataset)
        return estimates_for(items, systems, scale.grades, threshold, labelled, probabilities)
    items = shared_items(human.qrels, judge)
    if items.human.size == 0:
        raise MMJudgeError(
            f"{args.judge}: grades none of the (query, doc) pairs of {args.human}; "
            "are the query and doc ids the same in both files?"
        )
    return held_back(items, systems, scale.grades, threshold, args.labelled, args.seed)


def _from_asked(args: argparse.Namespace, judge_file: QrelsFile, asked: AskedReference) -> HeldBack:
    """The estimates from the grades a race asked for (a dataset without grades), each
    labelled item weighted 1/π (:func:`~mmjudge.api.estimate_sample.asked_sample`)."""
    if args.labelled is not None or args.sample is not None:
        raise MMJudgeError(
            f"{args.human}: the dataset has no grades of its own; the race there asked for "
            f"{asked.draw.graded:,}, which are read weighted 1/π without --labelled or --sample"
        )
    if args.systems:
        raise MMJudgeError(
            f"--runs with {args.human}: the asked grades cover too few of each system's top "
            "ten to weigh its nDCG@10 and P@10 by item; leave out --runs (the mean grade and "
            "the share of relevant items are estimated), or grade the systems' top tens"
        )
    judge_grades = judge_file.qrels
    sample = asked_sample(Path(args.human), judge_grades, asked)
    scale = human_scale(sample.human, args.scale)
    judge, _ = apply_scale(judge_file, scale, args.out_of_scale, "drop or clip")
    if judge != judge_grades:
        sample = asked_sample(Path(args.human), judge, asked)
    threshold = scoring.relevance_threshold(
        np.asarray(scale.grades, dtype=float), args.relevant_from
    )
    args.grades_read = asked.draw.line()
    return estimates_for(
        sample.items, None, scale.grades, threshold, sample.labelled, sample.probabilities
    )


def _cell(value: float | None) -> str:
    return number(value)


def _interval(triple: tuple[float, float, float]) -> str:
    return bracketed(*triple, show=number)


def _lead(result: HeldBack) -> str:
    """The lines above the table: what was labelled, how it was estimated, the notes."""
    if result.truth is None:
        lead = f"{result.labelled} of {result.items} items labelled by people\n\n"
    else:
        lead = (
            f"{result.labelled} of {result.items} human labels used; the rest held back "
            "('all human' is the value on every human label)\n\n"
        )
    lead += strata_line(result) + "\n"
    split = top_ten_line(result)
    lead += (split + "\n\n") if split else "\n"
    for note in notes(result):
        lead += note + "\n\n"
    return lead


def format_table(result: HeldBack) -> str:
    """One line per quantity, then the system orderings."""
    header = [
        "quantity",
        "all human",
        "human-only [95% CI]",
        "width",
        "judge-only*",
        "PPI++ [95% CI]",
        "width",
        "lambda",
        "effective n",
    ]
    body = [
        [
            e.name,
            _cell(None if result.truth is None else result.truth[e.name]),
            _interval(e.human_only),
            _cell(e.human_only[2] - e.human_only[1]),
            _cell(e.judge_only),
            _interval(e.ppi),
            _cell(e.ppi[2] - e.ppi[1]),
            f"{e.lam:.2f}",
            effective_cell(e),
        ]
        for e in result.estimates
    ]
    text = _lead(result) + aligned_columns(header, body)
    text += (
        "\n* judge-only: the judge's labels on every item; its error is the judge's bias, "
        "which no interval shows.\n"
    )
    capped = capped_line(result)
    if capped:
        text += capped + "\n"
    if result.rankings:
        text += "\nsystem orderings, Kendall's tau-b:\n" + _orderings(result.rankings)
    return text


def _orderings(rankings: Sequence[RankingCheck]) -> str:
    """The table of how each measure's estimates order the systems."""
    header = [
        "measure",
        "PPI vs human-only",
        "PPI vs all human",
        "human-only vs all",
        "judge-only vs all",
    ]
    lines = [
        [
            r.measure,
            _cell(r.ppi_vs_human_only),
            _cell(r.ppi_vs_truth),
            _cell(r.human_only_vs_truth),
            _cell(r.judge_only_vs_truth),
        ]
        for r in rankings
    ]
    return aligned_columns(header, lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (2 for unusable input)."""
    args = parser().parse_args(argv)
    try:
        result = compute(args)
    except MMJudgeError as error:
        return fail(PROG, error)
    if args.format == "json":
        settings = {
            "human": str(args.human),
            "judge": str(args.judge),
            "seed": args.seed,
            "level": scoring.LEVEL,
            "systems": str(args.systems) if args.systems else None,
            "left_out": args.left_out,
            "grades": args.grades_read,
        }
        sys.stdout.write(
            json.dumps({**settings, **as_dict(result)}, indent=2, allow_nan=False) + "\n"
        )
    else:
        if args.grades_read:
            sys.stdout.write(f"grades: {args.grades_read}\n")
        left_out = args.left_out
        if left_out:
            sys.stdout.write(
                f"left out: {left_out:,} items the trained judge learnt from (its own κ leaves "
                "them out too)\n"
            )
        sys.stdout.write(format_table(result))
    return 0
