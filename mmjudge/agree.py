"""How well do judges' qrels agree with human qrels?

    python -m mmjudge.agree HUMAN_QRELS RUN_QRELS... [--format table|csv|json]
                            [--n-boot N] [--seed S] [--relevant-from 2]
                            [--panel majority|mean|majority-max|majority-min|majority-random]

Each RUN_QRELS file (a judge's labels in TREC qrels form) is compared with the human file
on the (query, doc) pairs both contain: n (pairs in common), missing (human pairs the run
lacks), Cohen's κ unweighted, linear and quadratic, each with a 95% bootstrap interval that
resamples queries, κ on labels binarised at ``--relevant-from``, Krippendorff's α
(ordinal) and accuracy. κ's categories are the sorted grades seen in the compared pairs,
as in scikit-learn.

The labels are first aligned into a matrix (judges × human pairs, ``nan`` where a judge has
no label). Each judge's row is scored by :func:`score_labels`. A *panel* is a function from
that matrix to one label per pair; :func:`score_alignment` scores any panels it is given
the same way. ``--panel HOW`` (repeatable) adds a row ``panel:HOW`` that combines every run
file given, pair by pair, with :func:`mmjudge.panels.aggregate` (majority vote with a
tie-break, or the rounded mean; a run's missing label is ignored). The scale used for
tie-breaks and rounding is every whole number from the lowest to the highest grade in the
files; ``majority-random`` draws its tie-breaks with ``--seed``.
"""

from __future__ import annotations

import argparse
import csv
import functools
import io
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge import metrics
from mmjudge.errors import MMJudgeError
from mmjudge.panels import AGGREGATORS, panel
from mmjudge.qrels import Qrels, n_judgments, read_qrels

FloatArray = npt.NDArray[np.float64]

#: Combines the aligned judge matrix (judges × pairs, ``nan`` = no label) into one label
#: per pair (``nan`` where the panel gives none).
Panel = Callable[[FloatArray], FloatArray]

PROG = "python -m mmjudge.agree"


class Alignment(NamedTuple):
    """Human labels and every judge's labels on the human file's (query, doc) pairs."""

    query_ids: npt.NDArray[np.object_]
    """Query of each human pair, in human-file order."""
    doc_ids: npt.NDArray[np.object_]
    """Document of each human pair."""
    human: FloatArray
    """Human grade of each pair."""
    judges: FloatArray
    """Judges × pairs; ``nan`` where a judge did not label the pair."""
    names: list[str]
    """Judge names, one per row of ``judges``."""


def align(human: Qrels, judges: Mapping[str, Qrels]) -> Alignment:
    """Line every judge's labels up with the human pairs (pairs only a judge has are
    ignored: there is nothing to compare them with)."""
    pairs = [(query, doc, grade) for query, docs in human.items() for doc, grade in docs.items()]
    query_ids = np.array([p[0] for p in pairs], dtype=object)
    doc_ids = np.array([p[1] for p in pairs], dtype=object)
    labels = np.array([p[2] for p in pairs], dtype=np.float64)
    matrix = np.full((len(judges), len(pairs)), np.nan)
    for row, qrels in enumerate(judges.values()):
        matrix[row] = [qrels.get(query, {}).get(doc, math.nan) for query, doc, _ in pairs]
    return Alignment(query_ids, doc_ids, labels, matrix, list(judges))


class Interval(NamedTuple):
    """A value with its bootstrap interval (``nan`` bounds when no bootstrap was run)."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge's agreement with the human labels."""

    name: str
    """Judge (file stem, or ``panel:<name>``)."""
    n: int
    """Pairs both the human file and the judge label."""
    missing: int
    """Human pairs the judge has no label for."""
    kappa: Interval
    """Unweighted Cohen's κ."""
    kappa_linear: Interval
    """Linearly weighted κ."""
    kappa_quadratic: Interval
    """Quadratically weighted κ."""
    kappa_binary: float
    """κ after binarising both at ``relevant_from``."""
    alpha: float
    """Krippendorff's α, ordinal, human and judge as the two raters."""
    accuracy: float
    """Fraction of pairs with the same grade."""

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: intervals as objects, undefined values as ``None``."""
        return {
            "name": self.name,
            "n": self.n,
            "missing": self.missing,
            **{
                key: {k: _json_number(v) for k, v in getattr(self, key)._asdict().items()}
                for key in ("kappa", "kappa_linear", "kappa_quadratic")
            },
            "kappa_binary": _json_number(self.kappa_binary),
            "alpha": _json_number(self.alpha),
            "accuracy": _json_number(self.accuracy),
        }


def _json_number(value: float) -> float | None:
    return None if math.isnan(value) else value


def score_labels(
    name: str,
    query_ids: Any,
    human: Any,
    judge: Any,
    *,
    relevant_from: float = 2,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> JudgeAgreement:
    """Agreement of one judge's labels (``nan`` = none) with aligned human labels.

    ``n_boot=0`` skips the bootstrap (interval bounds are then ``nan``).
    """
    h, j = metrics.as_labels(human), metrics.as_labels(judge)
    missing = int((~np.isnan(h) & np.isnan(j)).sum())
    common = ~(np.isnan(h) | np.isnan(j))
    h, j, queries = h[common], j[common], np.asarray(query_ids)[common]

    def interval(weights: metrics.Weights) -> Interval:
        metric = functools.partial(metrics.cohen_kappa, weights=weights)
        if n_boot == 0 or h.size == 0:
            return Interval(metric(h, j), math.nan, math.nan)
        result = metrics.bootstrap_ci(metric, queries, h, j, n_boot=n_boot, seed=seed, level=level)
        return Interval(result.estimate, result.low, result.high)

    return JudgeAgreement(
        name=name,
        n=int(common.sum()),
        missing=missing,
        kappa=interval(None),
        kappa_linear=interval("linear"),
        kappa_quadratic=interval("quadratic"),
        kappa_binary=metrics.binary_kappa(h, j, relevant_from),
        alpha=metrics.krippendorff_alpha(np.vstack([h, j]), "ordinal"),
        accuracy=metrics.accuracy(h, j),
    )


def score_alignment(
    alignment: Alignment,
    *,
    panels: Mapping[str, Panel] | None = None,
    relevant_from: float = 2,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[JudgeAgreement]:
    """Score every judge row of ``alignment``, then every panel's combined labels."""
    rows = [(name, alignment.judges[i]) for i, name in enumerate(alignment.names)]
    rows += [(f"panel:{name}", panel(alignment.judges)) for name, panel in (panels or {}).items()]
    return [
        score_labels(
            name,
            alignment.query_ids,
            alignment.human,
            labels,
            relevant_from=relevant_from,
            n_boot=n_boot,
            seed=seed,
            level=level,
        )
        for name, labels in rows
    ]


