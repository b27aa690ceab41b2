"""Ensembles evaluated from saved records: panels and cascades, with no new calls.

A *panel* combines several runs on the same dataset (several prompts on one model, or several
models) item by item; a *cascade* lets a cheap run label every item and hands the items it
is unsure about to an expensive run. Both are written as *virtual runs*: a directory with a
``judgments.jsonl`` in the :class:`~mmjudge.records.JudgmentRecord` layout (provider
``panel`` or ``cascade``) and a ``summary.json`` with the usual keys plus ``kind``,
``members`` and the combining settings, so the report shows them beside the real runs.

Definitions
-----------

Items are aligned by ``(query_id, result_id)``; an item any member judged is an item of the
ensemble. A member's missing label (an unparseable answer, a failed call, or no row for the
item) is ignored; an item no member labels stays unlabelled (counted as unparseable).

Aggregators (``how``):

- ``majority`` (= ``majority-mean``): the grade most members gave; a tie between several
  grades is broken by the rounded mean of the tied grades;
- ``majority-max`` / ``majority-min``: ties go to the highest / lowest tied grade;
- ``majority-random``: ties go to a tied grade drawn at random (seeded; items are drawn in
  their order of first appearance, so the same members and seed give the same labels);
- ``mean``: the rounded mean of every member's grade.

Rounding is half up onto the scale: the grade nearest to the mean, and an exact half goes to
the higher grade (a tie between 1 and 2 gives 2, the mean 0.5 gives 1). On a scale with
gaps (0, 1, 3) the nearest grade on the scale is taken, halves again upwards.

Cost of an ensemble judgment: a panel item costs the sum of its members' costs on that item
(text and image parts alike, failed calls included); a cascade item costs the cheap run(s)'
cost plus, where the item is escalated, the expensive run's cost. Tokens and usage buckets
add up the same way. Latency: a panel's is its slowest member's (members can be called at
once); a cascade's is the cheap latency plus the expensive one where escalated.

Cascade rules (any that fires escalates the item):

- ``middle``: the cheap grade is a middle grade of the scale (neither lowest nor highest);
- ``unparseable``: the cheap run has no label for the item;
- ``disagree``: two cheap runs (e.g. two prompts) both label the item, differently;
- ``confidence``: the cheap answer states a confidence below ``min_confidence`` or states
  none. Only answers to prompts with ``confidence: true`` state one (``prompt=confidence``).

A cascade item takes the expensive label where it is escalated and the expensive run has a
label, else the first cheap run's label, else the second cheap run's.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mmjudge.errors import MMJudgeError
from mmjudge.parsing import parse_confidence
from mmjudge.records import SCHEMA_VERSION, JudgmentRecord
from mmjudge.results import JUDGMENTS, SUMMARY, iter_rows, load_judgments, read_summary, run_dirs

FloatArray = npt.NDArray[np.float64]
Key = tuple[str, str]

#: Sub-directory of a sweep that holds its virtual runs.
ENSEMBLES = "ensembles"
AGGREGATORS = (
    "majority",
    "majority-mean",
    "majority-max",
    "majority-min",
    "majority-random",
    "mean",
)
CASCADE_RULES = ("middle", "unparseable", "disagree", "confidence")
#: Rules of the cascades built automatically after a sweep.
DEFAULT_CASCADE_RULES = ("middle", "unparseable")
#: Stated confidence (1-5) below which the ``confidence`` rule escalates.
DEFAULT_MIN_CONFIDENCE = 4


# --------------------------------------------------------------------------- aggregation


def round_to_scale(values: Any, grades: Sequence[float] | FloatArray) -> FloatArray:
    """Each value moved to the nearest grade of ``grades``, exact halves upwards; ``nan``
    stays ``nan``."""
    x = np.asarray(values, dtype=float)
    scale = np.sort(np.asarray(grades, dtype=float))
    if scale.size == 0:
        raise ValueError("cannot round onto an empty scale")
    distance = np.abs(x[..., None] - scale)
    # the last (highest) of the nearest grades wins a tie: search the reversed scale
    nearest = scale.size - 1 - np.argmin(distance[..., ::-1], axis=-1)
    out = scale[nearest]
    return np.where(np.isnan(x), np.nan, out)


def _scale_of(matrix: FloatArray, grades: Sequence[float] | None) -> FloatArray:
    if grades is not None:
        return np.sort(np.asarray(grades, dtype=float))
    present = matrix[~np.isnan(matrix)]
    if present.size == 0:
        return np.empty(0)
    return np.arange(np.floor(present.min()), np.floor(present.max()) + 1.0)


def aggregate(
    matrix: Any,
    how: str = "majority",
    grades: Sequence[float] | None = None,
    seed: int = 0,
) -> FloatArray:
    """One label per item (column) from a members × items matrix (``nan`` = no label).

    ``grades`` is the scale (default: every whole number from the lowest to the highest
    label seen). See the module docstring for the aggregators and the rounding rule.
    """
    if how not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {how!r}; use one of {', '.join(AGGREGATORS)}")
    m = np.atleast_2d(np.asarray(matrix, dtype=float))
    scale = _scale_of(m, grades)
    m = np.where(np.isin(m, scale), m, np.nan)  # a label off the scale counts as none
    n_items = m.shape[1]
    present = ~np.isnan(m)
    given = present.sum(axis=0)
    if scale.size == 0:
        return np.full(n_items, np.nan)
    if how == "mean":
        with np.errstate(invalid="ignore"):
            means = np.where(present, m, 0.0).sum(axis=0) / np.where(given > 0, given, 1)
        return np.where(given > 0, round_to_scale(means, scale), np.nan)
    counts = (m[:, :, None] == scale[None, None, :]).sum(axis=0)  # items × grades
    top = counts.max(axis=1, keepdims=True)
    tied = (counts == top) & (top > 0)
    n_tied = tied.sum(axis=1)
    tie_break = how.split("-", 1)[1] if "-" in how else "mean"
    if tie_break == "max":
        choice = scale[scale.size - 1 - np.argmax(tied[:, ::-1], axis=1)]
    elif tie_break == "min":
        choice = scale[np.argmax(tied, axis=1)]
    elif tie_break == "random":
        rng = np.random.default_rng(seed)
        keys = np.where(tied, rng.random(tied.shape), -1.0)
        choice = scale[np.argmax(keys, axis=1)]
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            tied_mean = (tied * scale).sum(axis=1) / np.where(n_tied > 0, n_tied, 1)
        choice = round_to_scale(tied_mean, scale)
    return np.where(given > 0, choice, np.nan)


def panel(
    how: str = "majority", grades: Sequence[float] | None = None, seed: int = 0
) -> Callable[[FloatArray], FloatArray]:
    """A panel function for :func:`mmjudge.agree.score_alignment`."""
    if how not in AGGREGATORS:
        raise ValueError(f"unknown aggregator {how!r}; use one of {', '.join(AGGREGATORS)}")
    return lambda matrix: aggregate(matrix, how, grades, seed)


# --------------------------------------------------------------------------- saved runs


@dataclass
class SavedRun:
    """A run directory read back: its summary and its rows keyed by (query, result)."""

    run_dir: Path
    summary: dict[str, Any]
    rows: dict[Key, dict[str, Any]]
    """The judgment rows in file order (a key written twice keeps its last row)."""

    @property
    def kind(self) -> str:
        """``single`` for a real run, ``panel`` or ``cascade`` for a virtual one."""
        return str(self.summary.get("kind") or "single")

    @property
    def name(self) -> str:
        """A readable label: ``model/prompt/modality`` (for an ensemble over several prompts,
        whose model name lists them: ``model/modality``)."""
        s = self.summary
        if "+" in str(s.get("prompt_id")):
            return f"{s.get('model')}/{s.get('modality')}"
        return f"{s.get('model')}/{s.get('prompt_id')}/{s.get('modality')}"

    @property
    def grades(self) -> list[int]:
        return [int(g) for g in self.summary.get("grades") or []]

    @property
    def relevant_from(self) -> float | None:
        value = (self.summary.get("metrics") or {}).get("relevant_from")
        if value is None:
            scale = ((self.summary.get("config") or {}).get("dataset") or {}).get("scale") or {}
            value = scale.get("relevant_from")
        return None if value is None else float(value)

    @property
    def usd_per_million(self) -> float:
        return float((self.summary.get("cost") or {}).get("usd_per_million") or 0.0)

    def labels(self, keys: Sequence[Key]) -> FloatArray:
        """The run's label for each key, ``nan`` where it has none."""
        out = np.full(len(keys), np.nan)
        for i, key in enumerate(keys):
            row = self.rows.get(key)
            if row is not None and row.get("label") is not None:
                out[i] = float(row["label"])
        return out


