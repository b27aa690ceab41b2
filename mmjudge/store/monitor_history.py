"""The monitoring history: one JSON object per line, one line per canary check
(:class:`CheckEntry`) or scored audit period (:class:`AuditEntry`), only ever appended.
:func:`append_entry` is its one writer and :func:`read_history` its one reader
(:class:`History`); the checks, the audits, the command and the timeline take these records,
never the file's keys.

Two processes may append at once and a process may be killed while it writes: each entry is
appended with :func:`mmjudge.files.append_jsonl` (one locked ``write``, so two entries never
interleave; a partial last line left by a kill is ended by the next writer), and the reader
skips any line that is not a whole JSON object. Nothing in the file is ever rewritten, so a
reader needs no lock.

Layout versions (``schema_version``, on each entry):

1. The first layout. Entries written before the version key existed lack it and read the
   same. An entry of another kind than ``check`` or ``audit`` (from a later version) is
   skipped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.files import append_jsonl, read_jsonl
from mmjudge.store.bounds import Bounds, finite_number

#: The history file under ``paths.results`` unless ``history=`` names another.
HISTORY = Path("monitor") / "history.jsonl"
#: The layout's version (see the module docstring).
HISTORY_SCHEMA_VERSION = 1
#: ``kind`` of each entry.
CHECK, AUDIT = "check", "audit"


@dataclass(frozen=True)
class Thresholds:
    """What a check may show and still pass."""

    max_change: float = 0.05
    """Largest share of items whose grade may change against the baseline."""
    alpha: float = 0.01
    """A Stuart–Maxwell p-value below this says the grade distribution moved."""
    allow_new_model: bool = False
    """Pass even when the provider names a model the baseline never saw."""


@dataclass(frozen=True)
class HomogeneityTest:
    """The Stuart–Maxwell test of whether the grade distribution moved; None where the table
    leaves nothing to test."""

    statistic: float | None = None
    """The χ² statistic."""
    df: float | None = None
    """Its degrees of freedom."""
    p: float | None = None
    """The p-value."""


@dataclass(frozen=True)
class Drift:
    """Two checks of one judge compared item by item
    (:func:`mmjudge.studies.drift.drift_summary`)."""

    n_paired: int
    """Items graded in both checks: what every figure is on."""
    changed: int
    """Of those, the items whose grade changed."""
    change_share: Bounds
    """The share changed, with its 95% interval."""
    kappa: Bounds
    """κ between the two checks, with its 95% interval."""
    stuart_maxwell: HomogeneityTest
    """Whether the grade distribution moved."""
    confusion: list[list[int]]
    """Paired grades: rows the first check's grade, columns the second's."""
    before: dict[str, int]
    """Items per grade in the first check."""
    after: dict[str, int]
    """Items per grade in the second."""


@dataclass(frozen=True)
class Comparison:
    """A check against its baseline check."""

    baseline: str
    """The baseline check's name."""
    baseline_kappa_people: Bounds
    """The baseline's κ against people."""
    baseline_spent_usd: float
    """What the baseline spent."""
    same_items: bool
    """Whether both checks judged the same items."""
    drift: Drift
    """The grades compared item by item."""
    new_models: tuple[str, ...] = ()
    """Model identifiers the provider answered with that the baseline never saw."""
    new_fingerprints: tuple[str, ...] = ()
    """System fingerprints the baseline never saw."""


@dataclass(frozen=True)
class CheckEntry:
    """One canary check: what the provider answered with, κ against people, the spend, and
    the comparison with its baseline."""

    check: str
    """The check's name (its UTC start and process)."""
    series: str
    """The checks it is compared with: ``dataset.model.modality.prompt``."""
    time: str
    """When it started, UTC, ISO 8601."""
    run_dir: str
    """Its run folder."""
    status: str
    """How its cell ended."""
    dataset: str
    """Dataset name."""
    model: str
    """The judge's config name."""
    model_id: str
    """The model id asked for."""
    modality: str
    """What the judge saw."""
    prompt_id: str
    """The prompt variant."""
    n_items: int
    """Items answered."""
    items_sha256: str
    """Hash of the answered items' keys (equal hashes: the same items)."""
    models: dict[str, int]
    """Answers per model identifier the provider named."""
    fingerprints: dict[str, int]
    """Answers per system fingerprint the provider gave."""
    kappa_people: Bounds
    """κ against the annotators' consensus, with its interval."""
    label_distribution: dict[str, int]
    """Answers per grade."""
    spent_usd: float
    """Dollars the check spent."""
    comparison: Comparison | None = None
    """The comparison with the baseline (None: this check is its series' baseline)."""
    moved: tuple[str, ...] = ()
    """What went past a threshold, each in a few words (empty: the check passed)."""
    thresholds: Thresholds | None = None
    """The thresholds it was held to."""
    schema_version: int = HISTORY_SCHEMA_VERSION
    """Version of this layout."""


