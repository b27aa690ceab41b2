"""Cascades: a cheap run labels every item and the items it is unsure of go to an expensive
run, evaluated from saved records and written as a virtual run; no new calls.

Rules (any that fires escalates the item):

- ``middle``: the cheap grade is a middle grade of the scale (neither lowest nor highest);
- ``unparseable``: the cheap run has no label for the item;
- ``disagree``: two cheap runs (e.g. two prompts) both label the item, differently;
- ``confidence``: the cheap answer states a confidence below ``min_confidence`` or states
  none. Only answers to prompts with ``confidence: true`` state one (``prompt=confidence``).

A cascade item takes the expensive label where it is escalated and the expensive run has a
label, else the first cheap run's label, else the second cheap run's. It costs the cheap
run(s)' cost plus, where escalated, the expensive run's; its latency is the cheap latency
plus the expensive one where escalated.

With runs judged several times (``runner.samples``), the cascade's sample k applies the rules
to the runs' sample-k answers (:func:`mmjudge.ensembles.virtual.sample_views`); its
escalation rate is its first sample's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from mmjudge.ensembles.panels import load_all
from mmjudge.ensembles.virtual import (
    Combined,
    combined_record,
    member,
    sample_views,
    write_virtual_run,
)
from mmjudge.errors import MMJudgeError
from mmjudge.prompts.parsing import parse_confidence
from mmjudge.records import JudgmentRecord
from mmjudge.store import Ensemble, Key, RunSummary, SavedRun, union_keys
from mmjudge.studies.members import check_members, grade_text, short_names

FloatArray = npt.NDArray[np.float64]

CASCADE_RULES = ("middle", "unparseable", "disagree", "confidence")
#: Stated confidence (1-5) below which the ``confidence`` rule escalates.
DEFAULT_MIN_CONFIDENCE = 4


def escalate(
    rules: Sequence[str],
    cheap: FloatArray,
    second: FloatArray | None,
    confidence: Sequence[int | None],
    grades: Sequence[int],
    min_confidence: int,
) -> npt.NDArray[np.bool_]:
    """Which items go to the expensive run."""
    low, high = min(grades), max(grades)
    out = np.zeros(cheap.shape, dtype=bool)
    for rule in rules:
        if rule == "middle":
            out |= ~np.isnan(cheap) & (cheap > low) & (cheap < high)
        elif rule == "unparseable":
            out |= np.isnan(cheap)
        elif rule == "disagree":
            assert second is not None
            out |= ~np.isnan(cheap) & ~np.isnan(second) & (cheap != second)
        elif rule == "confidence":
            out |= np.array([c is None or c < min_confidence for c in confidence], dtype=bool)
    return out


def _check_rules(rules: Sequence[str], n_cheap: int) -> None:
    unknown = [rule for rule in rules if rule not in CASCADE_RULES]
    if unknown or not rules:
        raise MMJudgeError(
            f"unknown cascade rule(s) {unknown or rules!r}; use any of {', '.join(CASCADE_RULES)}"
        )
    if not 1 <= n_cheap <= 2:
        raise MMJudgeError("a cascade takes one cheap run, or two for the 'disagree' rule")
    if "disagree" in rules and n_cheap != 2:
        raise MMJudgeError("the 'disagree' rule needs a second cheap run (two prompts or models)")


def _confidences(rules: Sequence[str], cheap: SavedRun, keys: Sequence[Key]) -> list[int | None]:
    """The confidence each cheap answer states (all None unless the rule needs them)."""
    if "confidence" not in rules:
        return [None] * len(keys)
    found = [
        parse_confidence(row.raw_output) if (row := cheap.rows.get(key)) is not None else None
        for key in keys
    ]
    if all(c is None for c in found):
        raise MMJudgeError(
            f"rule 'confidence': no answer of {cheap.name} states a confidence; "
            "run the cheap judge with a prompt that asks for one (prompt=confidence)"
        )
    return found


class _Decisions(NamedTuple):
    """The cascade's labels on the items, and where it escalated."""

    keys: list[Key]
    first: FloatArray
    second: FloatArray | None
    dear: FloatArray
    escalated: npt.NDArray[np.bool_]
    labels: FloatArray


