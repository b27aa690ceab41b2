"""Re-price a finished run from its saved usage: what ``mmjudge reprice`` computes and writes,
as a typed result. No provider is called and ``judgments.jsonl`` is never rewritten."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


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

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PriceFigures:
        """The figures from the ``original`` or ``repriced`` part of ``repriced_*.json``."""
        return cls(
            sheet=data.get("sheet"),
            total_usd=float(data["total_usd"]),
            usd_per_million=float(data["usd_per_million"]),
            image_usd_per_million=float(data["image_usd_per_million"]),
            text_usd_per_million=float(data["text_usd_per_million"]),
        )


@dataclass(frozen=True)
class RepricedRun:
    """One run's cost as it was priced and under another sheet, mode or model."""

    run_id: str
    """The run folder's name."""
    dataset: str
    """Dataset name."""
    model: str
    """The judge's config name."""
    modality: str
    """What the judge saw."""
    n_judgments: int
    """Rows priced."""
    n_cached: int
    """Rows answered from the response cache (priced like the others)."""
    n_errors: int
    """Rows without an answer."""
    original: PriceFigures
    """As the run was priced."""
    repriced: PriceFigures
    """Under the new sheet, mode or model."""
    price_key: str
    """The price sheet entry priced at."""
    notes: list[str]
    """What the figures assume (billing mode, estimated image tokens…)."""
    path: Path | None
    """The ``repriced_*.json`` written, or None when nothing was written."""
    data: dict[str, Any] = field(repr=False, compare=False)
    """The result as ``repriced_*.json`` holds it."""
    n_repeats: int = 0
    """Repeat calls priced besides the judgments (``runner.samples`` above 1)."""


def reprice(
    run: str | Path,
    sheet: str | None = None,
    *,
    batch: bool = False,
    sync: bool = False,
    as_model: str | None = None,
    write: bool = False,
    out: str | Path | None = None,
) -> RepricedRun:
    """What the run in ``run`` would have cost under price sheet ``sheet`` (a date such as
    ``"2026-10-31"``; by default the sheet it was priced with), with every call at batch
    (``batch``) or list (``sync``) prices, or at another model's prices (``as_model``: a
    model config name or a sheet key), as ``mmjudge reprice`` does for one run.

    With ``write`` (or ``out``), the result is also written as the command writes it: to
    ``repriced_<sheet>[_batch|_sync][_as-<model>].json`` in the run folder, or under
    ``out/<run_id>/``.

    Raises:
        ConfigError: ``run`` is not a run folder, an unknown sheet or model, ``batch`` with
            ``sync``, or a run that names no sheet and none is given.
    """
    from mmjudge.costs.reprice import reprice_run, write_repriced

    folder = Path(run)
    result = reprice_run(folder, sheet, batch=batch, sync=sync, as_model=as_model)
    path = None
    if write or out is not None:
        path = write_repriced(folder, result, None if out is None else Path(out))
    data = json.loads(json.dumps(result))  # as the file holds it: lists, not tuples
    return RepricedRun(
        run_id=str(data["run_id"]),
        dataset=data["dataset"],
        model=data["model"],
        modality=data["modality"],
        n_judgments=int(data["n_judgments"]),
        n_cached=int(data["n_cached"]),
        n_errors=int(data["n_errors"]),
        original=PriceFigures.from_dict(data["original"]),
        repriced=PriceFigures.from_dict(data["repriced"]),
        price_key=str(data["repriced"]["price_key"]),
        notes=list(data["notes"]),
        path=path,
        data=data,
        n_repeats=int(data.get("n_repeats") or 0),
    )