@dataclass(frozen=True)
class PeriodFigures:
    """A period's sampled judge labels against the people's grades
    (:func:`mmjudge.monitor.audit.score_period`)."""

    n_graded: int
    """Sampled items the people graded."""
    n_sampled: int
    """Items sampled."""
    n_disagree: int
    """Graded items whose grade differs from the judge's."""
    disagreement: Bounds
    """The disagreement rate, weighted by stratum size, with its 95% interval."""
    disagreement_se: float | None
    """Its standard error, read off the interval."""
    confusion: list[list[int]]
    """Rows: the judge's grade; columns: the person's."""
    grades: tuple[int, ...]
    """The scale the confusion table is on."""


@dataclass(frozen=True)
class PeriodChange:
    """A period's disagreement against the earlier periods'
    (:func:`mmjudge.monitor.audit.change_test`)."""

    earlier_periods: int
    """Earlier periods with a disagreement rate."""
    earlier_disagreement: float
    """Their rate, pooled by graded items."""
    difference: float
    """This period's rate less theirs."""
    p: float | None
    """Two-sided p-value of the difference (None: no spread to test against)."""
    pattern_p: float | None
    """χ² p-value of whether the disagreements fall in the same cells (None: too few)."""


@dataclass(frozen=True)
class AuditEntry:
    """One scored audit period."""

    series: str
    """The periods it is compared with: ``audit.<dataset>``."""
    dataset: str
    """Dataset name."""
    period: str
    """The period's name."""
    time: str
    """When it was scored, UTC, ISO 8601."""
    labels_file: str
    """The period's production labels."""
    assessed_file: str
    """The people's grades of the sample."""
    figures: PeriodFigures
    """The period's disagreement."""
    change: PeriodChange | None = None
    """Against the earlier periods (None: no earlier period)."""
    moved: tuple[str, ...] = ()
    """What changed significantly, each in a few words (empty: nothing)."""
    schema_version: int = HISTORY_SCHEMA_VERSION
    """Version of this layout."""


@dataclass(frozen=True)
class History:
    """Every whole entry of a history file, oldest first."""

    checks: tuple[CheckEntry, ...] = ()
    """The canary checks."""
    audits: tuple[AuditEntry, ...] = ()
    """The scored audit periods."""


def append_entry(path: Path, entry: CheckEntry | AuditEntry) -> None:
    """Append ``entry`` to the history at ``path`` (created with its folder when new)."""
    append_jsonl(
        path, _check_layout(entry) if isinstance(entry, CheckEntry) else _audit_layout(entry)
    )


def read_history(path: Path) -> History:
    """Every whole entry of the history (none when the file does not exist), of this layout
    or an earlier one; a partial or unreadable line is skipped."""
    if not path.is_file():
        return History()
    checks, audits = [], []
    for _, data in read_jsonl(path, strict=False):
        if not isinstance(data, dict):
            continue
        kind = data.get("kind") or CHECK
        if kind == CHECK:
            checks.append(_check(data))
        elif kind == AUDIT:
            audits.append(_audit(data))
    return History(tuple(checks), tuple(audits))


# --------------------------------------------------------------------------- the layout


def _check_layout(entry: CheckEntry) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema_version": entry.schema_version,
        "kind": CHECK,
        "check": entry.check,
        "series": entry.series,
        "time": entry.time,
        "run_dir": entry.run_dir,
        "status": entry.status,
        "dataset": entry.dataset,
        "model": entry.model,
        "model_id": entry.model_id,
        "modality": entry.modality,
        "prompt_id": entry.prompt_id,
        "n_items": entry.n_items,
        "items_sha256": entry.items_sha256,
        "models": entry.models,
        "fingerprints": entry.fingerprints,
        "kappa_people": entry.kappa_people.as_json(),
        "label_distribution": entry.label_distribution,
        "spent_usd": entry.spent_usd,
        "baseline": None,
        "moved": list(entry.moved),
    }
    compared = entry.comparison
    if compared is not None:
        drift = compared.drift
        data.update(
            baseline=compared.baseline,
            baseline_kappa_people=compared.baseline_kappa_people.as_json(),
            baseline_spent_usd=compared.baseline_spent_usd,
            same_items=compared.same_items,
            drift={
                "n": drift.n_paired,
                "changed": drift.changed,
                "change_share": drift.change_share.as_json(),
                "kappa": drift.kappa.as_json(),
                "stuart_maxwell": dataclasses.asdict(drift.stuart_maxwell),
                "confusion": drift.confusion,
                "label_distribution": {"before": drift.before, "after": drift.after},
            },
            new_models=list(compared.new_models),
            new_fingerprints=list(compared.new_fingerprints),
        )
    if entry.thresholds is not None:
        data["thresholds"] = dataclasses.asdict(entry.thresholds)
    return data