def load_run(run_dir: Path) -> SavedRun:
    """Read a run (real or virtual) directory."""
    run_dir = Path(run_dir)
    if not (run_dir / SUMMARY).is_file():
        raise MMJudgeError(f"{run_dir}: not a run directory (no {SUMMARY})")
    rows: dict[Key, dict[str, Any]] = {}
    path = run_dir / JUDGMENTS
    if path.is_file():
        for row in iter_rows(path):
            rows[(str(row["query_id"]), str(row["result_id"]))] = row
    return SavedRun(run_dir, read_summary(run_dir), rows)


def completed_runs(root: Path, *, include_virtual: bool = True) -> list[SavedRun]:
    """Completed runs (complete or partial, see :data:`mmjudge.status.ANALYSED`) with
    judgments at or below ``root``, real ones first found."""
    from mmjudge.status import ANALYSED

    out = []
    for run_dir in run_dirs(Path(root)):
        summary = read_summary(run_dir)
        if summary.get("status", "complete") not in ANALYSED or not summary.get("n_judgments"):
            continue
        if not include_virtual and summary.get("kind", "single") != "single":
            continue
        out.append(load_run(run_dir))
    return out


def human_consensus(runs: Sequence[SavedRun], keys: Sequence[Key]) -> FloatArray:
    """The annotators' consensus grade (lower median, as in the summaries) for each key,
    taken from the first run that has a row for it."""
    from mmjudge.metrics import consensus

    per_key: list[dict[str, int]] = []
    for key in keys:
        labels: dict[str, int] = {}
        for run in runs:
            row = run.rows.get(key)
            if row is not None:
                labels = row.get("human_labels") or {}
                break
        per_key.append(labels)
    names = sorted({name for labels in per_key for name in labels})
    if not names:
        return np.full(len(keys), np.nan)
    columns = {
        name: np.array(
            [math.nan if labels.get(name) is None else float(labels[name]) for labels in per_key]
        )
        for name in names
    }
    return consensus(columns)


