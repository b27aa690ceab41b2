"""``mmjudge report DIR [DIR ...]``: build a report from saved records of one or
several runs or sweeps (a later sweep's cells join an earlier sweep's in one report)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from mmjudge.cli.exits import fail, file_error_line
from mmjudge.errors import MMJudgeError
from mmjudge.report.analysis import N_BOOT
from mmjudge.report.browser import CAP
from mmjudge.report.build import build_report

PROG = "mmjudge report"


def parser() -> argparse.ArgumentParser:
    """The command's arguments."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Build an HTML + PNG report from the saved records of one or more run or "
        "sweep directories. Where two directories hold the same cell (dataset, model, modality, "
        "prompt), the run that finished last is used.",
    )
    parser.add_argument(
        "directories",
        type=Path,
        nargs="+",
        metavar="directory",
        help="run or sweep directories under results/",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("reports"),
        help="folder the report goes in (default: reports/)",
    )
    parser.add_argument(
        "--name", help="report name (default: the directory's name; names joined by + for several)"
    )
    parser.add_argument(
        "--n-boot",
        type=int,
        default=N_BOOT,
        help=f"bootstrap resamples per interval (default: {N_BOOT})",
    )
    parser.add_argument(
        "--max-disagreements",
        type=int,
        default=CAP,
        help=f"items shown per judge and dataset in the disagreement browser (default: {CAP})",
    )
    parser.add_argument(
        "--human-cost-per-label",
        type=float,
        metavar="USD",
        help="what one human label costs: the cards then price the labels they ask for and "
        "split that money between human and judge labels (report.human_cost_per_label)",
    )
    parser.add_argument(
        "--label-budget",
        type=float,
        metavar="USD",
        help="the budget the cards split between human and judge labels, with "
        "--human-cost-per-label (report.label_budget_usd; default: the cost of the labels "
        "the cards ask for)",
    )
    parser.add_argument(
        "--slices",
        default=None,
        metavar="NAMES",
        help="break every judge down by these slices, comma-separated (fields the dataset "
        "maps in dataset.slices, query_length, has_image; default: the runs' report.slices)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.n_boot < 1 or args.max_disagreements < 0:
        return fail(PROG, "--n-boot must be at least 1 and --max-disagreements 0 or more")
    price = args.human_cost_per_label
    if price is not None and not (math.isfinite(price) and price > 0):
        return fail(PROG, f"--human-cost-per-label {price}: give a price above 0 in USD")
    budget = args.label_budget
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        return fail(PROG, f"--label-budget {budget}: give a budget above 0 in USD")
    for directory in args.directories:
        if not directory.is_dir():
            return fail(PROG, f"{directory} is not a directory")
    try:
        out = build_report(
            args.directories,
            args.out,
            args.name,
            n_boot=args.n_boot,
            max_disagreements=args.max_disagreements,
            human_cost_per_label=price,
            label_budget_usd=budget,
            slices=None if args.slices is None else [n for n in args.slices.split(",") if n],
        )
    except MMJudgeError as error:
        return fail(PROG, error)
    except OSError as error:  # --out (or a folder below it) cannot be made or written
        if error.filename is None:
            raise
        return fail(PROG, file_error_line(error))
    print(out / "index.html")
    return 0
