"""A cell's price before it runs, from its dry run (the forecast ``runner.dry_run=true``
prints): dollars per judgment and for every item, or why the cell cannot run. The race ranks
its cells by it; the dry run's own figures are the same forecast, so a price is computed one
way whichever view shows it."""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path
from typing import NamedTuple

from mmjudge.grid.cells import GridCell


class CellPrice(NamedTuple):
    """A cell's forecast price."""

    usd_per_judgment: float
    """List-price dollars per judgment (0 for a free judge)."""
    full_usd: float
    """List-price dollars for every item of the dataset."""
    skip_reason: str | None = None
    """Why the cell cannot run (then it has no price); None when it can."""


def price_cell(cell: GridCell) -> CellPrice:
    """``cell``'s price from its dry run, made in a folder of its own so the cell's folder
    holds only its runs."""
    from mmjudge.grid.jobs import forecast

    dry = copy.deepcopy(cell.config)
    dry.runner.dry_run = True
    with tempfile.TemporaryDirectory(prefix="mmjudge-price-") as scratch:
        found = forecast(dry, Path(scratch) / "forecast")
    if found.skip_reason is not None:
        return CellPrice(0.0, 0.0, found.skip_reason)
    sync = found.sync
    return CellPrice(sync.usd / sync.calls if sync.calls else 0.0, sync.usd)
