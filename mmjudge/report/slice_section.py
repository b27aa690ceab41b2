"""The report by slice (``report.slices``): every judge's κ with its interval, unparseable
share and dollars per million on each slice of its dataset's items, whether its κ depends on
the slice, and the best judge's worst slice for the answer card.

A slice is an item attribute: a field the dataset names (``dataset.slices``:
``{category: product_type}``), the item's ``language`` (``dataset.language`` or
``dataset.language_field``; a slice of its own whenever the dataset declares one), or one
derived from the item: ``query_length`` (words in the query: ``1-2``, ``3-4``, ``5+``)
and ``has_image`` (``yes``/``no``). The items are read again from the dataset the run
recorded. Every figure is computed where the rest of the report computes it: κ by
:func:`mmjudge.studies.slices.score_slices`, the rows' counts and dollars by
:func:`mmjudge.store.row_figures` and :func:`mmjudge.costs.run_dollars.cost_figures` on the
slice's rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mmjudge.config import DatasetConfig
from mmjudge.costs.run_dollars import cost_figures
from mmjudge.data.attributes import LANGUAGE, declares_language
from mmjudge.data.loading import load_dataset
from mmjudge.data.schema import Example
from mmjudge.display import MISSING, price
from mmjudge.errors import ConfigError
from mmjudge.report.analysis import Analysis, Cell, DatasetStats, load_labels
from mmjudge.report.findings.prose import interval, num
from mmjudge.store import Bounds, judgments_path, load_judgments, row_figures
from mmjudge.store.rows import SUMMARY_COLUMNS
from mmjudge.studies.slices import SliceScores, score_slices

#: Slices every dataset has, derived from the items.
DERIVED = ("query_length", "has_image")


def query_length(query: str) -> str:
    """The query-length bucket of ``query``: ``1-2``, ``3-4`` or ``5+`` words."""
    words = len(query.split())
    return "1-2" if words <= 2 else "3-4" if words <= 4 else "5+"


def slice_value(example: Example, name: str, dataset: DatasetConfig) -> str | None:
    """The item's value of the slice ``name`` (None where its field is empty or absent)."""
    if name == "query_length":
        return query_length(example.query)
    if name == "has_image":
        return "yes" if example.images else "no"
    if (name != LANGUAGE and name not in dataset.slices) or (
        name == LANGUAGE and not declares_language(dataset)
    ):
        raise ConfigError(
            f"report.slices: {name!r} is not a slice of dataset {dataset.name!r}; map it to an "
            f"item field with +dataset.slices.{name}=<field> (or in the dataset's config), "
            f"or use {' or '.join(DERIVED)}"
        )
    return example.attribute(name)


def item_chars(example: Example) -> int:
    """Characters of an item's text as the judge read it (HTML converted, cut to the cap):
    its query and its text fields."""
    return len(example.query) + sum(len(value) for _name, value in example.fields)


def item_slices(
    dataset: DatasetConfig, names: Sequence[str], prepared: Path | None = None
) -> tuple[dict[str, dict[str, str | None]], dict[str, int]]:
    """Slice name → item key → its value, for every item of the dataset; and each item's
    characters (:func:`item_chars`), read from the runs' prepared items (``prepared``: their
    ``paths.prepared_cache``) where they are there."""
    out: dict[str, dict[str, str | None]] = {name: {} for name in names}
    chars: dict[str, int] = {}
    # Items are looked up by key, so a query sample need not be drawn again.
    unsampled = dataclasses.replace(dataset, sample_queries=None)
    for example in load_dataset(unsampled, cache=prepared):
        chars[example.key] = item_chars(example)
        for name in names:
            out[name][example.key] = slice_value(example, name, dataset)
    return out, chars


@dataclass(frozen=True)
class CellSlices:
    """One judge on one dataset, by one slice."""

    cell: Cell
    slice: str
    scores: SliceScores
    unparseable: dict[str, float]
    usd_per_million: dict[str, float]
    tokens_per_k_chars: dict[str, float]
    """Input tokens of the slice's answered rows per 1,000 characters of their items' text
    (the prompt's own words included in the tokens): how much more a language costs to read;
    NaN where the judge reports no tokens."""
    translated: dict[str, int | None]
    """Rows of the slice judged with translated instructions (``prompt.language=data``);
    None for a cell judged in English."""


