"""``python -m mmjudge.report RUN_OR_SWEEP_DIR``: rebuild a report from saved records."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mmjudge import PROJECT_ROOT
from mmjudge.errors import MMJudgeError
from mmjudge.report.build import build_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mmjudge.report",
        description="Build an HTML + PNG report from a run or sweep directory's saved records.",
    )
    parser.add_argument("directory", type=Path, help="a run or sweep directory under results/")
    parser.add_argument(
        "--out",
        type=Path,
        default=PROJECT_ROOT / "reports",
        help="folder the report goes in (default: reports/)",
    )
    parser.add_argument("--name", help="report name (default: the directory's name)")
    args = parser.parse_args(argv)
    if not args.directory.is_dir():
        print(f"mmjudge: {args.directory} is not a directory", file=sys.stderr)
        return 2
    try:
        out = build_report(args.directory, args.out, args.name)
    except MMJudgeError as error:
        print(f"mmjudge: {error}", file=sys.stderr)
        return 2
    print(out / "index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