def common_keys(runs: Sequence[SavedRun]) -> list[Key]:
    """Keys every run has a row for, in the first run's order."""
    if not runs:
        return []
    rest = [set(run.rows) for run in runs[1:]]
    return [key for key in runs[0].rows if all(key in other for other in rest)]


def _union_keys(runs: Sequence[SavedRun]) -> list[Key]:
    return list(dict.fromkeys(itertools.chain.from_iterable(run.rows for run in runs)))


# --------------------------------------------------------------------------- naming


def _short_names(runs: Sequence[SavedRun]) -> tuple[str, list[str]]:
    """(what all runs share, what tells each apart) from model, prompt and modality."""
    parts = [tuple(str(r.summary.get(k)) for k in ("model", "prompt_id", "modality")) for r in runs]
    varying = [i for i in range(3) if len({p[i] for p in parts}) > 1]
    if not varying:
        return parts[0][0], [r.run_dir.name for r in runs]
    shared = parts[0][0] if 0 not in varying else ""
    return shared, ["/".join(p[i] for i in varying) for p in parts]


def _joined(values: Iterable[Any]) -> str:
    return "+".join(dict.fromkeys(str(v) for v in values))


def _common(runs: Sequence[SavedRun], field: str) -> str:
    return _joined(run.summary.get(field) for run in runs)


# --------------------------------------------------------------------------- virtual runs