# --------------------------------------------------------------------------- output

_INTERVALS = ("kappa", "kappa_linear", "kappa_quadratic")
_SCALARS = ("kappa_binary", "alpha", "accuracy")


def _fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def _fmt_interval(value: Interval) -> str:
    if math.isnan(value.low):
        return _fmt(value.estimate)
    return f"{_fmt(value.estimate)} [{_fmt(value.low)}, {_fmt(value.high)}]"


def format_table(rows: Sequence[JudgeAgreement], level: float = 0.95) -> str:
    """An aligned plain-text table, one line per judge."""
    pct = f"{level * 100:g}% CI"
    header = [
        "run",
        "n",
        "missing",
        f"kappa [{pct}]",
        f"kappa_lin [{pct}]",
        f"kappa_quad [{pct}]",
        "kappa_bin",
        "alpha",
        "accuracy",
    ]
    body = [
        [
            row.name,
            str(row.n),
            str(row.missing),
            *(_fmt_interval(getattr(row, key)) for key in _INTERVALS),
            *(_fmt(getattr(row, key)) for key in _SCALARS),
        ]
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(header), rule, *(render(line) for line in body)]) + "\n"


def format_csv(rows: Sequence[JudgeAgreement]) -> str:
    """CSV with one column per number; undefined values are empty cells."""
    header = ["run", "n", "missing"]
    for key in _INTERVALS:
        header += [key, f"{key}_low", f"{key}_high"]
    header += list(_SCALARS)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        cells: list[Any] = [row.name, row.n, row.missing]
        for key in _INTERVALS:
            cells += list(getattr(row, key))
        cells += [getattr(row, key) for key in _SCALARS]
        writer.writerow(["" if isinstance(c, float) and math.isnan(c) else c for c in cells])
    return out.getvalue()


def format_json(rows: Sequence[JudgeAgreement], settings: Mapping[str, Any]) -> str:
    """A JSON object: the settings used and one entry per judge (``null`` = undefined)."""
    return json.dumps({**settings, "runs": [row.as_dict() for row in rows]}, indent=2) + "\n"


# --------------------------------------------------------------------------- command line


def _names(paths: Sequence[str]) -> list[str]:
    """Judge names: file stems, or the paths as given where two files share a stem."""
    stems = [Path(p).stem for p in paths]
    return [s if stems.count(s) == 1 else str(p) for s, p in zip(stems, paths, strict=True)]


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Agreement of judges' qrels with human qrels on their common pairs.",
    )
    p.add_argument("human", metavar="HUMAN_QRELS", help="human judgments (TREC qrels)")
    p.add_argument("runs", metavar="RUN_QRELS", nargs="+", help="judge labels (TREC qrels)")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument(
        "--n-boot",
        type=_non_negative,
        default=1000,
        help="bootstrap resamples of queries for the κ intervals (0: no intervals)",
    )
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
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
    p.add_argument(
        "--relevant-from",
        type=int,
        default=2,
        help="lowest grade counted as relevant for the binarised κ (default 2)",
    )
    return p


def _whole_scale(alignment: Alignment) -> list[float]:
    """Every whole number from the lowest to the highest grade in the human and run files."""
    values = np.concatenate([alignment.human, alignment.judges.ravel()])
    values = values[~np.isnan(values)]
    if values.size == 0:
        return []
    return [float(g) for g in range(int(values.min()), int(values.max()) + 1)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit status (2 for unusable input files)."""
    args = parser().parse_args(argv)
    try:
        human = read_qrels(args.human)
        if not human:
            raise MMJudgeError(f"{args.human}: no judgments in the file")
        judges = {
            name: read_qrels(path) for name, path in zip(_names(args.runs), args.runs, strict=True)
        }
    except MMJudgeError as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return 2
    level = 0.95
    alignment = align(human, judges)
    grades = _whole_scale(alignment)
    rows = score_alignment(
        alignment,
        panels={how: panel(how, grades, args.seed) for how in dict.fromkeys(args.panel)},
        relevant_from=args.relevant_from,
        n_boot=args.n_boot,
        seed=args.seed,
        level=level,
    )
    if args.format == "csv":
        text = format_csv(rows)
    elif args.format == "json":
        settings = {
            "human": args.human,
            "n_human": n_judgments(human),
            "n_boot": args.n_boot,
            "seed": args.seed,
            "level": level,
            "relevant_from": args.relevant_from,
            "panels": list(dict.fromkeys(args.panel)),
        }
        text = format_json(rows, settings)
    else:
        text = format_table(rows, level)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
