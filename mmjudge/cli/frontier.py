"""The cheapest judge that is as good as the best one, per dataset.

    mmjudge frontier SWEEP_DIR [--n-boot 1000] [--seed 0] [--level 0.95]
                   [--format table|json]

For each dataset under SWEEP_DIR:

1. the *best single judge*: the real run (any model × prompt × modality) with the highest
   Cohen's κ against the annotators' consensus on the items it graded, printed with its
   interval and its α exactly as the report and ``summary.json`` give them;
2. every candidate (real runs, panels and cascades, the best included) is compared with it
   on the items both graded, by :func:`~mmjudge.metrics.scoring.compare_judges`, the
   function behind the report's comparisons: κ of both on those shared items,
   Δκ = κ(best) − κ(candidate) with its paired query-bootstrap interval and p-value. A
   candidate whose interval reaches 0 or below is *not distinguishably worse* than the best;
3. the answer is the cheapest such candidate by $ per million judgments (ties: the higher
   κ, then the name) whose own κ interval lies above 0, the κ of a judge answering at
   random. When none does, no judge is named: the dataset's line says that no judge agrees
   with people better than chance, with the best κ and its interval. On the folder of a
   race (``mmjudge race``) that decided, the race's choice is the answer (when its κ
   interval lies above 0), as on the report's card; a race that did not decide is named
   beside the answer, with why the two differ.

Each κ line shows chance (0) and the human–human κ beside it.

Which people's grades: the dataset's own, where it has any. On the folder of a race that
asked people for grades as it went (``race.labels=ask``) over a dataset without grades, the
grades it asked for, each weighted 1/π (its inclusion probability), with the design's
intervals instead of the bootstrap's (:mod:`mmjudge.studies.asked_agreement`); the
``grades`` line says which, and how many were asked in how many rounds.

Every κ printed says which items it is on. The best judge is picked on the very items it is
scored on, so its κ flatters it; ``mmjudge select`` estimates what choosing costs
on held-out queries.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mmjudge.cli.exits import fail
from mmjudge.display import MISSING, interval, number, price, usd_per_million
from mmjudge.errors import MMJudgeError
from mmjudge.store import Bounds, completed_runs
from mmjudge.studies.frontier import (
    FrontierAnswer,
    FrontierCandidate,
    KappaDifference,
    frontier_answer,
)

PROG = "mmjudge frontier"


def _fmt(value: float | None) -> str:
    return number(value)


def _interval(value: Bounds | KappaDifference | None) -> str:
    return MISSING if value is None else interval(value)


def _p(value: float | None) -> str:
    if value is None:
        return MISSING
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _scale(a: FrontierAnswer) -> str:
    """Chance and the human–human κ, for the line of the best judge's κ."""
    humans = a.human_kappa
    if not humans:
        shown = "– (fewer than two annotators)"
    elif humans.low == humans.high:
        shown = _fmt(humans.low)
    else:
        shown = f"{_fmt(humans.low)}–{_fmt(humans.high)}"
    return f"chance {_fmt(a.chance)}, humans {shown}"


def _answer_lines(a: FrontierAnswer, pct: str) -> list[str]:
    """The cheapest judge as good as the best, or why there is none."""
    answer, best = a.answer, a.best
    if answer is None:
        if not best.above_chance:
            return [
                "  no judge to use     no judge on this dataset agrees with people better "
                f"than chance: the best κ, {_interval(best.kappa)}, has a {pct} interval "
                "that reaches 0"
            ]
        return [
            "  no judge to use     every judge as good as the best may be no better than "
            f"chance (its {pct} interval reaches 0)"
        ]
    difference = answer.difference
    p_value = None if difference is None else difference.p_value
    return [
        f"  cheapest as good    {answer.name} ({answer.kind})  "
        f"{usd_per_million(answer.usd_per_million)}",
        f"    on the {answer.n_items} items both graded: κ(best) "
        f"{_fmt(answer.kappa_best)}, κ {_fmt(answer.kappa)}",
        f"    κ(best) − κ: {_interval(difference)}, p {_p(p_value)} ({pct} interval, "
        + (
            "the design's linearised error, each item weighted 1/π)"
            if a.weighted
            else f"paired bootstrap over {answer.n_queries} queries)"
        ),
    ]


