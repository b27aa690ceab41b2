"""The canonical example and the loader registry.

A dataset is a stream of :class:`Example`; each loader turns one on-disk layout into it and
raises :class:`~mmjudge.errors.DatasetError` naming the file, line and field on bad input.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from mmjudge import PROJECT_ROOT
from mmjudge.config import DatasetConfig
from mmjudge.errors import ConfigError


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

    @property
    def key(self) -> str:
        return f"{self.query_id}\t{self.result_id}"


def dataset_root(cfg: DatasetConfig) -> Path:
    root = Path(cfg.path)
    return root if root.is_absolute() else PROJECT_ROOT / root


def load_dataset(cfg: DatasetConfig) -> Iterator[Example]:
    """Stream a dataset's examples, validated, in file order."""
    from mmjudge.data import flickr8k, hm, jsonl, table, trec

    loaders = {
        "jsonl": jsonl.load,
        "hm": hm.load,
        "flickr8k_expert": flickr8k.load,
        "trec": trec.load,
        "table": table.load,
    }
    loader = loaders.get(cfg.loader)
    if loader is None:
        raise ConfigError(
            f"dataset.loader='{cfg.loader}' is unknown for dataset '{cfg.name}'; "
            f"choose one of: {', '.join(sorted(loaders))}"
        )
    from mmjudge.data.validation import truncate_fields

    for count, example in enumerate(loader(cfg)):
        if cfg.limit is not None and count >= cfg.limit:
            return
        if cfg.max_text_tokens is not None:
            fields, truncated = truncate_fields(example.fields, cfg.max_text_tokens)
            if truncated:
                example = replace(example, fields=tuple(fields), truncated=True)
        yield example
