"""The disagreement browser: items where a judge's grade differs from every human's grade.

A capped, deterministic sample per judge and dataset (the same items come first for every
judge of a dataset, so judges can be compared item by item, and the same items on every
build of the report, whatever order the rows were written in). The query and the result's
text fields and image come from the dataset itself, re-read from the path in the run's
config; when it cannot be read the browser shows ids only and says why.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mmjudge.display import MISSING
from mmjudge.files import atomic_file
from mmjudge.report.analysis import Analysis, DatasetStats
from mmjudge.report.load import CellLabels, DatasetItems
from mmjudge.store import rows_at

if TYPE_CHECKING:
    from mmjudge.data import Example

CAP = 50
#: Items shown in all at most: on a large sweep each judge gets a share of it (at least
#: MIN_PER_JUDGE), so the page stays small.
BUDGET = 1500
MIN_PER_JUDGE = 3
THUMBS = "thumbs"
#: Disagreements are sampled first among this many items at the head of the dataset (see
#: sample_order), so that the dataset is read back only that far for their texts.
WINDOW = 2000
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


@dataclass(frozen=True)
class BrowserPayload:
    """The disagreements as the page's script reads them (compact arrays, each item's texts
    once however many judges disagree on it)."""

    judges: list[str]
    """The judges' names; a row names its judge by its place here."""
    items: list[list[Any]]
    """Each item once: [dataset, query id, result id, query, fields, thumbnail, consensus,
    [[annotator, grade]...]]."""
    rows: list[list[Any]]
    """Each disagreement: [judge number, item number, judge's grade, explanation]."""


@dataclass
class Browser:
    items: list[Item]
    counts: list[Count]
    notes: list[str]
    """Why texts or images are missing for a dataset, if they are."""
    cap: int
    window: int = WINDOW
    requested: int = CAP
    """The cap asked for; ``cap`` is lower when the sweep has too many judges for it."""

    @property
    def judges(self) -> list[str]:
        return sorted({i.judge for i in self.items})

    @property
    def datasets(self) -> list[str]:
        return sorted({i.dataset for i in self.items})

    @property
    def labels(self) -> list[str]:
        return sorted({i.label for i in self.items})

    def payload(self) -> BrowserPayload:
        """The items for the page's script (:class:`BrowserPayload`)."""
        numbers: dict[tuple[str, str, str], int] = {}
        judges = self.judges
        judge_number = {name: i for i, name in enumerate(judges)}
        items: list[list[Any]] = []
        rows: list[list[Any]] = []
        for item in self.items:
            key = (item.dataset, item.query_id, item.result_id)
            if key not in numbers:
                numbers[key] = len(items)
                items.append(
                    [
                        item.dataset,
                        item.query_id,
                        item.result_id,
                        item.query,
                        [list(pair) for pair in item.fields],
                        item.thumbnail,
                        item.consensus,
                        [list(pair) for pair in item.humans],
                    ]
                )
            rows.append([judge_number[item.judge], numbers[key], item.label, item.explanation])
        return BrowserPayload(judges=judges, items=items, rows=rows)


def _grade(value: Any) -> str:
    if value is None:
        return MISSING
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def item_rank(seed: int, query_id: str, result_id: str) -> int:
    """An item's place in the browser's order: a stable hash of the seed and the item's ids,
    so the order depends on neither the order of rows in a file nor the process."""
    text = f"{seed}\x1f{query_id}\x1f{result_id}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def sample_order(
    keys: list[str], codes: np.ndarray, in_window: np.ndarray, seed: int, cap: int
) -> np.ndarray:
    """Positions in ``codes`` (item numbers; ``keys`` holds their ``query_id<TAB>result_id``)
    of the first ``cap`` items picked: items at the head of the dataset (``in_window``)
    first, each group in the order of :func:`item_rank`. One order per dataset and seed, so
    every judge's sample starts with the same items."""
    inside = in_window[codes]
    picked = _ranked(keys, codes, np.flatnonzero(inside), seed)[:cap]
    if picked.size < cap:
        rest = _ranked(keys, codes, np.flatnonzero(~inside), seed)[: cap - picked.size]
        picked = np.concatenate([picked, rest])
    return picked


def _ranked(keys: list[str], codes: np.ndarray, positions: np.ndarray, seed: int) -> np.ndarray:
    ranks = [item_rank(seed, *keys[code].split("\t", 1)) for code in codes[positions].tolist()]
    return positions[np.argsort(np.asarray(ranks, dtype=np.uint64), kind="stable")]