def _check_members(runs: Sequence[SavedRun]) -> tuple[list[int], float | None]:
    datasets = {run.summary.get("dataset") for run in runs}
    if len(datasets) != 1:
        names = ", ".join(sorted(str(d) for d in datasets))
        raise MMJudgeError(f"ensemble members must share one dataset, got: {names}")
    scales = {tuple(run.grades) for run in runs}
    if len(scales) != 1:
        raise MMJudgeError(f"ensemble members use different grade scales: {sorted(scales)}")
    grades = list(scales.pop())
    if not grades:
        raise MMJudgeError(f"{runs[0].run_dir}: summary.json lists no grades")
    return grades, runs[0].relevant_from


def _sum_usage(rows: Iterable[dict[str, Any] | None]) -> dict[str, int]:
    total: dict[str, int] = {}
    for row in rows:
        if row is None:
            continue
        for key, value in (row.get("usage") or {}).items():
            total[key] = total.get(key, 0) + int(value or 0)
    return total


def _combined_record(
    run_id: str,
    runs: Sequence[SavedRun],
    key: Key,
    rows: Sequence[dict[str, Any] | None],
    *,
    provider: str,
    model: str,
    label: float,
    explanation: str,
    latency_s: float,
) -> JudgmentRecord:
    """One virtual row from the rows its members paid for (``None``: not paid for)."""
    paid = [row for row in rows if row is not None]
    first = next((run.rows[key] for run in runs if key in run.rows), {})
    parse_error = error = None
    if math.isnan(label):
        if paid and all(row.get("error") for row in paid):
            error = f"no member answered ({paid[0].get('error')})"
        else:
            parse_error = "no member gave a parseable grade"
    images = list(dict.fromkeys(h for row in paid for h in row.get("image_sha256s") or []))
    return JudgmentRecord(
        run_id=run_id,
        dataset=str(first.get("dataset")),
        query_id=key[0],
        result_id=key[1],
        modality=_joined(row.get("modality") for row in paid) or str(first.get("modality")),
        provider=provider,
        model=model,
        prompt_id=_joined(row.get("prompt_id") for row in paid) or str(first.get("prompt_id")),
        prompt_hash=None,
        image_sha256s=images,
        raw_output=None,
        label=None if math.isnan(label) else int(label),
        explanation=explanation,
        parse_error=parse_error,
        human_labels=dict(first.get("human_labels") or {}),
        input_tokens=sum(int(row.get("input_tokens") or 0) for row in paid),
        output_tokens=sum(int(row.get("output_tokens") or 0) for row in paid),
        cost_usd=sum(float(row.get("cost_usd") or 0.0) for row in paid),
        latency_s=round(latency_s, 6),
        cached=bool(paid) and all(bool(row.get("cached")) for row in paid),
        error=error,
        timestamp=datetime.now(UTC).isoformat(timespec="seconds"),
        usage=_sum_usage(paid),
        image_cost_usd=sum(float(row.get("image_cost_usd") or 0.0) for row in paid),
        truncated=any(bool(row.get("truncated")) for row in paid),
        schema_version=SCHEMA_VERSION,
    )


def _member_entry(run: SavedRun, out_dir: Path, role: str) -> dict[str, Any]:
    try:
        where = os.path.relpath(run.run_dir, out_dir)
    except ValueError:  # another drive
        where = str(run.run_dir)
    return {
        "role": role,
        "run_id": run.summary.get("run_id", run.run_dir.name),
        "run_dir": where,
        "model": run.summary.get("model"),
        "prompt_id": run.summary.get("prompt_id"),
        "modality": run.summary.get("modality"),
        "kappa": (run.summary.get("metrics") or {}).get("kappa"),
        "usd_per_million": run.usd_per_million,
    }


