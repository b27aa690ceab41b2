"""The report's CSV files, written one way: a header from the first row's keys, a number that
is not finite (a κ with no interval, a score with no value) as an empty cell, and no file at
all when there are no rows (a stale one from an earlier report is removed)."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

CsvCell = str | int | float | bool | None
"""What a cell of the report's CSV files holds."""

CsvRow = Mapping[str, CsvCell]
"""A row by column name; the columns follow the first row (``judges.csv``'s include one per
measure of the catalogue, so a row is a mapping rather than a fixed record)."""


def cell_value(value: CsvCell) -> CsvCell:
    """``value`` as a CSV cell: empty for NaN and ±inf, unchanged otherwise."""
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    return value


def write_csv(path: Path, rows: Sequence[CsvRow]) -> Path | None:
    """Write ``rows`` to ``path``; with no rows remove ``path`` and return None."""
    if not rows:
        path.unlink(missing_ok=True)
        return None
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows({k: cell_value(v) for k, v in row.items()} for row in rows)
    return path
