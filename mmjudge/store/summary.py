"""``summary.json``: the typed record of what one run did, cost and scored (:class:`RunSummary`).

One function builds a summary (:func:`build_summary`), one writes it (:func:`write_summary`)
and one reads it back (:func:`read_summary`, through :meth:`RunSummary.from_json`, which also
reads the layouts of older versions). Every command and the report read runs through them.

Layout versions (``schema_version``):

1. The first layout. Summaries written before statuses existed lack ``status`` (they are
   complete) and the failure fields; virtual runs (panels, cascades) lack ``endpoint``,
   ``errors`` and the status fields. All of them read as if they had the defaults.
2. The resolved ``config`` moved the run's locations into ``paths`` and ``seed`` and
   ``report`` out of ``runner``; older configs are read into that shape (see
   :func:`_config_v2`). Every other field is the same.

The ``metrics`` block holds one entry per measure of the catalogue
(:mod:`mmjudge.metrics.catalogue`) by its key, so a new measure adds an entry without a new
layout: a summary written before a measure existed reads with that figure missing (None), and
one written with a measure this version lacks keeps it (:meth:`Agreement.from_json`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mmjudge.config import DatasetConfig, ModelConfig, ScaleConfig
from mmjudge.files import write_atomic
from mmjudge.locations import resolve_path
from mmjudge.records import Forecast
from mmjudge.store.agreement import Agreement
from mmjudge.store.blocks import (
    SINGLE,
    CallCounts,
    CallPositions,
    CellInfo,
    CellStatus,
    CostFigures,
    Ensemble,
    ErrorCounts,
    Latency,
    PositionKappa,
    PromptCacheUse,
    RowFigures,
    Stability,
    TokenMeans,
    known_fields,
)
from mmjudge.store.bounds import Bounds
from mmjudge.store.grading_blocks import BankInfo, Grading, TrainedOn
from mmjudge.store.provenance import git_commit, package_versions
from mmjudge.store.rows import SUMMARY

SUMMARY_SCHEMA_VERSION = 2


#: Top-level keys of the layout, in the order they are written (see :meth:`RunSummary.to_json`).
_HEAD = ("schema_version", "kind", "run_id", "status", "status_reason", "exit_code")
_CELL = ("dataset", "model", "model_id", "provider", "endpoint", "modality", "prompt_id")


@dataclass(frozen=True)
class SummaryParts:
    """The blocks of a summary that its rows do not give: each one None where the run has
    none (:func:`build_summary`)."""

    calls: CallCounts | None = None
    """What the runner did (none for skipped cells and virtual runs)."""
    ensemble: Ensemble | None = None
    """How a virtual run combined its members."""
    grading: Grading | None = None
    """Local judges: their cut points."""
    trained_on: TrainedOn | None = None
    """A trained judge: where it comes from and the cell's items it learnt from."""
    testbank: BankInfo | None = None
    """The test bank a bank-grading cell graded against."""
    forecast: Forecast | None = None
    """The cell's forecast."""
    n_items: int | None = None
    """Items the dataset holds for the cell."""
    stability: Stability | None = None
    """Test–retest, from the run's repeats."""
    prompt_cache: PromptCacheUse | None = None
    """What the provider's prompt cache read and saved (none where it did nothing)."""
    positions: CallPositions | None = None
    """Several results per call: the calls, and κ by the place a result was shown at."""