def _check(data: Mapping[str, Any]) -> CheckEntry:
    thresholds = data.get("thresholds")
    return CheckEntry(
        check=str(data.get("check") or ""),
        series=str(data.get("series") or ""),
        time=str(data.get("time") or ""),
        run_dir=str(data.get("run_dir") or ""),
        status=str(data.get("status") or ""),
        dataset=str(data.get("dataset") or ""),
        model=str(data.get("model") or ""),
        model_id=str(data.get("model_id") or ""),
        modality=str(data.get("modality") or ""),
        prompt_id=str(data.get("prompt_id") or ""),
        n_items=int(data.get("n_items") or 0),
        items_sha256=str(data.get("items_sha256") or ""),
        models=_counts(data.get("models")),
        fingerprints=_counts(data.get("fingerprints")),
        kappa_people=Bounds.of(data.get("kappa_people")),
        label_distribution=_counts(data.get("label_distribution")),
        spent_usd=float(data.get("spent_usd") or 0.0),
        comparison=_comparison(data),
        moved=tuple(str(reason) for reason in data.get("moved") or ()),
        thresholds=_thresholds(thresholds) if isinstance(thresholds, dict) else None,
    )


def _comparison(data: Mapping[str, Any]) -> Comparison | None:
    drift = data.get("drift")
    if not data.get("baseline") or not isinstance(drift, dict):
        return None
    test = drift.get("stuart_maxwell") or {}
    counts = drift.get("label_distribution") or {}
    return Comparison(
        baseline=str(data["baseline"]),
        baseline_kappa_people=Bounds.of(data.get("baseline_kappa_people")),
        baseline_spent_usd=float(data.get("baseline_spent_usd") or 0.0),
        same_items=bool(data.get("same_items")),
        drift=Drift(
            n_paired=int(drift.get("n") or 0),
            changed=int(drift.get("changed") or 0),
            change_share=Bounds.of(drift.get("change_share")),
            kappa=Bounds.of(drift.get("kappa")),
            stuart_maxwell=HomogeneityTest(
                **{k: finite_number(test.get(k)) for k in ("statistic", "df", "p")}
            ),
            confusion=[[int(c) for c in row] for row in drift.get("confusion") or []],
            before=_counts(counts.get("before")),
            after=_counts(counts.get("after")),
        ),
        new_models=tuple(str(m) for m in data.get("new_models") or ()),
        new_fingerprints=tuple(str(f) for f in data.get("new_fingerprints") or ()),
    )


def _thresholds(data: Mapping[str, Any]) -> Thresholds:
    default = Thresholds()
    return Thresholds(
        max_change=float(data.get("max_change", default.max_change)),
        alpha=float(data.get("alpha", default.alpha)),
        allow_new_model=bool(data.get("allow_new_model", default.allow_new_model)),
    )


def _audit_layout(entry: AuditEntry) -> dict[str, Any]:
    figures, change = entry.figures, entry.change
    return {
        "schema_version": entry.schema_version,
        "kind": AUDIT,
        "series": entry.series,
        "dataset": entry.dataset,
        "period": entry.period,
        "time": entry.time,
        "labels_file": entry.labels_file,
        "assessed_file": entry.assessed_file,
        "n": figures.n_graded,
        "n_sampled": figures.n_sampled,
        "n_disagree": figures.n_disagree,
        "disagreement": figures.disagreement.as_json(),
        "disagreement_se": figures.disagreement_se,
        "confusion": figures.confusion,
        "grades": list(figures.grades),
        "change": None if change is None else dataclasses.asdict(change),
        "moved": list(entry.moved),
    }


def _audit(data: Mapping[str, Any]) -> AuditEntry:
    change = data.get("change")
    return AuditEntry(
        series=str(data.get("series") or ""),
        dataset=str(data.get("dataset") or ""),
        period=str(data.get("period") or ""),
        time=str(data.get("time") or ""),
        labels_file=str(data.get("labels_file") or ""),
        assessed_file=str(data.get("assessed_file") or ""),
        figures=PeriodFigures(
            n_graded=int(data.get("n") or 0),
            n_sampled=int(data.get("n_sampled") or 0),
            n_disagree=int(data.get("n_disagree") or 0),
            disagreement=Bounds.of(data.get("disagreement")),
            disagreement_se=finite_number(data.get("disagreement_se")),
            confusion=[[int(c) for c in row] for row in data.get("confusion") or []],
            grades=tuple(int(g) for g in data.get("grades") or ()),
        ),
        change=_change(change) if isinstance(change, dict) else None,
        moved=tuple(str(reason) for reason in data.get("moved") or ()),
    )


def _change(data: Mapping[str, Any]) -> PeriodChange:
    return PeriodChange(
        earlier_periods=int(data.get("earlier_periods") or 0),
        earlier_disagreement=float(data.get("earlier_disagreement") or 0.0),
        difference=float(data.get("difference") or 0.0),
        p=finite_number(data.get("p")),
        pattern_p=finite_number(data.get("pattern_p")),
    )


def _counts(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(key): int(count) for key, count in value.items()}