def per_judge_cap(cap: int, n_judges: int, budget: int = BUDGET) -> int:
    """Items per judge and dataset: ``cap``, or less when the judges would exceed the
    budget together (never below MIN_PER_JUDGE, never above ``cap``)."""
    if n_judges == 0:
        return cap
    return min(cap, max(MIN_PER_JUDGE, budget // n_judges))


def build_browser(analysis: Analysis, cap: int = CAP, out: Path | None = None) -> Browser:
    """The browser's items (judges only, not ensembles); thumbnails are written to
    ``out/thumbs/`` (none without ``out``)."""
    items: list[Item] = []
    counts: list[Count] = []
    notes: list[str] = []
    shown = per_judge_cap(cap, sum(len(d.cells) for d in analysis.datasets))
    for stats in analysis.datasets:
        if not stats.items.humans or not stats.cells:
            continue
        texts = DatasetTexts(stats)
        found = _dataset_items(analysis, stats, shown, counts, texts)
        if found:
            note = texts.attach(found, out)
            if note:
                notes.append(note)
        items.extend(found)
    return Browser(items, counts, notes, shown, requested=cap)


def run_seed(stats: DatasetStats) -> int:
    """The seed the dataset's first run was made with (``seed`` in its config), else 0."""
    seed = stats.cells[0].summary.config.get("seed") if stats.cells else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else 0


def prepared_cache(stats: DatasetStats) -> Path | None:
    """The run's ``paths.prepared_cache``, where its prepared items are (None when its config
    does not name one)."""
    return stats.cells[0].summary.prepared_cache() if stats.cells else None


class DatasetTexts:
    """The dataset as the judges read it (HTML converted, cut to the cap), read back from the
    path in the run's config: its first :data:`WINDOW` items at once, further ones only when
    an item shown lies beyond them. ``note`` says why texts are missing, if they are."""

    def __init__(self, stats: DatasetStats) -> None:
        self.name = stats.name
        self.note: str | None = None
        self.head: dict[str, Example] = {}
        self._rest: Iterator[Example] = iter(())
        config = stats.cells[0].summary.dataset_config() if stats.cells else None
        if config is None:
            self.note = (
                f"{self.name}: the run's config does not name the dataset, so no texts are shown."
            )
            return
        from mmjudge.data import load_dataset

        try:
            # The items are looked up by key, so a query sample need not be drawn again.
            unsampled = dataclasses.replace(config, sample_queries=None)
            examples = iter(load_dataset(unsampled, cache=prepared_cache(stats)))
            for example in examples:
                self.head[example.key] = example
                if len(self.head) >= WINDOW:
                    break
        except Exception as error:
            self._failed(error)
        else:
            self._rest = examples

    def _failed(self, error: Exception) -> None:
        self.note = f"{self.name}: the dataset could not be read ({error}); ids are shown instead."

    def in_window(self, items: DatasetItems) -> np.ndarray:
        """Per item number: whether the item is among the dataset's first WINDOW."""
        flags = np.zeros(items.n, dtype=bool)
        found = [items.codes[key] for key in self.head if key in items.codes]
        flags[found] = True
        return flags

    def attach(self, items: list[Item], out: Path | None) -> str | None:
        """Fill in query, text fields and thumbnail; a note when some are missing."""
        needed: dict[str, list[Item]] = {}
        for item in items:
            needed.setdefault(f"{item.query_id}\t{item.result_id}", []).append(item)
        if self.note:
            return self.note
        for key in [key for key in needed if key in self.head]:
            _fill(needed.pop(key), self.head[key], out)
        try:
            for example in self._rest if needed else ():
                if example.key in needed:
                    _fill(needed.pop(example.key), example, out)
                    if not needed:
                        break
        except Exception as error:
            self._failed(error)
            return self.note
        if needed:
            return f"{self.name}: {len(needed)} item(s) were not found in the dataset."
        return None


def _fill(items: list[Item], example: Example, out: Path | None) -> None:
    fields = [(name, _cut(value, MAX_FIELD_CHARS)) for name, value in example.fields]
    image = example.images[0] if example.images else None
    thumb = thumbnail(image, out) if image and out is not None else None
    for item in items:
        item.query = example.query
        item.fields = fields
        item.thumbnail = thumb


def _dataset_items(
    analysis: Analysis, stats: DatasetStats, cap: int, counts: list[Count], texts: DatasetTexts
) -> list[Item]:
    humans = stats.items.humans
    matrix = np.vstack([humans[n] for n in humans])
    in_window = texts.in_window(stats.items)
    seed = run_seed(stats)
    out: list[Item] = []
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
        chosen = chosen[sample_order(stats.items.keys, labels.items[chosen], in_window, seed, cap)]
        judge = analysis.judge_name(cell.judge)
        counts.append(
            Count(stats.name, judge, int(differs.sum()), int(scored.sum()), int(chosen.size))
        )
        if chosen.size:
            out.extend(_items_at(stats, labels, chosen, judge))
    return out


def _items_at(
    stats: DatasetStats, labels: CellLabels, chosen: np.ndarray, judge: str
) -> Iterator[Item]:
    """The browser's items for the rows at ``chosen`` (positions in ``labels``)."""
    consensus = stats.items.consensus
    rows = rows_at(labels.path, labels.offsets[chosen].tolist())
    for code, row in zip(labels.items[chosen].tolist(), rows, strict=True):
        query_id, result_id = stats.items.keys[code].split("\t", 1)
        human = row.get("human_labels") or {}
        explanation = row.get("explanation") or row.get("raw_output") or ""
        if row.get("parse_error"):
            explanation = f"{explanation} (parse note: {row['parse_error']})".strip()
        yield Item(
            dataset=stats.name,
            judge=judge,
            label=_grade(row.get("label")),
            consensus=_grade(float(consensus[code])),
            humans=[(str(k), _grade(v)) for k, v in sorted(human.items())]
            if isinstance(human, Mapping)
            else [],
            query_id=query_id,
            result_id=result_id,
            explanation=_cut(str(explanation), MAX_EXPLANATION_CHARS),
        )


def thumbnail(source: str, out: Path) -> str | None:
    """A small JPEG of a local image, written once to ``out/thumbs/`` under a name from the
    image's path, size and time; returns its path relative to ``out``, or None for URLs and
    unreadable files."""
    if "://" in source:
        return None
    try:
        info = os.stat(source)
        key = f"{Path(source).resolve()}\x1f{info.st_size}\x1f{info.st_mtime_ns}"
        name = f"{THUMBS}/{hashlib.sha256(key.encode()).hexdigest()[:24]}.jpg"
        path = out / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_thumbnail(source, path)
    except Exception:
        return None
    return name


def _write_thumbnail(source: str, path: Path) -> None:
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
        with atomic_file(path, binary=True) as out:
            small.save(out, "JPEG", quality=78)
