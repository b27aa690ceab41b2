"""A person in the loop: review files out of saved runs, corrections back in.

    mmjudge review export SWEEP_OR_RUN_DIR [--out review.csv|review.jsonl] [--max N]
    mmjudge review import review.csv [--assessor NAME] [--out DIR]

What export lists and import reads back, and the file's columns: :mod:`mmjudge.api.review`,
which this command calls.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from mmjudge.api.review import export_review, import_review
from mmjudge.errors import MMJudgeError

PROG = "mmjudge review"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Review files out, corrections in.")
    sub = p.add_subparsers(dest="command", required=True)
    out = sub.add_parser("export", help="the items worth a person's look, as CSV or JSONL")
    out.add_argument("source", metavar="SWEEP_OR_RUN_DIR")
    out.add_argument("--out", default="review.csv", help="review.csv or review.jsonl")
    out.add_argument("--max", type=int, default=200, help="rows per dataset (default 200)")
    back = sub.add_parser("import", help="corrected grades and test-bank edits back in")
    back.add_argument("file", metavar="REVIEW_FILE")
    back.add_argument("--assessor", default="reviewer", help="name of the reviewer's labels")
    back.add_argument("--out", default=None, help="folder for the qrels (default: the file's)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; 2 for unusable input."""
    args = parser().parse_args(argv)
    try:
        if args.command == "export":
            target = Path(args.out)
            n = export_review(Path(args.source), target, args.max)
            print(f"{target}: {n} items to review", file=sys.stderr)
            return 0
        source = Path(args.file)
        out_dir = Path(args.out) if args.out else source.parent
        for line in import_review(source, args.assessor, out_dir) or ["nothing to import"]:
            print(line, file=sys.stderr)
    except MMJudgeError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from mmjudge.cli.exits import quiet_when_output_closes

    with quiet_when_output_closes():
        sys.exit(main())