def _write_virtual_run(
    out_dir: Path,
    records: Sequence[JudgmentRecord],
    runs: Sequence[SavedRun],
    *,
    kind: str,
    model: str,
    grades: list[int],
    relevant_from: float | None,
    settings: Mapping[str, Any],
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """Write ``records`` and a summary computed from them, in the layout of real runs.

    ``settings`` (how the ensemble was combined) go into the summary's top level and its
    ``config``; ``extra`` (members, counts) into its top level."""
    from mmjudge.summary import (
        SUMMARY_SCHEMA_VERSION,
        agreement,
        cost_summary,
        git_commit,
        package_versions,
    )

    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / (JUDGMENTS + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(record.to_json() + "\n")
    os.replace(tmp, out_dir / JUDGMENTS)
    frame = load_judgments(out_dir / JUDGMENTS)
    n = len(frame)
    answered = frame[frame["error"].isna()] if n else frame
    threshold = relevant_from if relevant_from is not None else None
    if threshold is None:
        from mmjudge.metrics import default_relevant_from

        threshold = default_relevant_from(grades)
    cost = cost_summary(frame)
    cost["spent_usd"] = 0.0  # nothing new was paid for: the members' calls were
    summary: dict[str, Any] = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "kind": kind,
        "run_id": out_dir.name,
        "status": "complete",
        "skip_reason": None,
        "dataset": runs[0].summary.get("dataset"),
        "model": model,
        "model_id": model,
        "provider": kind,
        "modality": _common(runs, "modality"),
        "prompt_id": _common(runs, "prompt_id"),
        "pricing_sheet": _common(runs, "pricing_sheet"),
        "grades": grades,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "n_judgments": n,
        "n_errors": int(frame["error"].notna().sum()) if n else 0,
        "n_unparseable": int((frame["error"].isna() & frame["label"].isna()).sum()) if n else 0,
        "n_truncated": int(frame["truncated"].sum()) if n else 0,
        "metrics": agreement(answered, grades, int(threshold)),
        "cost": cost,
        "tokens": {
            "mean_input": float(answered["input_tokens"].mean()) if len(answered) else 0.0,
            "mean_output": float(answered["output_tokens"].mean()) if len(answered) else 0.0,
            "mean_image": float(answered["image_tokens"].mean()) if len(answered) else 0.0,
        },
        "latency_s": {
            "p50": float(answered["latency_s"].quantile(0.5)) if len(answered) else 0.0,
            "p95": float(answered["latency_s"].quantile(0.95)) if len(answered) else 0.0,
        },
        "calls": {},
        **settings,
        **extra,
        "config": {"ensemble": {"kind": kind, **settings}},
        "packages": package_versions(),
        "git_commit": git_commit(),
    }
    tmp = out_dir / (SUMMARY + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2, default=_jsonable) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / SUMMARY)
    return summary


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    raise TypeError(f"cannot write {type(value).__name__} to summary.json")


def _load_all(paths: Sequence[Path | SavedRun]) -> list[SavedRun]:
    return [p if isinstance(p, SavedRun) else load_run(Path(p)) for p in paths]


def _grade_text(value: float) -> str:
    return "-" if math.isnan(value) else str(int(value))


# --------------------------------------------------------------------------- panels


def build_panel(
    members: Sequence[Path | SavedRun],
    out_dir: Path,
    *,
    how: str = "majority",
    seed: int = 0,
) -> dict[str, Any]:
    """Combine ``members`` item by item and write the panel as a virtual run in
    ``out_dir``; returns its summary."""
    if how not in AGGREGATORS:
        raise MMJudgeError(f"unknown aggregator {how!r}; use one of {', '.join(AGGREGATORS)}")
    runs = _load_all(members)
    if len(runs) < 2:
        raise MMJudgeError("a panel needs at least two member runs")
    grades, relevant_from = _check_members(runs)
    keys = _union_keys(runs)
    matrix = np.vstack([run.labels(keys) for run in runs])
    labels = aggregate(matrix, how, grades, seed)
    shared, names = _short_names(runs)
    model = f"panel:{how}({shared + ': ' if shared else ''}{'+'.join(names)})"
    records = []
    for i, key in enumerate(keys):
        rows = [run.rows.get(key) for run in runs]
        votes = ", ".join(
            f"{name}={_grade_text(v)}" for name, v in zip(names, matrix[:, i], strict=True)
        )
        latencies = [float(row.get("latency_s") or 0.0) for row in rows if row is not None]
        records.append(
            _combined_record(
                out_dir.name,
                runs,
                key,
                rows,
                provider="panel",
                model=model,
                label=float(labels[i]),
                explanation=f"{how} of {votes}",
                latency_s=max(latencies, default=0.0),
            )
        )
    return _write_virtual_run(
        out_dir,
        records,
        runs,
        kind="panel",
        model=model,
        grades=grades,
        relevant_from=relevant_from,
        settings={"aggregator": how, "seed": seed},
        extra={"members": [_member_entry(run, out_dir, "member") for run in runs]},
    )


