"""Judges' label files scored against a human qrels file: the work of ``mmjudge agree``
(:func:`mmjudge.score_labels` is its typed entry), and the text, CSV and JSON it prints.

Each RUN_QRELS file (a judge's labels: TREC qrels, or JSON lines with ``query_id``,
``result_id`` and ``grade`` as the replay judge reads them; one judge per run of a file that
holds several) is scored against the human file
with :func:`mmjudge.metrics.scoring.score_judge`, the definition ``summary.json`` and the report
use, on the (query, doc) pairs both contain: n (those pairs), missing (human pairs the run
lacks), Cohen's κ unweighted, linear and quadratic, each with a 95% bootstrap interval that
resamples queries (1000 resamples, seed 0 unless told), κ on labels binarised at
``--relevant-from``, Krippendorff's α (ordinal, human and judge as the two raters) and
accuracy.

**Scale.** The grade scale is every whole number from the lowest to the highest grade of the
human file, or ``--scale`` (a human grade outside it is an error). κ's categories and
weights follow the scale. A judge grade outside the scale (published label files hold stray
5s on a 0–3 scale) is refused with a one-line message naming the file, line and grade,
unless ``--out-of-scale`` says otherwise: ``drop`` leaves the pair out, ``clip`` moves the
grade to the nearest grade of the scale, ``keep`` scores it as a category of its own. The
count of such grades is always printed (``off_scale``).

**System rankings.** With ``--runs DIR`` (TREC run files, one system per file), every
system is scored under the human labels and under each judge's labels with ir_measures
(``--measure``, repeatable; default nDCG@10 and P@10 counting grades ≥ ``--relevant-from``
as relevant), and the two orderings of the systems are compared by Kendall's τ-b,
Spearman's ρ and rank-biased overlap. Both sets of labels are restricted to the pairs both
graded, as in the sweep report (:func:`mmjudge.metrics.system_ranking_on_shared_items`).

**Trained judges.** With ``--trained DIR`` (repeatable; a folder ``mmjudge distill --out``
wrote), the pairs that judge learnt from are left out of the human file before anything is
scored, by the rule a run's summary and the report follow
(:func:`mmjudge.studies.run_agreement.scored`): its κ on them would be no held-out figure, and
every other judge and panel is scored on the same held-out pairs, so the rows stay
comparable. The count left out is printed (``left_out`` in the JSON settings).

**Slices.** With ``--slices FILE`` (a TSV of ``query<TAB>doc<TAB>slice``, or
``query<TAB>slice`` for all of a query's documents), each judge is also scored on each slice's
pairs alone (:func:`mmjudge.studies.slices.score_slices`), with a permutation test of whether
its κ depends on the slice, and its worst slice is named.

The labels are first aligned into a matrix (judges × human pairs, ``nan`` where a judge has
no label). Each judge's row is scored by :func:`score_labels`. A *panel* is a function from
that matrix to one label per pair; :func:`score_alignment` scores any panels it is given
the same way. ``--panel HOW`` (repeatable) adds a row ``panel:HOW`` that combines every run
file given, pair by pair, with :func:`mmjudge.metrics.aggregate.aggregate` (majority vote with a
tie-break, or the rounded mean; a run's missing label is ignored) on the scale;
``majority-random`` draws its tie-breaks with ``--seed``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from mmjudge.data.label_files import label_runs, one_run
from mmjudge.data.qrels import (
    Qrels,
    QrelsFile,
    Run,
    n_judgments,
    read_slices,
    read_systems,
    run_names,
    slice_of,
)
from mmjudge.display import interval, number
from mmjudge.errors import MMJudgeError
from mmjudge.judges.distilled_folder import read_manifest
from mmjudge.metrics import catalogue, scoring
from mmjudge.metrics.aggregate import panel
from mmjudge.metrics.catalogue import Comparison, Measure
from mmjudge.metrics.label_scale import Scale, apply_scale, human_scale
from mmjudge.metrics.ranking import RankingAgreement
from mmjudge.metrics.scoring import Interval
from mmjudge.studies.judge_files import (
    Alignment,
    JudgeAgreement,
    align,
    parse_measures,
    score_alignment,
    score_by_slice,
)
from mmjudge.studies.run_agreement import held_out_qrels
from mmjudge.studies.slices import SliceScores


def _fmt(value: float, digits: int = 3) -> str:
    return number(value, digits)


def _fmt_interval(value: Interval, digits: int = 3) -> str:
    return interval(value, digits)


def _shown() -> tuple[Measure, ...]:
    """The measures every row shows: the catalogue's, the judge against the human labels."""
    return catalogue.measures(Comparison.CONSENSUS)