def _race_lines(a: FrontierAnswer) -> list[str]:
    """What the folder's race chose, and why the answer differs when it does."""
    race = a.race
    if not race or race.chosen is None:
        return [f"  race                {race.note}"] if race and race.note else []
    how = "decided: the answer" if race.decided else f"ended: {race.ending}"
    lines = [f"  race chose          {race.chosen} ({how})"]
    if race.note:
        lines.append(f"    {race.note}")
    return lines


def format_table(answers: Sequence[FrontierAnswer]) -> str:
    out: list[str] = []
    for a in answers:
        best = a.best
        pct = f"{a.level * 100:g}%"
        title = "best single judge" if best.above_chance else "highest κ"
        out += [
            f"{a.dataset}:",
            f"  {title:<17}   {best.name}  κ {_interval(best.kappa)} ({pct} "
            f"interval; {_scale(a)}), α {_fmt(best.alpha)} on its {best.n_items} "
            f"{'asked items' if a.weighted else 'items'}  "
            f"{usd_per_million(best.usd_per_million)}",
            *_answer_lines(a, pct),
            *_race_lines(a),
            f"  grades: {a.grades}",
            *([f"    {a.not_read}"] if a.not_read else []),
            f"  note: {a.note}",
            "",
        ]
        out += _candidate_table(a.candidates, pct)
        out.append("")
    return "\n".join(out)


def _candidate_table(candidates: Sequence[FrontierCandidate], pct: str) -> list[str]:
    """One line per candidate; every κ on the items it shares with the best judge."""
    header = [
        "candidate",
        "kind",
        "$/million",
        "shared items",
        "κ(best)",
        "κ",
        f"κ(best) − κ [{pct}]",
        "p",
        "as good",
    ]
    body = [
        [
            c.name,
            c.kind,
            price(c.usd_per_million),
            str(c.n_items),
            _fmt(c.kappa_best),
            _fmt(c.kappa),
            _interval(c.difference),
            _p(None if c.difference is None else c.difference.p_value),
            "yes" if c.qualifies else "no",
        ]
        for c in candidates
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = []
    for row in [header, ["-" * w for w in widths], *body]:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + [
            cell.rjust(width) for cell, width in zip(row[2:], widths[2:], strict=True)
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    return lines


def _json_block(fields: list[tuple[str, Any]]) -> dict[str, Any]:
    """A block of the JSON: a candidate's ``above_chance`` only where it was checked."""
    return {key: value for key, value in fields if not (key == "above_chance" and value is None)}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Per dataset: the best single judge, and the cheapest judge, panel or "
        "cascade whose κ is not distinguishably lower.",
    )
    p.add_argument("sweep_dir", metavar="SWEEP_DIR", type=Path, help="a sweep (or results) dir")
    p.add_argument("--dataset", help="only this dataset")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--level", type=float, default=0.95, help="interval coverage (default 0.95)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.n_boot < 1:
            raise MMJudgeError(f"--n-boot must be at least 1, got {args.n_boot}")
        if not 0.0 < args.level < 1.0:
            raise MMJudgeError(f"--level must lie between 0 and 1, got {args.level}")
        answers = frontier_answer(
            completed_runs(Path(args.sweep_dir)),
            n_boot=args.n_boot,
            seed=args.seed,
            level=args.level,
            dataset=args.dataset,
            root=Path(args.sweep_dir),
        )
        if not answers:
            raise MMJudgeError(f"{args.sweep_dir}: no completed run with a defined κ below it")
    except MMJudgeError as error:
        return fail(PROG, error)
    if args.format == "json":
        shown = [dataclasses.asdict(a, dict_factory=_json_block) for a in answers]
        sys.stdout.write(json.dumps({"datasets": shown}, indent=2) + "\n")
    else:
        sys.stdout.write(format_table(answers))
    return 0