@dataclass(frozen=True)
class RunSummary:
    """What one run did, cost and scored: the contents of its ``summary.json``."""

    run_id: str
    """The run folder's name."""
    cell: CellInfo
    """The cell (its fields are written at the top level)."""
    status: CellStatus
    """How it ended (its fields are written at the top level)."""
    finished_at: str
    """UTC time the summary was written, ISO 8601."""
    n_judgments: int
    """Rows in ``judgments.jsonl`` (failed ones included)."""
    n_errors: int
    """Rows with an item-level error."""
    n_unparseable: int
    """Answered rows without a readable grade."""
    n_truncated: int
    """Rows whose result text was cut to ``dataset.max_text_tokens``."""
    errors: ErrorCounts
    """Failed rows by kind, and the first message."""
    metrics: Agreement
    """Agreement with the annotators."""
    cost: CostFigures
    """Dollars."""
    tokens: TokenMeans
    """Mean tokens per answered judgment."""
    latency_s: Latency
    """Seconds per answered judgment."""
    config: dict[str, Any]
    """The cell's resolved config, redacted (for an ensemble: how it was combined)."""
    parts: SummaryParts = field(default_factory=SummaryParts)
    """The blocks the rows do not give (calls, ensemble, grading, test bank, forecast, items,
    stability), each None where the run has none; read through the properties below."""
    packages: dict[str, str] = field(default_factory=dict)
    """Versions of mmjudge and the packages that shape its numbers."""
    git_commit: str | None = None
    """The project's git commit, when it is a checkout."""
    schema_version: int = SUMMARY_SCHEMA_VERSION
    """Version of this layout."""

    # -- the blocks of :attr:`parts` -------------------------------------------------------

    @property
    def calls(self) -> CallCounts | None:
        """What the runner did; null for skipped cells and virtual runs."""
        return self.parts.calls

    @property
    def ensemble(self) -> Ensemble | None:
        """How a panel or cascade combined its members (its fields are written at the top
        level); null for a real run."""
        return self.parts.ensemble

    @property
    def grading(self) -> Grading | None:
        """Local judges: the cut points used per modality and where they came from."""
        return self.parts.grading

    @property
    def trained_on(self) -> TrainedOn | None:
        """A trained judge's provenance and the cell's items it learnt from (left out of
        :attr:`metrics`)."""
        return self.parts.trained_on

    @property
    def testbank(self) -> BankInfo | None:
        """The test bank a bank-grading cell graded against (path, version, rule), if any."""
        return self.parts.testbank

    @property
    def forecast(self) -> Forecast | None:
        """The cell's forecast (at batch prices in batch mode), beside the actual cost."""
        return self.parts.forecast

    @property
    def n_items(self) -> int | None:
        """Items the dataset holds for this cell."""
        return self.parts.n_items

    @property
    def stability(self) -> Stability | None:
        """Test–retest (``runner.samples`` above 1): κ between samples, the unstable items
        and what the repeats cost (see :func:`mmjudge.studies.stability.stability_summary`)."""
        return self.parts.stability

    @property
    def prompt_cache(self) -> PromptCacheUse | None:
        """What the provider's prompt cache read and wrote, its hit rate and the dollars it
        saved against list price; null where the provider reported no cached tokens."""
        return self.parts.prompt_cache

    @property
    def positions(self) -> CallPositions | None:
        """With several results per call (``prompt.passages_per_call`` above 1): the calls,
        the results asked again, κ by place in the call; null otherwise."""
        return self.parts.positions

    # -- what readers ask ----------------------------------------------------------------

    @property
    def kind(self) -> str:
        """``single`` for a real run, ``panel`` or ``cascade`` for a virtual one."""
        return self.cell.kind

    @property
    def name(self) -> str:
        """``model/prompt/modality`` (``model/modality`` for an ensemble over prompts, whose
        model name lists them), ending ``@<perturbation>`` for a perturbed cell."""
        c = self.cell
        attacked = "" if c.perturb == "none" else f"@{c.perturb}"
        if "+" in c.prompt_id:
            return f"{c.model}/{c.modality}{attacked}"
        return f"{c.model}/{c.prompt_id}/{c.modality}{attacked}"

    @property
    def usd_per_million(self) -> float:
        return self.cost.usd_per_million

    @property
    def relevant_from(self) -> float | None:
        """The lowest relevant grade: as scored, else as configured."""
        value = self.metrics.relevant_from
        if value is None:
            value = self.scale_settings().get("relevant_from")
        return None if value is None else float(value)

    def config_part(self, name: str) -> dict[str, Any]:
        """One part of the resolved config (``model``, ``dataset``, ``pricing``...), or {}."""
        part = self.config.get(name)
        return dict(part) if isinstance(part, dict) else {}

    def scale_settings(self) -> dict[str, Any]:
        """``dataset.scale`` as configured (grades, meanings, relevant_from), or {}."""
        scale = self.config_part("dataset").get("scale")
        return dict(scale) if isinstance(scale, dict) else {}

    def dataset_config(self) -> DatasetConfig | None:
        """The dataset's config as the run resolved it (None when the summary lacks it)."""
        raw = self.config_part("dataset")
        if not raw:
            return None
        values = known_fields(DatasetConfig, raw)
        scale = known_fields(ScaleConfig, raw.get("scale"))
        meanings = {}
        for key, text in (scale.get("meanings") or {}).items():
            try:
                meanings[int(key)] = str(text)
            except (TypeError, ValueError):
                continue
        values["scale"] = ScaleConfig(**{**scale, "meanings": meanings})
        return DatasetConfig(**values)

    def prepared_cache(self) -> Path | None:
        """The run's ``paths.prepared_cache``, where its prepared items are (None when its
        config does not name one); a relative path is taken from the current folder, as the
        run took it."""
        folder = self.config_part("paths").get("prepared_cache")
        return resolve_path(folder) if isinstance(folder, str) and folder else None

    def model_config(self) -> ModelConfig:
        """The judge the run used, from its resolved config (name, provider and model id
        from the summary where the config lacks them)."""
        values = known_fields(ModelConfig, self.config_part("model"))
        values.setdefault("name", self.cell.model or "?")
        values.setdefault("provider", self.cell.provider or "?")
        values.setdefault("model_id", self.cell.model_id or values["name"])
        return ModelConfig(**values)

    # -- the file ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` layout (nested blocks as plain dicts)."""
        cell, status = dataclasses.asdict(self.cell), dataclasses.asdict(self.status)
        data: dict[str, Any] = {
            "schema_version": self.schema_version,
            "kind": self.kind,
            "run_id": self.run_id,
            **{k: status[k] for k in ("status", "status_reason", "exit_code")},
            "stopped_because": status["stopped_because"],
            "skip_reason": status["skip_reason"],
            **{k: cell[k] for k in _CELL},
            "pricing_sheet": cell["pricing_sheet"],
            "grades": cell["grades"],
            **({"perturb": cell["perturb"]} if cell["perturb"] != "none" else {}),
            "finished_at": self.finished_at,
            "n_judgments": self.n_judgments,
            "n_errors": self.n_errors,
            "n_unparseable": self.n_unparseable,
            "n_truncated": self.n_truncated,
            "errors": dataclasses.asdict(self.errors),
            "metrics": self.metrics.to_json(),
            "cost": dataclasses.asdict(self.cost),
            "tokens": dataclasses.asdict(self.tokens),
            "latency_s": dataclasses.asdict(self.latency_s),
            "calls": self.calls.to_json() if self.calls is not None else {},
        }
        if self.ensemble is not None:
            data.update(self.ensemble.to_json(self.kind))
        data.update(config=self.config, packages=self.packages, git_commit=self.git_commit)
        if self.grading is not None:
            data["grading"] = self.grading.to_json()
        if self.trained_on is not None:
            data["trained_on"] = dataclasses.asdict(self.trained_on)
        if self.testbank is not None:
            data["testbank"] = self.testbank.to_json()
        if self.forecast is not None:
            data["forecast"] = self.forecast.to_dict()
        if self.n_items is not None:
            data["n_items"] = self.n_items
        if self.stability is not None:
            data["stability"] = self.stability.to_json()
        if self.prompt_cache is not None:
            data["prompt_cache"] = dataclasses.asdict(self.prompt_cache)
        if self.positions is not None:
            data["positions"] = dataclasses.asdict(self.positions)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSummary:
        """A summary from its JSON layout, of this version or an older one."""
        kind = str(data.get("kind") or SINGLE)
        cell = CellInfo(
            **{
                **known_fields(CellInfo, data),
                **{k: str(data.get(k)) for k in ("dataset", "model", "modality", "prompt_id")},
                "model_id": str(data.get("model_id") or data.get("model")),
                "pricing_sheet": data.get("pricing_sheet"),
                "provider": str(data.get("provider") or kind),
                "grades": [int(g) for g in data.get("grades") or []],
                "kind": kind,
            }
        )
        status = CellStatus(**{"status": "complete", **known_fields(CellStatus, data)})
        if not status.status:
            status = dataclasses.replace(status, status="complete")
        return cls(
            run_id=str(data.get("run_id") or ""),
            cell=cell,
            status=status,
            finished_at=str(data.get("finished_at") or ""),
            n_judgments=int(data.get("n_judgments") or 0),
            n_errors=int(data.get("n_errors") or 0),
            n_unparseable=int(data.get("n_unparseable") or 0),
            n_truncated=int(data.get("n_truncated") or 0),
            errors=ErrorCounts(**known_fields(ErrorCounts, data.get("errors"))),
            metrics=Agreement.from_json(data.get("metrics")),
            cost=CostFigures(**known_fields(CostFigures, data.get("cost"))),
            tokens=TokenMeans(**known_fields(TokenMeans, data.get("tokens"))),
            latency_s=Latency(**known_fields(Latency, data.get("latency_s"))),
            config=_config_v2(copy.deepcopy(dict(data.get("config") or {}))),
            parts=_parts_from_json(data, kind),
            packages=dict(data.get("packages") or {}),
            git_commit=data.get("git_commit"),
            schema_version=SUMMARY_SCHEMA_VERSION,
        )


