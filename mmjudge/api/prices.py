"""Re-price a finished run from its saved usage: what ``mmjudge reprice`` computes and writes,
as a typed result. No provider is called and ``judgments.jsonl`` is never rewritten."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mmjudge.store.repriced_file import PriceFigures, Repricing

__all__ = ["PriceFigures", "RepricedRun", "reprice"]


@dataclass(frozen=True)
class RepricedRun:
    """One run's cost as it was priced and under another sheet, mode or model: the
    re-pricing (:class:`~mmjudge.store.repriced_file.Repricing`, what ``repriced_*.json``
    holds) and the file written, if any."""

    record: Repricing
    """The re-pricing, every figure of the file."""
    path: Path | None
    """The ``repriced_*.json`` written, or None when nothing was written."""

    @property
    def run_id(self) -> str:
        """The run folder's name."""
        return self.record.run_id

    @property
    def dataset(self) -> str:
        """Dataset name."""
        return self.record.dataset

    @property
    def model(self) -> str:
        """The judge's config name."""
        return self.record.model

    @property
    def modality(self) -> str:
        """What the judge saw."""
        return self.record.modality

    @property
    def n_judgments(self) -> int:
        """Rows priced."""
        return self.record.n_judgments

    @property
    def n_cached(self) -> int:
        """Rows answered from the response cache (priced like the others)."""
        return self.record.n_cached

    @property
    def n_errors(self) -> int:
        """Rows without an answer."""
        return self.record.n_errors

    @property
    def n_repeats(self) -> int:
        """Repeat calls priced besides the judgments (``runner.samples`` above 1)."""
        return self.record.n_repeats

    @property
    def original(self) -> PriceFigures:
        """As the run was priced."""
        return self.record.original

    @property
    def repriced(self) -> PriceFigures:
        """Under the new sheet, mode or model."""
        return self.record.repriced

    @property
    def price_key(self) -> str:
        """The price sheet entry priced at."""
        return self.record.basis.price_key

    @property
    def notes(self) -> list[str]:
        """What the figures assume (billing mode, estimated image tokens…)."""
        return list(self.record.notes)


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
    from mmjudge.costs.reprice import reprice_run
    from mmjudge.store.repriced_file import write_repriced

    folder = Path(run)
    result = reprice_run(folder, sheet, batch=batch, sync=sync, as_model=as_model)
    path = None
    if write or out is not None:
        path = write_repriced(folder, result, None if out is None else Path(out))
    return RepricedRun(result, path)
