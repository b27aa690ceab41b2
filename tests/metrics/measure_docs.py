"""The row a measure has in the docs' table of measures (docs/agreement.md, "The measures"),
written from its declaration, for the tests that hold the docs to the catalogue."""

from __future__ import annotations

import math

from mmjudge.metrics.catalogue import Measure

AGREEMENT_DOC = "docs/agreement.md"
SECTION = "### The measures"


def number(value: float) -> str:
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:g}".replace("-", "−")


def docs_row(m: Measure) -> str:
    """``| `kappa` | κ | … | higher is better | 0 | yes |``"""
    also = ", ".join(f"`{key}`" for key in m.summary_keys() if key != m.name) or "–"
    chance = "–" if m.chance is None else number(m.chance)
    return (
        f"| `{m.name}` | {m.label} | {m.description} | {also} | "
        f"{number(m.low)} to {number(m.high)} | {m.direction} | {chance} | "
        f"{'yes' if m.interval else 'no'} |"
    )


def table_rows(text: str) -> list[str]:
    """The rows of the table of measures in the docs page ``text``."""
    section = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("| `")]
