"""``repriced_<sheet>[_batch|_sync][_as-<model>].json``: what a finished run would have cost
under another price sheet, in batch mode or at another model's prices (:class:`Repricing`),
as ``mmjudge reprice`` and :func:`mmjudge.reprice` work it out
(:mod:`mmjudge.costs.reprice`). :func:`write_repriced` writes it next to the run's records (or
under another folder) and :func:`read_repriced` reads it back; the command's table and the
library read the record, never the file's keys.

Layout versions (``schema_version``):

1. The first layout, and the current one. The new prices and how they were applied are one
   block, ``repriced`` (the record keeps them apart: :attr:`Repricing.repriced` and
   :attr:`Repricing.basis`).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmjudge.errors import MMJudgeError
from mmjudge.files import write_atomic
from mmjudge.records import Usage

#: The layout's version (see the module docstring).
REPRICE_SCHEMA_VERSION = 1
#: The names of a run's re-pricings in its folder (a glob; see :func:`output_name`).
REPRICED_FILES = "repriced_*.json"


@dataclass(frozen=True)
class PriceFigures:
    """What a run's judgments cost under one price sheet."""

    sheet: str | None
    """The price sheet's date."""
    total_usd: float
    """Dollars for every call: every row, and every repeat of ``runner.samples``."""
    usd_per_million: float
    """Dollars per million judgments (with their repeats, where a run has them)."""
    image_usd_per_million: float
    """The images' share of it."""
    text_usd_per_million: float
    """The rest (text input and output)."""
    repeats_usd: float = 0.0
    """The repeats' share of :attr:`total_usd` (``runner.samples`` above 1)."""


@dataclass(frozen=True)
class RepriceBasis:
    """How the new prices were applied."""

    batch: bool
    """Every call billed at batch prices."""
    sync: bool
    """Every call billed at list prices."""
    n_batch_priced: int
    """Calls billed at batch prices."""
    as_model: str | None
    """The model whose prices were used, as asked for (None: the run's own)."""
    price_key: str
    """The price sheet entry priced at (several, joined, for a panel or cascade)."""
    prices: dict[str, Any]
    """That entry as the sheet gives it (dollars per million tokens, image rule, tiers)."""
    image_size: int
    """The run's ``images.size``, assumed for every image when re-estimating."""
    image_tokens_per_image: float | None
    """Image tokens per image at the model's image rule (None: not re-estimated)."""
    tokens: Usage
    """Tokens priced, summed over the calls."""
    n_long_context: int
    """Calls billed at long-context prices."""


@dataclass(frozen=True)
class Repricing:
    """One run's cost as it was priced and under another sheet, mode or model: the contents
    of its ``repriced_*.json``."""

    run_id: str
    """The run folder's name."""
    dataset: str
    """Dataset name."""
    model: str
    """The judge's config name."""
    model_id: str
    """The provider's model id."""
    provider: str
    """The judge's provider."""
    modality: str
    """What the judge saw."""
    n_judgments: int
    """Rows priced."""
    n_with_usage: int
    """Rows with token usage to price."""
    n_cached: int
    """Rows answered from the response cache (priced like the others)."""
    n_errors: int
    """Rows without an answer."""
    n_repeats: int
    """Repeat calls priced besides the judgments (``runner.samples`` above 1)."""
    original: PriceFigures
    """As the run was priced."""
    repriced: PriceFigures
    """Under the new sheet, mode or model."""
    basis: RepriceBasis
    """How the new prices were applied."""
    notes: tuple[str, ...]
    """What the figures assume (billing mode, estimated image tokens…)."""
    created_at: str
    """When it was worked out, UTC, ISO 8601."""
    schema_version: int = REPRICE_SCHEMA_VERSION
    """Version of this layout."""

    @property
    def file_name(self) -> str:
        """The file's name: ``repriced_<sheet>[_batch|_sync][_as-<model>].json``."""
        return output_name(
            str(self.repriced.sheet),
            batch=self.basis.batch,
            as_model=self.basis.as_model,
            sync=self.basis.sync,
        )


def output_name(
    sheet: str, *, batch: bool = False, as_model: str | None = None, sync: bool = False
) -> str:
    """``repriced_<sheet>[_batch|_sync][_as-<model>].json``, safe as a file name."""
    name = REPRICED_FILES.removesuffix("*.json") + sheet
    if batch:
        name += "_batch"
    elif sync:
        name += "_sync"
    if as_model:
        name += "_as-" + re.sub(r"[^A-Za-z0-9._-]+", "-", as_model).strip("-")
    return name + ".json"