def aligned_columns(header: list[str], body: list[list[str]]) -> str:
    """Plain-text columns: the first left-aligned, the others right-aligned."""
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]

    def render(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([render(header), rule, *(render(line) for line in body)]) + "\n"


def format_table(rows: Sequence[JudgeAgreement], level: float = scoring.LEVEL) -> str:
    """An aligned plain-text table, one line per judge (and one per judge and measure for
    the system rankings, when there are any)."""
    pct = f"{level * 100:g}% CI"
    shown = _shown()
    header = [
        "run",
        "n",
        "missing",
        "off_scale",
        *(f"{m.header} [{pct}]" if m.interval else m.header for m in shown),
    ]
    body = [
        [
            row.name,
            str(row.n),
            str(row.missing),
            str(row.off_scale),
            *(
                _fmt_interval(row.score[m.name], m.digits)
                if m.interval
                else _fmt(row.score.estimate(m.name), m.digits)
                for m in shown
            ),
        ]
        for row in rows
    ]
    text = aligned_columns(header, body)
    ranked = [row for row in rows if row.rankings]
    if ranked:
        lines = [
            [row.name, measure, str(len(r.human_scores)), *map(_fmt, _ordering(r))]
            for row in ranked
            for measure, r in (row.rankings or {}).items()
        ]
        text += "\nsystem rankings, human labels against each judge's (on the pairs both graded):\n"
        text += aligned_columns(["run", "measure", "systems", "tau", "rho", "rbo"], lines)
    return text


def format_csv(rows: Sequence[JudgeAgreement]) -> str:
    """CSV with one column per number (system-ranking columns named after their measure);
    undefined values are empty cells."""
    shown = _shown()
    header = ["run", "n", "missing", "off_scale"]
    for m in shown:
        header += [m.name, f"{m.name}_low", f"{m.name}_high"] if m.interval else [m.name]
    measures = list(dict.fromkeys(m for row in rows for m in row.rankings or {}))
    for measure in measures:
        header += [f"{measure} tau", f"{measure} rho", f"{measure} rbo"]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        cells: list[Any] = [row.name, row.n, row.missing, row.off_scale]
        for m in shown:
            value = row.score[m.name]
            cells += [value.estimate, value.low, value.high] if m.interval else [value.estimate]
        for measure in measures:
            found = (row.rankings or {}).get(measure)
            cells += [math.nan] * 3 if found is None else list(_ordering(found))
        writer.writerow(["" if isinstance(c, float) and math.isnan(c) else c for c in cells])
    return out.getvalue()


def _ordering(agreement: RankingAgreement) -> tuple[float, float, float]:
    """τ, ρ and RBO, the columns the text and CSV tables give a measure."""
    return agreement.kendall_tau, agreement.spearman_rho, agreement.rbo


def format_json(rows: Sequence[JudgeAgreement], settings: Mapping[str, Any]) -> str:
    """A JSON object: the settings used and one entry per judge (``null`` = undefined)."""
    return json.dumps({**settings, "runs": [row.as_dict() for row in rows]}, indent=2) + "\n"


def non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def parse_scale(text: str) -> list[int]:
    """``0,1,2,3`` (or ``0-3``) as a list of whole grades."""
    span = re.fullmatch(r"\s*(-?\d+)\s*-\s*(-?\d+)\s*", text)
    try:
        if span:
            grades = list(range(int(span[1]), int(span[2]) + 1))
        else:
            grades = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected whole grades such as 0,1,2,3 or 0-3, got {text!r}"
        ) from None
    if len(set(grades)) < 2:
        raise argparse.ArgumentTypeError(f"a scale needs at least two grades, got {text!r}")
    return grades