# --------------------------------------------------------------------------- cascades


def _escalate(
    rules: Sequence[str],
    cheap: FloatArray,
    second: FloatArray | None,
    confidence: Sequence[int | None],
    grades: Sequence[int],
    min_confidence: int,
) -> npt.NDArray[np.bool_]:
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


def build_cascade(
    cheap: Path | SavedRun | Sequence[Path | SavedRun],
    expensive: Path | SavedRun,
    out_dir: Path,
    *,
    rules: Sequence[str] = ("middle",),
    min_confidence: int = DEFAULT_MIN_CONFIDENCE,
) -> dict[str, Any]:
    """A cascade from saved records: the cheap run(s) label every item, items that fire
    one of ``rules`` go to the expensive run. Written as a virtual run in ``out_dir``;
    returns its summary (with ``escalation_rate``)."""
    cheap_list: list[Path | SavedRun] = (
        [cheap] if isinstance(cheap, Path | SavedRun) else list(cheap)
    )
    unknown = [rule for rule in rules if rule not in CASCADE_RULES]
    if unknown or not rules:
        raise MMJudgeError(
            f"unknown cascade rule(s) {unknown or rules!r}; use any of {', '.join(CASCADE_RULES)}"
        )
    if not 1 <= len(cheap_list) <= 2:
        raise MMJudgeError("a cascade takes one cheap run, or two for the 'disagree' rule")
    if "disagree" in rules and len(cheap_list) != 2:
        raise MMJudgeError("the 'disagree' rule needs a second cheap run (two prompts or models)")
    runs = _load_all([*cheap_list, expensive])
    cheap_runs, dear = runs[:-1], runs[-1]
    grades, relevant_from = _check_members(runs)
    keys = _union_keys(runs)
    first = cheap_runs[0].labels(keys)
    second = cheap_runs[1].labels(keys) if len(cheap_runs) == 2 else None
    dear_labels = dear.labels(keys)
    confidence: list[int | None] = [None] * len(keys)
    if "confidence" in rules:
        confidence = [
            parse_confidence((cheap_runs[0].rows.get(key) or {}).get("raw_output")) for key in keys
        ]
        if all(c is None for c in confidence):
            raise MMJudgeError(
                f"rule 'confidence': no answer of {cheap_runs[0].name} states a confidence; "
                "run the cheap judge with a prompt that asks for one (prompt=confidence)"
            )
    escalated = _escalate(rules, first, second, confidence, grades, min_confidence)
    fallback = first if second is None else np.where(np.isnan(first), second, first)
    labels = np.where(escalated & ~np.isnan(dear_labels), dear_labels, fallback)
    shared, names = _short_names(runs)
    rule_text = "+".join(rules)
    model = (
        f"cascade:{rule_text}({shared + ': ' if shared else ''}{'+'.join(names[:-1])}→{names[-1]})"
    )
    records = []
    for i, key in enumerate(keys):
        cheap_rows = [run.rows.get(key) for run in cheap_runs]
        dear_row = dear.rows.get(key) if escalated[i] else None
        latency = max(
            (float(row.get("latency_s") or 0.0) for row in cheap_rows if row is not None),
            default=0.0,
        )
        if dear_row is not None:
            latency += float(dear_row.get("latency_s") or 0.0)
        given = [first[i]] if second is None else [first[i], second[i]]
        cheap_votes = "/".join(_grade_text(v) for v in given)
        text = (
            f"escalated: cheap {cheap_votes}, expensive {_grade_text(dear_labels[i])}"
            if escalated[i]
            else f"kept cheap {cheap_votes}"
        )
        records.append(
            _combined_record(
                out_dir.name,
                runs,
                key,
                [*cheap_rows, dear_row],
                provider="cascade",
                model=model,
                label=float(labels[i]),
                explanation=text,
                latency_s=latency,
            )
        )
    n_escalated = int(escalated.sum())
    return _write_virtual_run(
        out_dir,
        records,
        runs,
        kind="cascade",
        model=model,
        grades=grades,
        relevant_from=relevant_from,
        settings={
            "rules": list(rules),
            "min_confidence": min_confidence if "confidence" in rules else None,
        },
        extra={
            "members": [
                *(_member_entry(run, out_dir, "cheap") for run in cheap_runs),
                _member_entry(dear, out_dir, "expensive"),
            ],
            "n_escalated": n_escalated,
            "escalation_rate": n_escalated / len(keys) if keys else 0.0,
        },
    )