@dataclass(frozen=True)
class SliceRow:
    """A row of the section's table: one dataset × judge × slice value, as printed."""

    dataset: str
    """The dataset."""
    judge: str
    """The judge's name on the page."""
    slice: str
    """``name=value``."""
    n: int
    """Items of the slice scored."""
    kappa: str
    """κ against the people with its interval."""
    unparseable: str
    """Share of answers that could not be read (– where none were asked)."""
    usd: str
    """Dollars per million judgments."""
    tokens: str
    """Input tokens per 1,000 characters of the items' text."""
    translated: str
    """Rows judged with translated instructions (– for a judge instructed in English)."""
    worst: bool
    """Whether this is the judge's worst slice."""
    p: str
    """p-value of the test that the judge's κ depends on the slice."""


@dataclass(frozen=True)
class SliceFigure:
    """One dataset × judge × slice value unrounded, an entry of ``slices.json``."""

    dataset: str
    """The dataset."""
    judge: str
    """The judge's name on the page."""
    model: str
    """The judge's model."""
    modality: str
    """The modality."""
    prompt: str
    """The prompt id."""
    slice: str
    """The slice's name."""
    value: str
    """The slice's value."""
    n_items: int
    """Items of the slice scored."""
    kappa: Bounds
    """κ against the people with its interval."""
    unparseable: float
    """Share of answers that could not be read (NaN where none were asked)."""
    usd_per_million: float
    """Dollars per million judgments on the slice."""
    tokens_per_k_chars: float
    """Input tokens per 1,000 characters of the items' text (NaN without tokens)."""
    n_translated: int | None
    """Rows judged with translated instructions (None for a judge instructed in English)."""
    worst: bool
    """Whether this is the judge's worst slice."""
    p_value: float
    """p-value of the test that the judge's κ depends on the slice."""


def _cell_slices(
    stats: DatasetStats, cell: Cell, name: str, values: dict[str, Any], chars: dict[str, int]
) -> CellSlices:
    labels = load_labels(stats, cell)
    judge = np.full(stats.items.n, np.nan)
    judge[labels.items] = labels.label
    names = [values.get(key) for key in stats.items.keys]
    scores = score_slices(stats.items.query_rank, names, stats.items.consensus, judge, stats.grades)
    frame = load_judgments(judgments_path(cell.run_dir), keep=SUMMARY_COLUMNS)
    keys = frame["query_id"].astype(str) + "\t" + frame["result_id"].astype(str)
    of_row = keys.map(values)
    row_chars = keys.map(chars)
    unparseable, dollars, tokens, translated = {}, {}, {}, {}
    languages = frame["instructions"] if "instructions" in frame else pd.Series(index=frame.index)
    in_data = bool(languages.notna().any())
    for value in scores.scores:
        rows = frame[of_row == value]
        figures = row_figures(rows)
        unparseable[value] = figures.n_unparseable / figures.n_judgments if len(rows) else math.nan
        dollars[value] = cost_figures(rows).usd_per_million
        answered = rows["error"].isna()
        read = float(row_chars[of_row == value][answered].sum())
        used = float(rows.loc[answered, "input_tokens"].sum())
        # A judge that reports no tokens (a local one) has no figure here, not 0.
        tokens[value] = 1000 * used / read if read and used else math.nan
        mine = languages[of_row == value]
        translated[value] = int((mine.notna() & (mine != "en")).sum()) if in_data else None
    return CellSlices(cell, name, scores, unparseable, dollars, tokens, translated)


def _dataset(stats: DatasetStats) -> DatasetConfig | None:
    """The dataset as its runs recorded it, with every slice any of them maps."""
    configs = [c for c in (cell.summary.dataset_config() for cell in stats.cells) if c]
    if not configs:
        return None
    mapped: dict[str, str] = {}
    for config in configs:
        mapped = {**config.slices, **mapped}
    language = next((c for c in configs if declares_language(c)), configs[0])
    return dataclasses.replace(
        configs[0],
        slices=mapped,
        language=language.language,
        language_field=language.language_field,
    )


