"""``mmjudge reprice RUN_OR_SWEEP_DIR``: what finished runs would have cost under
another price sheet, in batch mode, or at another model's prices.

Re-pricing reads each row's saved ``usage`` and the run's ``summary.json``, never calls a
provider and never rewrites ``judgments.jsonl``; the result goes into
``repriced_<sheet>[_batch|_sync][_as-<model>].json`` next to it (or under ``--out``).

Calls are priced as they were made (through a batch API or not) unless ``--batch`` or
``--sync`` prices every call one way.

Cache hits count like any other row: the figure is the cost of a judgment, not what this
particular run spent.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mmjudge.cli.exits import fail
from mmjudge.costs.reprice import (
    UnknownModelError,
    available_sheets,
    load_sheet,
    reprice_run,
    resolve_model,
)
from mmjudge.errors import ConfigError, MMJudgeError
from mmjudge.store import SUMMARY, run_dirs
from mmjudge.store.repriced_file import Repricing, write_repriced


def format_table(results: Sequence[tuple[str, Repricing]]) -> str:
    """One line per run: old → new USD per million judgments, the total and the split. The
    model and modality columns are as wide as their longest entry: nothing is cut."""
    model_w = max([len("model"), *(len(result.model) for _, result in results)])
    modality_w = max([len("modality"), *(len(result.modality or "?") for _, result in results)])
    header = (
        f"{'model':<{model_w}} {'modality':<{modality_w}} {'n':>7} {'old $/M':>12}   "
        f"{'new $/M':>12} {'new total $':>12} {'image $/M':>11} {'text $/M':>11}  run"
    )
    lines = [header, "-" * len(header)]
    for label, result in results:
        old, new = result.original, result.repriced
        lines.append(
            f"{result.model:<{model_w}} {result.modality or '?':<{modality_w}} "
            f"{result.n_judgments:>7} "
            f"{old.usd_per_million:>12,.2f} → {new.usd_per_million:>12,.2f} "
            f"{new.total_usd:>12,.6f} {new.image_usd_per_million:>11,.2f} "
            f"{new.text_usd_per_million:>11,.2f}  {label}"
        )
    return "\n".join(lines)


def note_lines(done: Sequence[tuple[str, Repricing]]) -> list[str]:
    """Each note once; one that holds for some of the runs only names them (a local judge's
    "no row has token usage" is not said of the runs that were priced)."""
    where: dict[str, list[str]] = {}
    for label, result in done:
        for note in result.notes:
            where.setdefault(note, []).append(label)
    lines = []
    for note, labels in where.items():
        if len(labels) < len(done):
            note += f" — {', '.join(labels)}"
        lines.append(f"note: {note}")
    return lines


PROG = "mmjudge reprice"


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=(
            "Re-price finished runs from their saved usage under another price sheet, in "
            "batch mode, or at another model's prices. No provider is called."
        ),
    )
    parser.add_argument("directory", type=Path, help="a run or sweep directory under results/")
    parser.add_argument(
        "--sheet",
        help=f"price sheet: a shipped one ({', '.join(available_sheets())}) or one in "
        "pricing/ of a --config-dir folder; "
        "default: the sheet each run was priced with",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--batch", action="store_true", help="bill every call at batch prices")
    mode.add_argument(
        "--sync",
        action="store_true",
        help="bill every call at list prices (default: each call the way it was made)",
    )
    parser.add_argument(
        "--as-model",
        dest="as_model",
        help="price at this model's prices: a sheet key (gpt-4o-mini-2024-07-18) or a "
        "model config name (gpt4o_mini)",
    )
    parser.add_argument(
        "--config-dir",
        dest="config_dirs",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of your own configs (pricing/, model/), as for mmjudge sweep -cd DIR; "
        "may be repeated",
    )
    parser.add_argument(
        "--out", type=Path, help="write results to OUT/<run_id>/ instead of each run directory"
    )
    return parser


class Repriced(NamedTuple):
    """The runs re-priced (label and result), the ones skipped (with why), the files written."""

    done: list[tuple[str, Repricing]]
    """Each run re-priced, by its folder relative to the one given."""
    skipped: list[str]
    written: list[Path]


def reprice_all(args: argparse.Namespace) -> Repriced:
    """Re-price every run under ``args.directory``; with several runs, one that cannot be
    re-priced is skipped (an unknown ``--as-model`` stops them all)."""
    dirs = args.config_dirs
    sheet = load_sheet(args.sheet, dirs) if args.sheet else None
    if sheet is not None and args.as_model:
        resolve_model(args.as_model, sheet, dirs)
    runs = run_dirs(args.directory)
    if not runs:
        raise ConfigError(f"no runs ({SUMMARY}) under {args.directory}")
    out = Repriced([], [], [])
    for run in runs:
        label = str(run.relative_to(args.directory)) if run != args.directory else run.name
        try:
            result = reprice_run(
                run,
                sheet,
                batch=args.batch,
                as_model=args.as_model,
                sync=args.sync,
                config_dirs=dirs,
            )
        except UnknownModelError:
            raise
        except ConfigError as error:
            if len(runs) == 1:
                raise
            out.skipped.append(f"{label}: {error}")
            continue
        out.written.append(write_repriced(run, result, args.out))
        out.done.append((label, result))
    if not out.done:
        raise ConfigError(f"no run could be re-priced; {out.skipped[0]}")
    return out


def show(args: argparse.Namespace, repriced: Repriced) -> None:
    """The title, the table, each note once, the runs skipped and the files written."""
    done = repriced.done
    sheets = sorted({str(result.repriced.sheet) for _, result in done})
    title = f"Re-priced under sheet {', '.join(sheets)}"
    if args.batch:
        title += ", batch"
    elif args.sync:
        title += ", list prices"
    if args.as_model:
        title += f", at {done[0][1].basis.price_key}'s prices"
    print(title + " (USD per million judgments)")
    print(format_table(done))
    for line in note_lines(done):
        print(line)
    for line in repriced.skipped:
        print(f"skipped {line}")
    print(f"wrote {len(repriced.written)} file(s) named {repriced.written[0].name}")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if not args.directory.is_dir():
        return fail(PROG, f"{args.directory} is not a directory")
    try:
        repriced = reprice_all(args)
    except MMJudgeError as error:
        return fail(PROG, error)
    show(args, repriced)
    return 0
