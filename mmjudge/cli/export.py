"""Labels out: a run's, panel's or cascade's grades as TREC qrels.

    mmjudge export RUN_DIR [-o FILE] [--labels judge|human|human:NAME]
                             [--binarise [K]]
    mmjudge export SWEEP_DIR --out DIR [--binarise [K]]

A run folder (a real run, or a panel or cascade built from saved records) becomes lines
``query 0 doc grade``, one per item the judge graded (unparseable and failed items have no
grade and are left out), in the order of ``judgments.jsonl``. ``--labels human`` writes the
assessors' consensus grade instead (the lower median, as every agreement number uses), and
``human:NAME`` one assessor's grades. ``--binarise`` writes 1 for grades at or above the
dataset's ``scale.relevant_from`` (or at or above ``K``) and 0 below.

Given a folder that holds several runs (a sweep), every completed run is written to
``DIR/<dataset>.<model>.<modality>.<prompt>.qrels`` and each dataset's human consensus to
``DIR/<dataset>.human.qrels``, ready for ``mmjudge agree``, ``trec_eval`` or
``ir_measures``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.data.qrels import Qrels, qrels_lines, write_qrels
from mmjudge.errors import MMJudgeError
from mmjudge.metrics import consensus
from mmjudge.records import JudgmentRecord
from mmjudge.store import SUMMARY, SavedRun, completed_runs, load_run

PROG = "mmjudge export"


class Exported(NamedTuple):
    """One qrels file written by a folder export."""

    path: Path
    run_dir: Path | None
    """The run whose labels it holds (None for a dataset's human consensus)."""
    n: int
    """Judgments written."""


def _grade(row: JudgmentRecord, labels: str) -> float | None:
    """The grade ``labels`` selects from one judgment row, or None when it has none."""
    if labels == "judge":
        value = row.label
        return None if value is None or row.error else float(value)
    humans: dict[str, Any] = dict(row.human_labels or {})
    if labels == "human":
        grades = {name: float(g) for name, g in humans.items() if g is not None}
        if not grades:
            return None
        agreed = float(consensus({n: [g] for n, g in grades.items()})[0])
        return None if agreed != agreed else agreed
    name = labels.split(":", 1)[1]
    grade = humans.get(name)
    return None if grade is None else float(grade)


def _checked_id(kind: str, value: Any, run_dir: Path) -> str:
    text = str(value)
    if not text or any(ch.isspace() for ch in text):
        raise MMJudgeError(
            f"{run_dir}: {kind} {text!r} is empty or holds whitespace, which TREC qrels "
            "cannot carry (fields are separated by whitespace); give the dataset ids "
            "without spaces"
        )
    return text


def run_qrels(run: SavedRun, labels: str = "judge", binarise_at: float | None = None) -> Qrels:
    """``{query: {doc: grade}}`` of one saved run (see the module docstring)."""
    if labels.startswith("human:"):
        name = labels.split(":", 1)[1]
        known = {a for row in run.rows.values() for a in (row.human_labels or {})}
        if name not in known:
            raise MMJudgeError(
                f"--labels {labels}: {run.run_dir} has no assessor {name!r} "
                f"(assessors: {', '.join(sorted(known)) or 'none'})"
            )
    out: Qrels = {}
    for (query, doc), row in run.rows.items():
        grade = _grade(row, labels)
        if grade is None:
            continue
        if binarise_at is not None:
            grade = 1.0 if grade >= binarise_at else 0.0
        query_id = _checked_id("query id", query, run.run_dir)
        doc_id = _checked_id("result id", doc, run.run_dir)
        out.setdefault(query_id, {})[doc_id] = round(grade)
    return out


def threshold(run: SavedRun, binarise: str | None) -> float | None:
    """The grade from which ``--binarise`` counts an item relevant (None: keep grades)."""
    if binarise is None:
        return None
    if binarise != "scale":
        try:
            return float(binarise)
        except ValueError:
            raise MMJudgeError(
                f"--binarise {binarise!r}: give the lowest relevant grade, e.g. --binarise 2"
            ) from None
    value = run.relevant_from
    if value is None:
        raise MMJudgeError(
            f"{run.run_dir}: its summary names no scale.relevant_from; give --binarise K"
        )
    return value


def _file_name(run: SavedRun) -> str:
    cell = run.summary.cell
    parts = (cell.dataset, cell.model, cell.modality, cell.prompt_id)
    return ".".join(re.sub(r"[^A-Za-z0-9_-]+", "_", str(p)).strip("_") for p in parts) + ".qrels"


def export_folder(root: Path, out_dir: Path, binarise: str | None = None) -> list[Exported]:
    """Every completed run below ``root`` and each dataset's human consensus, as qrels files
    in ``out_dir``."""
    runs = completed_runs(root)
    if not runs:
        raise MMJudgeError(f"{root}: no completed runs below it (no summary.json with judgments)")
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Exported] = []
    humans: dict[str, Qrels] = {}
    for run in runs:
        cut = threshold(run, binarise)
        path = out_dir / _file_name(run)
        qrels = run_qrels(run, "judge", cut)
        write_qrels(qrels, path)
        written.append(Exported(path, run.run_dir, _count(qrels)))
        human = humans.setdefault(run.summary.cell.dataset, {})
        for query, docs in run_qrels(run, "human", cut).items():
            for doc, grade in docs.items():
                human.setdefault(query, {}).setdefault(doc, grade)
    for dataset, qrels in humans.items():
        path = out_dir / f"{dataset}.human.qrels"
        write_qrels(qrels, path)
        written.append(Exported(path, None, _count(qrels)))
    return written


