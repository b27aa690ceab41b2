"""``forecast.json``: what a dry run of one cell expects its calls to use and cost
(:class:`CellForecast`). The engine builds one, :func:`write_forecast` writes it into the run
folder, :func:`read_forecast` reads it back; the library, the command and the report read its
attributes, never the file's keys. Its line (:meth:`CellForecast.line`) is a view of these
attributes alone, so it is defined on the type, beside what it tells.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.config.names import DEFAULT_PROMPT, NO_PERTURBATION, cell_display_name
from mmjudge.display import usd, usd_per_million
from mmjudge.files import write_atomic
from mmjudge.records import Forecast
from mmjudge.store.blocks import known_fields
from mmjudge.store.status import DRY_RUN

#: What a dry run writes in its run folder.
FORECAST = "forecast.json"


@dataclass(frozen=True)
class TextCut:
    """What ``dataset.max_text_tokens`` cut from the prepared items."""

    max_text_tokens: int | None = None
    """The cap, as configured (null: none)."""
    items: int = 0
    """Items whose text was cut."""
    tokens_removed: int = 0
    """Tokens cut from them, about."""


@dataclass(frozen=True)
class CellForecast:
    """What a dry run of one cell expects its calls to use and cost (``forecast.json``)."""

    dataset: str
    """Dataset name."""
    model: str
    """The judge's config name."""
    model_id: str
    """The provider's model id."""
    modality: str
    """``text``, ``mm`` or ``image``."""
    prompt_id: str
    """The prompt variant."""
    pricing_sheet: str | None
    """The price sheet's date."""
    sync: Forecast
    """Calls, tokens and dollars at list prices."""
    batch: Forecast
    """The same calls through a batch API."""
    batch_discount: float
    """The fraction of the list price a batch call costs."""
    text_cut: TextCut | None = None
    """What the text cap cut (null in forecasts written before it was counted)."""
    perturb: str = NO_PERTURBATION
    """The perturbation the cell applies (``none``: nothing)."""
    skip_reason: str | None = None
    """Why the cell cannot run (its judge cannot see images, say); None when it can."""

    @property
    def usd(self) -> float:
        """Expected dollars at list prices."""
        return self.sync.usd

    def to_dict(self) -> dict[str, Any]:
        """The layout of ``forecast.json`` (``perturb`` only for a perturbed cell, so the
        others' files stay as they were)."""
        data: dict[str, Any] = {
            "status": DRY_RUN,
            "dataset": self.dataset,
            "model": self.model,
            "model_id": self.model_id,
            "modality": self.modality,
            "prompt_id": self.prompt_id,
            "pricing_sheet": self.pricing_sheet,
            "forecast": self.sync.to_dict(),
            "batch_discount": self.batch_discount,
            "forecast_batch": self.batch.to_dict(),
        }
        if self.text_cut is not None:
            data["text_cut"] = {
                "max_text_tokens": self.text_cut.max_text_tokens,
                "items": self.text_cut.items,
                "tokens_removed": self.text_cut.tokens_removed,
            }
        if self.perturb != NO_PERTURBATION:
            data["perturb"] = self.perturb
        if self.skip_reason is not None:
            data["skip_reason"] = self.skip_reason
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CellForecast:
        """A forecast from ``forecast.json``'s layout (older files lack the batch figures,
        the text cut and the perturbation)."""
        cut = data.get("text_cut")
        sync = _forecast(data["forecast"])
        batch = data.get("forecast_batch")
        return cls(
            dataset=str(data["dataset"]),
            model=str(data["model"]),
            model_id=str(data.get("model_id") or data["model"]),
            modality=str(data["modality"]),
            prompt_id=str(data.get("prompt_id") or DEFAULT_PROMPT),
            pricing_sheet=data.get("pricing_sheet"),
            sync=sync,
            batch=_forecast(batch) if isinstance(batch, Mapping) else sync,
            batch_discount=float(data.get("batch_discount", 1.0)),
            text_cut=TextCut(**known_fields(TextCut, cut)) if isinstance(cut, dict) else None,
            perturb=str(data.get("perturb") or NO_PERTURBATION),
            skip_reason=data.get("skip_reason"),
        )

    def line(self, *, prompt_named: bool = False) -> str:
        """The line the command prints for this dry run: the forecast at sync and batch
        prices, headed by the cell's display name (``prompt_named``: the prompt was chosen,
        see :func:`mmjudge.config.names.cell_display_name`)."""
        cell = cell_display_name(
            self.dataset,
            self.model,
            self.modality,
            self.prompt_id,
            self.perturb,
            prompt_named=prompt_named,
        )
        if self.skip_reason is not None:
            return f"{cell}: skipped — {self.skip_reason}"
        f, batch = self.sync, self.batch
        estimate = "" if f.exact_text_tokens else " (text tokens estimated)"
        batch_text = ""
        if f.usd:
            batch_text = f"; batch API {usd(batch.usd)}, {usd_per_million(batch.usd_per_million)}"
        judged = f" for {f.judged:,} judgments" if f.judged != f.calls else ""
        return (
            f"{cell}: forecast {f.calls} calls{judged}, {f.input_tokens:,} input tokens "
            f"({f.image_tokens:,} image), {round(f.output_tokens):,} output tokens "
            f"(per call from {f.output_basis or 'runner.forecast_output_tokens'}), "
            f"sync {usd(f.usd)}, {usd_per_million(f.usd_per_million)} judgments"
            f"{batch_text}{estimate}{_cache_text(f)}{_cut_text(self.text_cut)}"
        )


def _cache_text(forecast: Forecast) -> str:
    """What the provider's prompt cache is expected to save, or why it is skipped, for the
    dry run's line (empty when the cell's provider caches nothing mmjudge arranges)."""
    if forecast.cached_input_tokens:
        saved = forecast.cache_saved_usd
        listed = forecast.usd + saved
        share = saved / listed if listed else 0.0
        return (
            f"; prompt cache: {forecast.cached_input_tokens:,} of {forecast.input_tokens:,} "
            f"input tokens read from it, {usd(saved)} ({share:.0%}) below list price"
        )
    if forecast.prompt_cache:
        return f"; prompt cache skipped: {forecast.prompt_cache}"
    return ""


def _cut_text(cut: TextCut | None) -> str:
    """What ``dataset.max_text_tokens`` cuts, for the dry run's line (empty when nothing)."""
    if cut is None or not cut.items:
        return ""
    return (
        f"; text cut to dataset.max_text_tokens={cut.max_text_tokens} in {cut.items:,} "
        f"items (about {cut.tokens_removed:,} tokens removed)"
    )


def _forecast(data: Any) -> Forecast:
    return Forecast(**known_fields(Forecast, data))


def write_forecast(run_dir: Path, forecast: CellForecast) -> Path:
    """Write ``forecast.json`` into ``run_dir`` atomically."""
    return write_atomic(Path(run_dir) / FORECAST, json.dumps(forecast.to_dict(), indent=2) + "\n")


def read_forecast(run_dir: Path) -> CellForecast:
    """A run folder's ``forecast.json``."""
    data = json.loads((Path(run_dir) / FORECAST).read_text(encoding="utf-8"))
    return CellForecast.from_dict(data)