def write_repriced(run_dir: Path, result: Repricing, out: Path | None = None) -> Path:
    """Write one run's re-pricing next to its records, or to ``out/<run_id>/``; returns the
    file."""
    folder = Path(out) / result.run_id if out is not None else Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    return write_atomic(folder / result.file_name, json.dumps(_layout(result), indent=2) + "\n")


def read_repriced(path: Path) -> Repricing:
    """A ``repriced_*.json``, of this layout or an earlier one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MMJudgeError(f"{path}: cannot be read ({error}); re-price the run again") from None
    version = data.get("schema_version") if isinstance(data, dict) else None
    if not isinstance(data, dict) or (version or 1) > REPRICE_SCHEMA_VERSION:
        raise MMJudgeError(f"{path}: not a re-pricing this version of mmjudge reads")
    new = data.get("repriced") or {}
    return Repricing(
        run_id=str(data.get("run_id") or ""),
        dataset=str(data.get("dataset") or ""),
        model=str(data.get("model") or ""),
        model_id=str(data.get("model_id") or ""),
        provider=str(data.get("provider") or ""),
        modality=str(data.get("modality") or ""),
        n_judgments=int(data.get("n_judgments") or 0),
        n_with_usage=int(data.get("n_with_usage") or 0),
        n_cached=int(data.get("n_cached") or 0),
        n_errors=int(data.get("n_errors") or 0),
        n_repeats=int(data.get("n_repeats") or 0),
        original=_figures(data.get("original") or {}),
        repriced=_figures(new),
        basis=RepriceBasis(
            batch=bool(new.get("batch")),
            sync=bool(new.get("sync")),
            n_batch_priced=int(new.get("n_batch_priced") or 0),
            as_model=new.get("as_model"),
            price_key=str(new.get("price_key") or ""),
            prices=dict(new.get("prices") or {}),
            image_size=int(new.get("image_size") or 0),
            image_tokens_per_image=new.get("image_tokens_per_image"),
            tokens=Usage.from_dict(new.get("tokens")),
            n_long_context=int(new.get("n_long_context") or 0),
        ),
        notes=tuple(str(note) for note in data.get("notes") or ()),
        created_at=str(data.get("created_at") or ""),
    )


def _layout(result: Repricing) -> dict[str, Any]:
    new, basis = result.repriced, result.basis
    return {
        "schema_version": result.schema_version,
        "run_id": result.run_id,
        "dataset": result.dataset,
        "model": result.model,
        "model_id": result.model_id,
        "provider": result.provider,
        "modality": result.modality,
        "n_judgments": result.n_judgments,
        "n_with_usage": result.n_with_usage,
        "n_cached": result.n_cached,
        "n_errors": result.n_errors,
        "n_repeats": result.n_repeats,
        "original": dataclasses.asdict(result.original),
        "repriced": {
            "sheet": new.sheet,
            "batch": basis.batch,
            "sync": basis.sync,
            "n_batch_priced": basis.n_batch_priced,
            "as_model": basis.as_model,
            "price_key": basis.price_key,
            "prices": basis.prices,
            "image_size": basis.image_size,
            "image_tokens_per_image": basis.image_tokens_per_image,
            "total_usd": new.total_usd,
            "usd_per_million": new.usd_per_million,
            "image_usd_per_million": new.image_usd_per_million,
            "text_usd_per_million": new.text_usd_per_million,
            "repeats_usd": new.repeats_usd,
            "tokens": basis.tokens.to_dict(),
            "n_long_context": basis.n_long_context,
        },
        "notes": list(result.notes),
        "created_at": result.created_at,
    }


def _figures(data: Mapping[str, Any]) -> PriceFigures:
    return PriceFigures(
        sheet=data.get("sheet"),
        total_usd=float(data.get("total_usd") or 0.0),
        usd_per_million=float(data.get("usd_per_million") or 0.0),
        image_usd_per_million=float(data.get("image_usd_per_million") or 0.0),
        text_usd_per_million=float(data.get("text_usd_per_million") or 0.0),
        repeats_usd=float(data.get("repeats_usd") or 0.0),
    )