def _count(qrels: Qrels) -> int:
    return sum(len(docs) for docs in qrels.values())


def _is_run(path: Path) -> bool:
    return (path / SUMMARY).is_file()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Write saved labels as TREC qrels.")
    p.add_argument("source", metavar="RUN_OR_SWEEP_DIR", help="a run, panel or sweep folder")
    p.add_argument(
        "-o",
        "--out",
        default=None,
        help="output file for a run (default: standard output); output folder for a sweep",
    )
    p.add_argument(
        "--labels",
        default="judge",
        help="judge (default), human (the assessors' consensus) or human:NAME (one assessor)",
    )
    p.add_argument(
        "--binarise",
        nargs="?",
        const="scale",
        default=None,
        metavar="K",
        help="write 1 for grades >= K (default K: the dataset's scale.relevant_from), else 0",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; 2 for unusable input."""
    args = parser().parse_args(argv)
    source = Path(args.source)
    try:
        if not source.is_dir():
            raise MMJudgeError(f"{source}: not a run or sweep folder")
        if args.labels not in ("judge", "human") and not args.labels.startswith("human:"):
            raise MMJudgeError(
                f"--labels {args.labels!r}: use judge, human or human:<assessor name>"
            )
        if _is_run(source):
            run = load_run(source)
            qrels = run_qrels(run, args.labels, threshold(run, args.binarise))
            if args.out:
                write_qrels(qrels, args.out)
                print(f"{args.out}: {_count(qrels)} judgments", file=sys.stderr)
            else:
                sys.stdout.writelines(qrels_lines(qrels))
            return 0
        if not args.out:
            raise MMJudgeError(f"{source} holds several runs: give --out DIR for their files")
        if args.labels != "judge":
            raise MMJudgeError("--labels applies to one run; a sweep export writes both")
        _print(export_folder(source, Path(args.out), args.binarise))
    except MMJudgeError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    return 0


def _print(written: Iterable[Exported]) -> None:
    for item in written:
        what = "human consensus" if item.run_dir is None else str(item.run_dir)
        print(f"{item.path}: {item.n} judgments ({what})", file=sys.stderr)


if __name__ == "__main__":
    from mmjudge.cli.exits import quiet_when_output_closes

    with quiet_when_output_closes():
        sys.exit(main())