#: Version 1 keys of the resolved config and where version 2 keeps them.
_MOVED_V1 = {
    ("results_dir",): ("paths", "results"),
    ("reports_dir",): ("paths", "reports"),
    ("runner", "cache_path"): ("paths", "response_cache"),
    ("images", "cache_dir"): ("paths", "image_cache"),
    ("runner", "seed"): ("seed",),
    ("runner", "report"): ("report", "build"),
}


def _parts_from_json(data: dict[str, Any], kind: str) -> SummaryParts:
    """The blocks of :class:`SummaryParts` in a summary's JSON layout (each None when absent)."""
    calls = data.get("calls")
    forecast = data.get("forecast")
    stability = data.get("stability")
    prompt_cache = data.get("prompt_cache")
    positions = data.get("positions")
    grading = data.get("grading") or None  # an empty block is no block
    testbank = data.get("testbank") or None
    trained_on = data.get("trained_on")
    return SummaryParts(
        calls=CallCounts(**known_fields(CallCounts, calls)) if calls else None,
        ensemble=Ensemble.from_json(data) if kind != SINGLE else None,
        grading=Grading.from_json(grading) if isinstance(grading, dict) else None,
        trained_on=(
            TrainedOn(**known_fields(TrainedOn, trained_on))
            if isinstance(trained_on, dict)
            else None
        ),
        testbank=BankInfo.from_json(testbank) if isinstance(testbank, dict) else None,
        forecast=Forecast(**known_fields(Forecast, forecast)) if forecast else None,
        n_items=data.get("n_items"),
        stability=Stability.from_json(stability) if isinstance(stability, dict) else None,
        prompt_cache=(
            PromptCacheUse(**known_fields(PromptCacheUse, prompt_cache))
            if isinstance(prompt_cache, dict)
            else None
        ),
        positions=_positions(positions) if isinstance(positions, dict) else None,
    )


