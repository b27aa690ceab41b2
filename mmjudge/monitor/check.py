"""Canary checks: re-judge a fixed set of items with one judge configuration, without the
response cache, and compare the answers with a baseline check of the same configuration.

A check is an ordinary cell (:func:`mmjudge.engine.cell.run_cell`) written to
``<paths.results>/monitor/checks/<series>/<check>/``, with ``runner.cache=false`` so that
every answer is the provider's answer today. Its entry in the history
(:mod:`mmjudge.store.monitor_history`) keeps what the timeline needs: the provider's model
identifiers and fingerprints, κ against people with its interval, the grade distribution,
the spend, and the comparison with the baseline (:func:`mmjudge.studies.drift.drift_summary`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from mmjudge.config import SweepConfig
from mmjudge.engine.cell import run_cell
from mmjudge.errors import ConfigError
from mmjudge.locations import resolve_path
from mmjudge.records import JudgmentRecord
from mmjudge.store import RunSummary, read_records
from mmjudge.store.bounds import Bounds
from mmjudge.store.monitor_history import (
    HISTORY,
    CheckEntry,
    Comparison,
    Drift,
    Thresholds,
    append_entry,
    read_history,
)
from mmjudge.store.status import COMPLETE
from mmjudge.studies.drift import drift_summary

#: Where checks' run folders go, under ``paths.results``.
CHECKS = Path("monitor") / "checks"
#: The thresholds of a check that names none.
DEFAULT_THRESHOLDS = Thresholds()


def series_name(cfg: SweepConfig) -> str:
    """The checks compared with each other: one dataset, judge, modality and prompt."""
    return ".".join((cfg.dataset.name, cfg.model.name, cfg.modality.name, cfg.prompt.id))


def history_path(cfg: SweepConfig, given: str | None = None) -> Path:
    """``given``, else ``<paths.results>/monitor/history.jsonl``."""
    return Path(given) if given else resolve_path(cfg.paths.results) / HISTORY


def run_check(
    cfg: SweepConfig,
    history: Path,
    *,
    baseline: str = "first",
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
) -> CheckEntry:
    """Judge the items once more, compare with the baseline, append the entry and return it.

    ``baseline``: ``first`` (the series' first complete check; the default, so slow drift
    adds up instead of hiding), ``last`` (its latest complete check) or a check's name. A
    series without a complete check makes this check its baseline.
    """
    cfg = dataclasses.replace(cfg, runner=dataclasses.replace(cfg.runner, cache=False))
    series = series_name(cfg)
    earlier = [e for e in read_history(history).checks if e.series == series]
    base = choose_baseline(earlier, baseline, history)
    now = datetime.now(UTC)
    name, run_dir = _new_folder(resolve_path(cfg.paths.results) / CHECKS / series, now)
    summary = run_cell(cfg, run_dir)
    assert isinstance(summary, RunSummary)  # never a dry run: run_cell checks the config
    entry = check_entry(summary, run_dir, series, name, now)
    if base is not None:
        compared = compare(entry, base, run_dir, list(cfg.dataset.scale.grades))
        entry = dataclasses.replace(entry, comparison=compared, moved=moved(compared, thresholds))
    entry = dataclasses.replace(entry, thresholds=thresholds)
    append_entry(history, entry)
    return entry


def _new_folder(parent: Path, now: datetime) -> tuple[str, Path]:
    """A check's name (its UTC start and process) and its folder, made here so that no
    other check, even one started in the same instant, writes into it."""
    stamp = f"{now.strftime('%Y-%m-%dT%H-%M-%S')}Z-{os.getpid()}"
    parent.mkdir(parents=True, exist_ok=True)
    for number in itertools.count():
        name = stamp if number == 0 else f"{stamp}-{number}"
        try:
            (parent / name).mkdir()
        except FileExistsError:
            continue
        return name, parent / name
    raise AssertionError("unreachable")


def choose_baseline(
    earlier: Sequence[CheckEntry], baseline: str, history: Path
) -> CheckEntry | None:
    """The entry a new check is compared with (see :func:`run_check`)."""
    complete = [e for e in earlier if e.status == COMPLETE]
    if baseline == "first":
        return complete[0] if complete else None
    if baseline == "last":
        return complete[-1] if complete else None
    for entry in earlier:
        if entry.check == baseline:
            return entry
    raise ConfigError(
        f"baseline={baseline}: no check of that name in {history}; use baseline=first, "
        "baseline=last or the name of an earlier check of the same series"
    )


def _labels(run_dir: Path) -> dict[tuple[str, str], JudgmentRecord]:
    return {key: record for key, record in read_records(run_dir).items() if record.error is None}


def check_entry(
    summary: RunSummary, run_dir: Path, series: str, name: str, when: datetime
) -> CheckEntry:
    """The history entry of a check, before it is compared with its baseline."""
    records = _labels(run_dir)
    items = "\n".join(f"{q}\t{r}" for q, r in sorted(records))
    metrics = summary.metrics
    interval = metrics.interval("kappa") or {}
    grades = Counter(str(r.label) for r in records.values() if r.label is not None)
    return CheckEntry(
        check=name,
        series=series,
        time=when.isoformat(timespec="seconds"),
        run_dir=str(run_dir),
        status=summary.status.status,
        dataset=summary.cell.dataset,
        model=summary.cell.model,
        model_id=summary.cell.model_id,
        modality=summary.cell.modality,
        prompt_id=summary.cell.prompt_id,
        n_items=len(records),
        items_sha256=hashlib.sha256(items.encode("utf-8")).hexdigest(),
        models=dict(Counter(r.response_model or "?" for r in records.values())),
        fingerprints=dict(
            Counter(r.system_fingerprint for r in records.values() if r.system_fingerprint)
        ),
        kappa_people=Bounds.of({**interval, "estimate": metrics.kappa}),
        label_distribution=dict(sorted(grades.items())),
        spent_usd=summary.cost.spent_usd,
    )


def compare(entry: CheckEntry, base: CheckEntry, run_dir: Path, grades: list[int]) -> Comparison:
    """``entry`` against ``base``: the drift figures, and the model identifiers and
    fingerprints the baseline never saw."""
    before = _labels(Path(base.run_dir))
    after = _labels(run_dir)
    shared = [key for key in before if key in after]
    drift = drift_summary(
        np.array([_grade(before[k].label) for k in shared], dtype=float),
        np.array([_grade(after[k].label) for k in shared], dtype=float),
        [q for q, _ in shared],
        grades=grades,
    )
    return Comparison(
        baseline=base.check,
        baseline_kappa_people=base.kappa_people,
        baseline_spent_usd=base.spent_usd,
        same_items=entry.items_sha256 == base.items_sha256,
        drift=drift,
        new_models=tuple(sorted(set(entry.models) - set(base.models))),
        new_fingerprints=tuple(sorted(set(entry.fingerprints) - set(base.fingerprints))),
    )


def _grade(label: int | None) -> float:
    return float("nan") if label is None else float(label)


def moved(compared: Comparison, thresholds: Thresholds) -> tuple[str, ...]:
    """What went past a threshold, each in a few words (empty: the check passes)."""
    reasons = []
    drift: Drift = compared.drift
    change = drift.change_share
    share = change.estimate
    if share is not None and share > thresholds.max_change:
        reasons.append(
            f"{100 * share:.1f}% of labels changed [{_pct(change.low)}, "
            f"{_pct(change.high)}] ({drift.changed} of {drift.n_paired}; "
            f"limit {100 * thresholds.max_change:.1f}%)"
        )
    p = drift.stuart_maxwell.p
    if p is not None and p < thresholds.alpha:
        reasons.append(
            f"the grade distribution moved (Stuart–Maxwell p={p:.2g} < {thresholds.alpha:g})"
        )
    if compared.new_models and not thresholds.allow_new_model:
        reasons.append(f"the provider answered as a new model: {', '.join(compared.new_models)}")
    return tuple(reasons)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"
