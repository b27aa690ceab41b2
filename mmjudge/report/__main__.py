"""``python -m mmjudge.report DIR [DIR ...]``: build a report from saved records of one or
several runs or sweeps (a later sweep's cells join an earlier sweep's in one report)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mmjudge import PROJECT_ROOT
from mmjudge.errors import MMJudgeError
from mmjudge.report.analysis import N_BOOT
from mmjudge.report.browser import CAP
from mmjudge.report.build import build_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mmjudge.report",
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
        default=PROJECT_ROOT / "reports",
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
    args = parser.parse_args(argv)
    if args.n_boot < 1 or args.max_disagreements < 0:
        print(
            "mmjudge: --n-boot must be at least 1 and --max-disagreements 0 or more",
            file=sys.stderr,
        )
        return 2
    for directory in args.directories:
        if not directory.is_dir():
            print(f"mmjudge: {directory} is not a directory", file=sys.stderr)
            return 2
    try:
        out = build_report(
            args.directories,
            args.out,
            args.name,
            n_boot=args.n_boot,
            max_disagreements=args.max_disagreements,
        )
    except MMJudgeError as error:
        print(f"mmjudge: {error}", file=sys.stderr)
        return 2
    print(out / "index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