def by_slice(
    analysis: Analysis, names: Sequence[str], *, strict: bool = True
) -> dict[str, list[CellSlices]]:
    """Dataset → each judge's figures by each slice in ``names``. ``strict``: a name a
    dataset cannot resolve is an error (names given by the user); otherwise that dataset
    goes without it (names the runs asked for, which another dataset may map). A dataset
    scored on the grades a race asked for (:attr:`DatasetStats.asked`) has no slices: its
    κ by slice would need a person's grade on every item of each slice, and the section
    says so."""
    out: dict[str, list[CellSlices]] = {}
    for stats in analysis.datasets:
        dataset = _dataset(stats)
        if dataset is None or stats.asked is not None:
            continue
        known = [n for n in names if strict or n in DERIVED or n in dataset.slices]
        if declares_language(dataset) and LANGUAGE not in known:
            known.append(LANGUAGE)
        if not known:
            continue
        prepared = stats.cells[0].summary.prepared_cache() if stats.cells else None
        values, chars = item_slices(dataset, known, prepared)
        out[stats.name] = [
            _cell_slices(stats, cell, name, values[name], chars)
            for name in known
            for cell in stats.cells
        ]
    return out


def rows(found: dict[str, list[CellSlices]], analysis: Analysis) -> list[SliceRow]:
    """The section's table: one row per dataset × judge × slice value."""
    out = []
    for dataset, cells in found.items():
        for entry in cells:
            for value, score in entry.scores.scores.items():
                share = entry.unparseable[value]
                out.append(
                    SliceRow(
                        dataset=dataset,
                        judge=analysis.judge_name(entry.cell.judge),
                        slice=f"{entry.slice}={value}",
                        n=score.n_items,
                        kappa=interval(score.kappa),
                        unparseable=MISSING if math.isnan(share) else f"{100 * share:.1f}%",
                        usd=price(entry.usd_per_million[value]),
                        tokens=num(entry.tokens_per_k_chars[value], 0),
                        translated=MISSING
                        if entry.translated[value] is None
                        else str(entry.translated[value]),
                        worst=value == entry.scores.worst,
                        p=num(entry.scores.p_value, 3),
                    )
                )
    return out


def figures(found: dict[str, list[CellSlices]], analysis: Analysis) -> list[SliceFigure]:
    """The section's figures unrounded, for ``slices.json`` beside the page (the same
    objects the table shows): per dataset × judge × slice value."""
    out = []
    for dataset, cells in found.items():
        for entry in cells:
            for value, score in entry.scores.scores.items():
                kappa = score.kappa
                out.append(
                    SliceFigure(
                        dataset=dataset,
                        judge=analysis.judge_name(entry.cell.judge),
                        model=entry.cell.judge.model,
                        modality=entry.cell.judge.modality,
                        prompt=entry.cell.judge.prompt_id,
                        slice=entry.slice,
                        value=value,
                        n_items=score.n_items,
                        kappa=Bounds(estimate=kappa.estimate, low=kappa.low, high=kappa.high),
                        unparseable=entry.unparseable[value],
                        usd_per_million=entry.usd_per_million[value],
                        tokens_per_k_chars=entry.tokens_per_k_chars[value],
                        n_translated=entry.translated[value],
                        worst=value == entry.scores.worst,
                        p_value=entry.scores.p_value,
                    )
                )
    return out


def worst_lines(found: dict[str, list[CellSlices]], analysis: Analysis) -> dict[str, str]:
    """Dataset → a line on its best judge's worst slice (for the answer card)."""
    out = {}
    for stats in analysis.datasets:
        best = stats.cells[0] if stats.cells else None
        mine = [e for e in found.get(stats.name, []) if e.cell is best and e.scores.worst]
        if best is None or not mine:
            continue
        entry = min(mine, key=lambda e: e.scores.scores[str(e.scores.worst)].kappa.estimate)
        worst = str(entry.scores.worst)
        out[stats.name] = (
            f"{analysis.judge_name(best.judge)}: κ {interval(entry.scores.scores[worst].kappa)} "
            f"on {entry.slice}={worst} (does κ depend on {entry.slice}? "
            f"p = {num(entry.scores.p_value, 3)})"
        )
    return out


def names_asked(cells: pd.DataFrame) -> list[str]:
    """The slices the cells' runs asked for (``report.slices``), in first-asked order."""
    asked: list[str] = []
    for summary in cells["summary"] if len(cells) else []:
        for name in summary.config_part("report").get("slices") or []:
            if str(name) not in asked:
                asked.append(str(name))
    return asked