class Inputs(NamedTuple):
    """The command's files, read and checked."""

    human: QrelsFile
    scale: Scale
    judges: dict[str, Qrels]
    off_scale: dict[str, int]
    systems: dict[str, Run] | None


def read_inputs(
    human_path: str | Path,
    run_paths: Sequence[str | Path],
    scale: Sequence[int] | None = None,
    out_of_scale: str = "error",
    systems: str | Path | None = None,
) -> Inputs:
    """Read the human file, the judges' files (checked against the scale) and the system
    runs; any problem is an :class:`MMJudgeError` naming the file. Label files are TREC qrels
    or JSON lines (:mod:`mmjudge.data.label_files`, as the replay judge reads them); a judge's
    file holding several runs gives one judge per run, named ``FILE:RUN``."""
    human = one_run(human_path)
    on = human_scale(human, scale)
    judges, off_scale = {}, {}
    for name, path in zip(run_names(run_paths), run_paths, strict=True):
        runs = label_runs(path)
        for run, found in runs.items():
            label = name if len(runs) == 1 else f"{name}:{run}"
            judges[label], off_scale[label] = apply_scale(found, on, out_of_scale)
    read = read_systems(systems) if systems else None
    return Inputs(human, on, judges, off_scale, read)


class Scored(NamedTuple):
    """The command's result: one row per judge and panel, and the settings it used."""

    inputs: Inputs
    rows: list[JudgeAgreement]
    settings: dict[str, Any]
    """What ``--format json`` prints before the rows."""
    slices: dict[str, SliceScores] | None = None
    """Each judge's scores by slice (with ``--slices``)."""


def _shown_settings(
    human: str | Path, inputs: Inputs, out_of_scale: str, n_boot: int, seed: int
) -> dict[str, Any]:
    """The settings ``--format json`` prints first: the human file and its pairs scored, the
    scale, and the bootstrap's."""
    return {
        "human": str(human),
        "n_human": n_judgments(inputs.human.qrels),
        "scale": inputs.scale.grades,
        "scale_source": inputs.scale.source,
        "out_of_scale": out_of_scale,
        "n_boot": n_boot,
        "seed": seed,
    }


def categories(scale: Scale, alignment: Alignment, out_of_scale: str) -> list[float]:
    """The grades κ counts as categories: the scale's, and with ``keep`` every grade off it a
    judge gave."""
    grades = [float(g) for g in scale.grades]
    if out_of_scale == "keep":
        seen = alignment.judges[~np.isnan(alignment.judges)]
        grades = sorted(set(grades) | {float(g) for g in seen})
    return grades


class HeldOutInputs(NamedTuple):
    """The inputs with the human pairs trained judges learnt from taken out."""

    inputs: Inputs
    """What is left to score."""
    left_out: int
    """Human pairs taken out."""


def without_training_pairs(inputs: Inputs, trained: Sequence[str | Path]) -> HeldOutInputs:
    """``inputs`` less the human pairs the judges in ``trained`` (their folders) learnt from,
    by :func:`mmjudge.studies.run_agreement.held_out_qrels`."""
    if not trained:
        return HeldOutInputs(inputs, 0)
    learnt = frozenset(key for folder in trained for key in read_manifest(folder).trained_items)
    held = held_out_qrels(inputs.human.qrels, learnt)
    return HeldOutInputs(
        inputs._replace(human=inputs.human._replace(qrels=held.qrels)), held.n_left_out
    )


