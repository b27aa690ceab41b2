"""The disagreement browser: items where a judge's grade differs from every human's grade.

A capped, deterministic sample per judge and dataset (the same items come first for every
judge of a dataset, so judges can be compared item by item). The query and the result's
text fields and image come from the dataset itself, re-read from the path in the run's
config; when it cannot be read the browser shows ids only and says why.
"""

from __future__ import annotations

import base64
import dataclasses
import io
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmjudge.report.analysis import Analysis, DatasetStats
from mmjudge.runs import rows_at

CAP = 50
#: Disagreements are sampled first among this many items judged first (see sample_order).
WINDOW = 5000
THUMBNAIL_PX = 112
MAX_FIELD_CHARS = 600
MAX_EXPLANATION_CHARS = 1200


@dataclass
class Item:
    dataset: str
    judge: str
    label: str
    consensus: str
    humans: list[tuple[str, str]]
    query_id: str
    result_id: str
    query: str | None = None
    fields: list[tuple[str, str]] = field(default_factory=list)
    thumbnail: str | None = None
    explanation: str = ""


@dataclass
class Count:
    dataset: str
    judge: str
    total: int
    scored: int
    shown: int


@dataclass
class Browser:
    items: list[Item]
    counts: list[Count]
    notes: list[str]
    """Why texts or images are missing for a dataset, if they are."""
    cap: int
    window: int = WINDOW

    @property
    def judges(self) -> list[str]:
        return sorted({i.judge for i in self.items})

    @property
    def datasets(self) -> list[str]:
        return sorted({i.dataset for i in self.items})

    @property
    def labels(self) -> list[str]:
        return sorted({i.label for i in self.items})


def _grade(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def sample_order(n_items: int, window: int = WINDOW) -> np.ndarray:
    """The order in which disagreements are picked: the first ``window`` items judged (in
    a shuffled order) before the rest (also shuffled). One order per dataset, so every
    judge's sample starts with the same items; favouring the items judged first lets the
    dataset be read back only as far as the texts shown."""
    shuffled = np.random.default_rng(0).permutation(n_items)
    codes = np.arange(n_items)
    return np.asarray(shuffled + np.where(codes >= window, n_items, 0))


def build_browser(analysis: Analysis, cap: int = CAP) -> Browser:
    items: list[Item] = []
    counts: list[Count] = []
    notes: list[str] = []
    for stats in analysis.datasets:
        found = _dataset_items(analysis, stats, cap, counts)
        if found:
            note = _attach_texts(stats, found)
            if note:
                notes.append(note)
        items.extend(found)
    return Browser(items, counts, notes, cap)


def _dataset_items(
    analysis: Analysis, stats: DatasetStats, cap: int, counts: list[Count]
) -> list[Item]:
    humans = stats.items.humans
    if not humans:
        return []
    names = list(humans)
    matrix = np.vstack([humans[n] for n in names])
    rank = sample_order(stats.items.n)
    consensus = stats.items.consensus
    out = []
    for cell in stats.cells:
        labels = cell.labels
        if labels is None or labels.items.size == 0:
            continue
        grades = matrix[:, labels.items]
        present = ~np.isnan(grades)
        label = labels.label
        scored = ~np.isnan(label) & present.any(axis=0)
        differs = scored & ((grades != label) | ~present).all(axis=0)
        chosen = np.flatnonzero(differs)
        chosen = chosen[np.argsort(rank[labels.items[chosen]], kind="stable")[:cap]]
        judge = analysis.judge_name(cell.judge)
        counts.append(
            Count(stats.name, judge, int(differs.sum()), int(scored.sum()), int(chosen.size))
        )
        if not chosen.size:
            continue
        rows = rows_at(labels.path, labels.offsets[chosen].tolist())
        for code, row in zip(labels.items[chosen].tolist(), rows, strict=True):
            key = stats.items.keys[code]
            human = row.get("human_labels") or {}
            explanation = row.get("explanation") or row.get("raw_output") or ""
            if row.get("parse_error"):
                explanation = f"{explanation} (parse note: {row['parse_error']})".strip()
            out.append(
                Item(
                    dataset=stats.name,
                    judge=judge,
                    label=_grade(row.get("label")),
                    consensus=_grade(float(consensus[code])),
                    humans=[(str(k), _grade(v)) for k, v in sorted(human.items())]
                    if isinstance(human, Mapping)
                    else [],
                    query_id=key.split("\t", 1)[0],
                    result_id=key.split("\t", 1)[1],
                    explanation=_cut(str(explanation), MAX_EXPLANATION_CHARS),
                )
            )
    return out


def _attach_texts(stats: DatasetStats, items: list[Item]) -> str | None:
    """Fill in query, text fields and thumbnail from the dataset; a note when it fails."""
    from mmjudge.data import load_dataset

    needed: dict[str, list[Item]] = {}
    for item in items:
        needed.setdefault(f"{item.query_id}\t{item.result_id}", []).append(item)
    config = stats.cells[0].summary.dataset_config() if stats.cells else None
    if config is None:
        return f"{stats.name}: the run's config does not name the dataset, so no texts are shown."
    remaining = set(needed)
    try:
        # The texts as the judge read them (HTML converted, cut to the cap). The items are
        # looked up by key, so a query sample need not be drawn again.
        cfg = dataclasses.replace(config, sample_queries=None)
        for example in load_dataset(cfg):
            if example.key not in remaining:
                continue
            remaining.discard(example.key)
            fields = [(name, _cut(value, MAX_FIELD_CHARS)) for name, value in example.fields]
            image = example.images[0] if example.images else None
            thumb = thumbnail(image) if image else None
            for item in needed[example.key]:
                item.query = example.query
                item.fields = fields
                item.thumbnail = thumb
            if not remaining:
                break
    except Exception as error:
        return f"{stats.name}: the dataset could not be read ({error}); ids are shown instead."
    if remaining:
        return f"{stats.name}: {len(remaining)} item(s) were not found in the dataset."
    return None


def thumbnail(source: str) -> str | None:
    """A small JPEG of a local image as a ``data:`` URL; None for URLs or unreadable files."""
    if "://" in source:
        return None
    try:
        from PIL import Image, ImageOps

        with Image.open(source) as img:
            img.draft("RGB", (THUMBNAIL_PX * 2, THUMBNAIL_PX * 2))
            small = ImageOps.exif_transpose(img)
            small.thumbnail((THUMBNAIL_PX, THUMBNAIL_PX))
            if small.mode != "RGB":
                background = Image.new("RGB", small.size, (255, 255, 255))
                rgba = small.convert("RGBA")
                background.paste(rgba, mask=rgba.getchannel("A"))
                small = background
            buffer = io.BytesIO()
            small.save(buffer, "JPEG", quality=78)
    except Exception:
        return None
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