def _decide(
    runs: Sequence[SavedRun], rules: Sequence[str], grades: list[int], min_confidence: int
) -> _Decisions:
    cheap_runs, dear = runs[:-1], runs[-1]
    keys = union_keys(runs)
    first = cheap_runs[0].labels(keys)
    second = cheap_runs[1].labels(keys) if len(cheap_runs) == 2 else None
    dear_labels = dear.labels(keys)
    confidence = _confidences(rules, cheap_runs[0], keys)
    escalated = escalate(rules, first, second, confidence, grades, min_confidence)
    fallback = first if second is None else np.where(np.isnan(first), second, first)
    labels = np.where(escalated & ~np.isnan(dear_labels), dear_labels, fallback)
    return _Decisions(keys, first, second, dear_labels, escalated, labels)


def _item(
    runs: Sequence[SavedRun], d: _Decisions, i: int
) -> tuple[list[JudgmentRecord | None], Combined]:
    """The member rows one cascade item used, and what it decided."""
    key = d.keys[i]
    cheap_rows = [run.rows.get(key) for run in runs[:-1]]
    dear_row = runs[-1].rows.get(key) if d.escalated[i] else None
    latency = max((row.latency_s or 0.0 for row in cheap_rows if row is not None), default=0.0)
    if dear_row is not None:
        latency += dear_row.latency_s or 0.0
    given = [d.first[i]] if d.second is None else [d.first[i], d.second[i]]
    votes = "/".join(grade_text(v) for v in given)
    text = (
        f"escalated: cheap {votes}, expensive {grade_text(d.dear[i])}"
        if d.escalated[i]
        else f"kept cheap {votes}"
    )
    return [*cheap_rows, dear_row], Combined(float(d.labels[i]), text, float(latency))


def build_cascade(
    cheap: Path | SavedRun | Sequence[Path | SavedRun],
    expensive: Path | SavedRun,
    out_dir: Path,
    *,
    rules: Sequence[str] = ("middle",),
    min_confidence: int = DEFAULT_MIN_CONFIDENCE,
) -> RunSummary:
    """A cascade from saved records: the cheap run(s) label every item, items that fire
    one of ``rules`` go to the expensive run. Written as a virtual run in ``out_dir``;
    returns its summary (with the escalation rate)."""
    cheap_list: list[Path | SavedRun] = (
        [cheap] if isinstance(cheap, Path | SavedRun) else list(cheap)
    )
    _check_rules(rules, len(cheap_list))
    runs = load_all([*cheap_list, expensive])
    grades, relevant_from = check_members(runs)
    shared, names = short_names(runs)
    rule_text = "+".join(rules)
    model = (
        f"cascade:{rule_text}({shared + ': ' if shared else ''}{'+'.join(names[:-1])}→{names[-1]})"
    )
    samples = [
        _records(views, _decide(views, rules, grades, min_confidence), out_dir.name, model)
        for views in sample_views(runs)
    ]
    decisions, records = samples[0]
    n_escalated = int(decisions.escalated.sum())
    ensemble = Ensemble(
        members=[
            *(member(run, out_dir, "cheap") for run in runs[:-1]),
            member(runs[-1], out_dir, "expensive"),
        ],
        rules=list(rules),
        min_confidence=min_confidence if "confidence" in rules else None,
        n_escalated=n_escalated,
        escalation_rate=n_escalated / len(decisions.keys) if decisions.keys else 0.0,
    )
    return write_virtual_run(
        out_dir,
        records,
        runs,
        kind="cascade",
        model=model,
        grades=grades,
        relevant_from=relevant_from,
        ensemble=ensemble,
        repeats={k: rows for k, (_, rows) in enumerate(samples) if k},
    )


def _records(
    runs: Sequence[SavedRun], decisions: _Decisions, run_id: str, model: str
) -> tuple[_Decisions, list[JudgmentRecord]]:
    """The cascade's rows from its runs' rows (of one sample), with the decisions behind them."""
    records = []
    for i, key in enumerate(decisions.keys):
        rows, combined = _item(runs, decisions, i)
        records.append(
            combined_record(
                run_id, runs, key, rows, provider="cascade", model=model, combined=combined
            )
        )
    return decisions, records
