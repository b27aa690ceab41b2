"""The canonical example every loader yields.

A dataset is a stream of :class:`Example`; each loader (:mod:`mmjudge.data.loader_registry`) turns
one on-disk layout into it and raises :class:`~mmjudge.errors.DatasetError` naming the file,
line and field on bad input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from mmjudge.config import DatasetConfig
from mmjudge.locations import resolve_path


class MissingImage(NamedTuple):
    """An image an item names that is not there. Only a cell that shows images needs it: such
    a cell stops on it before its first call (:func:`mmjudge.data.survey.check_images`); a
    text-only cell never looks."""

    path: str
    """Where it was looked for (absolute)."""
    problem: str
    """One line naming the dataset file, the line, the path as written and the folder."""


@dataclass(frozen=True)
class Example:
    """One (query, result) pair with its human labels."""

    query_id: str
    """Query identifier."""
    query: str
    """Query text."""
    result_id: str
    """Result identifier."""
    fields: tuple[tuple[str, str], ...]
    """The result's text fields, in display order."""
    images: tuple[str, ...] = ()
    """Image paths (absolute, checked to exist) or http(s) URLs."""
    labels: dict[str, int] = field(default_factory=dict)
    """Human grades keyed by annotator."""
    image_names: tuple[str, ...] = ()
    """Image paths as written in the dataset (relative to its root), for records and reports."""
    truncated: bool = False
    """True when the text fields were cut to ``dataset.max_text_tokens``."""
    tokens_removed: int = 0
    """Approximate tokens cut from the text fields (0 when nothing was cut)."""
    attributes: tuple[tuple[str, str], ...] = ()
    """Item attributes the judge is never shown (its ``language``, its slices' values), by
    name (see :mod:`mmjudge.data.attributes`)."""
    missing_images: tuple[MissingImage, ...] = ()
    """Images the item names that do not exist (not in ``images``)."""

    def attribute(self, name: str) -> str | None:
        """The attribute ``name``, or None where the item has none."""
        return dict(self.attributes).get(name)

    @property
    def key(self) -> str:
        """The item's key (:func:`item_key`)."""
        return item_key(self.query_id, self.result_id)


def item_key(query_id: str, result_id: str) -> str:
    """An item's key, ``query_id<TAB>result_id``: how a run's rows, the response cache and a
    trained judge's manifest name it."""
    return f"{query_id}\t{result_id}"


def dataset_root(cfg: DatasetConfig) -> Path:
    """The dataset's folder: ``dataset.path`` against the working folder, or inside an
    installed package for a ``pkg://`` path."""
    return resolve_path(cfg.path)