def _positions(data: dict[str, Any]) -> CallPositions:
    """The ``positions`` block from ``summary.json``."""
    places = [
        PositionKappa(
            position=int(place.get("position") or 0),
            n=int(place.get("n") or 0),
            kappa=Bounds.of(place.get("kappa")),
        )
        for place in data.get("by_position") or []
        if isinstance(place, dict)
    ]
    return CallPositions(
        calls=int(data.get("calls") or 0),
        results_per_call=float(data.get("results_per_call") or 0.0),
        reasked=int(data.get("reasked") or 0),
        by_position=places,
    )


def _config_v2(config: dict[str, Any]) -> dict[str, Any]:
    """A resolved config of layout 1 in the shape of layout 2 (a layout 2 one unchanged)."""
    for old, new in _MOVED_V1.items():
        holder: Any = config
        for key in old[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or old[-1] not in holder:
            continue
        value = holder.pop(old[-1])
        target = config
        for key in new[:-1]:
            target = target.setdefault(key, {})
        target.setdefault(new[-1], value)
    return config


def build_summary(
    run_dir: Path,
    cell: CellInfo,
    figures: RowFigures,
    *,
    metrics: Agreement,
    cost: CostFigures,
    config: dict[str, Any],
    status: CellStatus | None = None,
    parts: SummaryParts | None = None,
) -> RunSummary:
    """The one place a :class:`RunSummary` is put together, for real and virtual runs."""
    parts = parts or SummaryParts()
    return RunSummary(
        run_id=run_dir.name,
        cell=cell,
        status=status or CellStatus(),
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
        n_judgments=figures.n_judgments,
        n_errors=figures.n_errors,
        n_unparseable=figures.n_unparseable,
        n_truncated=figures.n_truncated,
        errors=figures.errors,
        metrics=metrics,
        cost=cost,
        tokens=figures.tokens,
        latency_s=figures.latency,
        config=config,
        parts=parts,
        packages=package_versions(),
        git_commit=git_commit(),
    )


def write_summary(run_dir: Path, summary: RunSummary) -> None:
    """Write ``summary.json`` atomically (a kill leaves the old file or the new one)."""
    text = json.dumps(summary.to_json(), indent=2, default=_jsonable)
    write_atomic(run_dir / SUMMARY, text + "\n")


def read_summary(run_dir: Path) -> RunSummary:
    """A run folder's ``summary.json``."""
    data = json.loads((Path(run_dir) / SUMMARY).read_text(encoding="utf-8"))
    return RunSummary.from_json(dict(data))


def run_ending(run_dir: Path) -> str:
    """How a run last ended, in a line from its summary: ``failed: 40 of 40 judgments failed
    (100%): every judgment failed``."""
    if not (Path(run_dir) / SUMMARY).is_file():
        return "with no summary"
    status = read_summary(run_dir).status
    named = status.status.replace("_", " ")
    return f"{named}: {status.status_reason}" if status.status_reason else named


def _jsonable(value: Any) -> Any:
    import numpy as np  # only for values json cannot write itself

    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if np.isnan(value) else float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to summary.json")