def score_files(
    human: str | Path,
    runs: Sequence[str | Path],
    *,
    scale: Sequence[int] | None = None,
    out_of_scale: str = "error",
    relevant_from: float | None = None,
    panels: Sequence[str] = (),
    n_boot: int = scoring.N_BOOT,
    seed: int = scoring.SEED,
    systems: str | Path | None = None,
    measures: Sequence[str] = (),
    slices: str | Path | None = None,
    trained: Sequence[str | Path] = (),
) -> Scored:
    """Score every judge's label file (and each panel of them) against the human file, as
    the command does; raises :class:`MMJudgeError` naming a file that cannot be used.
    ``trained``: folders of trained judges whose training pairs are left out (see above)."""
    level = scoring.LEVEL
    inputs, left_out = without_training_pairs(
        read_inputs(human, runs, scale, out_of_scale, systems), trained
    )
    alignment = align(inputs.human.qrels, inputs.judges)
    grades = categories(inputs.scale, alignment, out_of_scale)
    threshold = scoring.relevance_threshold(
        np.asarray(inputs.scale.grades, dtype=float), relevant_from
    )
    parsed = parse_measures(list(measures), threshold) if inputs.systems else None
    hows = list(dict.fromkeys(panels))
    rows = score_alignment(
        alignment,
        panels={how: panel(how, grades, seed) for how in hows},
        grades=grades,
        relevant_from=threshold,
        n_boot=n_boot,
        seed=seed,
        level=level,
        off_scale=inputs.off_scale,
        systems=inputs.systems,
        measures=parsed,
    )
    settings = {
        **_shown_settings(human, inputs, out_of_scale, n_boot, seed),
        "level": level,
        "relevant_from": threshold,
        "panels": hows,
        "systems": sorted(inputs.systems) if inputs.systems else None,
        "trained": [str(folder) for folder in trained],
        "left_out": left_out,
    }
    by_slice = None
    if slices is not None:
        names, settings["slices"] = pair_slices(alignment, slices, human), str(slices)
        by_slice = score_by_slice(alignment, names, grades, threshold, n_boot=n_boot, seed=seed)
    return Scored(inputs, list(rows), settings, by_slice)


def pair_slices(alignment: Alignment, slices: str | Path, human: str | Path) -> list[str | None]:
    """The slice of each human pair, read from the slices file (None where it names none)."""
    table = read_slices(slices)
    pairs = zip(alignment.query_ids, alignment.doc_ids, strict=True)
    names = [slice_of(table, str(q), str(d)) for q, d in pairs]
    if not any(names):
        raise MMJudgeError(f"{slices}: names no (query, doc) pair of {human}; check its ids")
    return names


def format_slices(by_slice: Mapping[str, SliceScores], level: float = scoring.LEVEL) -> str:
    """One line per judge and slice: n and κ with its interval; then each judge's worst
    slice and the p-value of the test of whether its κ depends on the slice."""
    pct = f"{level * 100:g}% CI"
    body = [
        [name, slice_name, str(score.n_items), _fmt_interval(score.kappa)]
        for name, found in by_slice.items()
        for slice_name, score in found.scores.items()
    ]
    text = aligned_columns(["run", "slice", "n", f"kappa [{pct}]"], body)
    text += (
        "\nworst slice of each judge; p: does its kappa depend on the slice (permutation test)\n"
    )
    summary = [[name, found.worst or "-", _fmt(found.p_value)] for name, found in by_slice.items()]
    return text + aligned_columns(["run", "worst", "p"], summary)


def slices_json(by_slice: Mapping[str, SliceScores]) -> dict[str, Any]:
    """``--format json``'s ``slices`` entry: per judge, each slice's score, the worst, p."""
    return {
        name: {
            "worst": found.worst,
            "p_value": None if math.isnan(found.p_value) else found.p_value,
            "slices": {key: score.as_dict() for key, score in found.scores.items()},
        }
        for name, found in by_slice.items()
    }


def left_out_line(settings: Mapping[str, Any]) -> str:
    """What the table says of the pairs left out for trained judges."""
    return (
        f"left out: {settings['left_out']} human pairs the trained judge "
        f"({', '.join(settings['trained'])}) learnt from; every row is scored on the "
        f"{settings['n_human']} held-out pairs\n"
    )


def render(scored: Scored, form: str = "table") -> str:
    """The command's output for ``--format`` ``table``, ``csv`` or ``json``."""
    if form == "csv":
        return format_csv(scored.rows)
    if form == "json":
        settings = scored.settings
        if scored.slices is not None:
            settings = {**settings, "by_slice": slices_json(scored.slices)}
        return format_json(scored.rows, settings)
    scale = scored.inputs.scale
    text = format_table(scored.rows, scored.settings["level"]) + (
        f"\nscale {scale.text()} ({scale.source}); grades off the scale: "
        f"{scored.settings['out_of_scale']}\n"
    )
    if scored.settings["trained"]:
        text += left_out_line(scored.settings)
    if scored.slices is not None:
        text += "\nby slice:\n" + format_slices(scored.slices, scored.settings["level"])
    return text