# --------------------------------------------------------------------------- after a sweep


def _is_virtual_path(run: SavedRun, sweep_dir: Path) -> bool:
    try:
        parts = run.run_dir.resolve().relative_to(sweep_dir.resolve()).parts
    except ValueError:
        return False
    return ENSEMBLES in parts


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)


def build_default_ensembles(sweep_dir: Path) -> list[Path]:
    """The ensembles worth a look after a sweep, per dataset × modality, written under
    ``<sweep_dir>/ensembles/``; returns their directories.

    (a) each model with two or more prompt variants: a majority panel over its prompts;
    (b) each prompt that three or more distinct models ran: a majority panel of the models;
    (c) each pair of models where one costs less per judgment than the other: a cascade from
    the cheaper to the dearer on the ``middle`` and ``unparseable`` rules, each model
    represented by its ``default`` prompt run (else its first prompt id in sorted order).

    An ensemble that cannot be built (members on different scales...) is reported on
    stderr and left out; the others are still built.
    """
    sweep_dir = Path(sweep_dir)
    runs = [
        run
        for run in completed_runs(sweep_dir, include_virtual=False)
        if not _is_virtual_path(run, sweep_dir)
    ]
    groups: dict[tuple[str, str], list[SavedRun]] = {}
    for run in runs:
        key = (str(run.summary.get("dataset")), str(run.summary.get("modality")))
        groups.setdefault(key, []).append(run)
    root = sweep_dir / ENSEMBLES
    built: list[Path] = []

    def attempt(name: str, build: Callable[[Path], Any]) -> None:
        out = root / _safe(name)
        try:
            build(out)
        except MMJudgeError as error:
            print(f"mmjudge: ensemble {name} left out: {error}", file=sys.stderr)
            return
        built.append(out)

    for (dataset, modality), group in sorted(groups.items()):
        cells: dict[tuple[str, str], SavedRun] = {}
        for run in sorted(group, key=lambda r: str(r.run_dir)):
            cell = (str(run.summary.get("model")), str(run.summary.get("prompt_id")))
            cells.setdefault(cell, run)
        models = sorted({model for model, _ in cells})
        prompts = sorted({prompt for _, prompt in cells})
        for model in models:
            members = [cells[(model, p)] for p in prompts if (model, p) in cells]
            if len(members) >= 2:
                attempt(
                    f"panel.{dataset}.{modality}.{model}.prompts",
                    functools.partial(build_panel, members, how="majority"),
                )
        for prompt in prompts:
            members = [cells[(m, prompt)] for m in models if (m, prompt) in cells]
            if len(members) >= 3:
                attempt(
                    f"panel.{dataset}.{modality}.{prompt}.models",
                    functools.partial(build_panel, members, how="majority"),
                )
        representative = {}
        for model in models:
            own = sorted(p for m, p in cells if m == model)
            chosen = "default" if "default" in own else own[0]
            representative[model] = cells[(model, chosen)]
        for a, b in itertools.combinations(models, 2):
            cheap, dear = representative[a], representative[b]
            if cheap.usd_per_million == dear.usd_per_million:
                continue
            if cheap.usd_per_million > dear.usd_per_million:
                cheap, dear = dear, cheap
            pair = f"{cheap.summary['model']}-to-{dear.summary['model']}"
            name = f"cascade.{dataset}.{modality}.{pair}"
            attempt(
                name,
                functools.partial(build_cascade, cheap, dear, rules=DEFAULT_CASCADE_RULES),
            )
    return built
