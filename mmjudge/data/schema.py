"""The canonical example and the loader registry.

A dataset is a stream of :class:`Example`; each loader turns one on-disk layout into it and
raises :class:`~mmjudge.errors.DatasetError` naming the file, line and field on bad input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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
    tokens_removed: int = 0
    """Approximate tokens cut from the text fields (0 when nothing was cut)."""

    @property
    def key(self) -> str:
        return f"{self.query_id}\t{self.result_id}"


def dataset_root(cfg: DatasetConfig) -> Path:
    root = Path(cfg.path)
    return root if root.is_absolute() else PROJECT_ROOT / root


def load_dataset(
    cfg: DatasetConfig, *, seed: int = 0, queries: frozenset[str] | None = None
) -> Iterator[Example]:
    """Stream a dataset's examples, validated and prepared, in file order.

    ``dataset.sample_queries`` keeps every item of a seeded sample of queries (``seed``; pass
    ``queries``, from :func:`sampled_queries`, to skip drawing it again); ``dataset.limit``
    then keeps the first N items. Each item's HTML is converted where the config asks, then
    its text is cut to ``dataset.max_text_tokens``.
    """
    loader = _loader(cfg)
    if queries is None:
        queries = sampled_queries(cfg, seed)
    count = 0
    for example in loader(cfg):
        if queries is not None and example.query_id not in queries:
            continue
        if cfg.limit is not None and count >= cfg.limit:
            return
        count += 1
        yield _prepared(example, cfg)


def sampled_queries(cfg: DatasetConfig, seed: int) -> frozenset[str] | None:
    """The query ids ``dataset.sample_queries`` keeps, or ``None`` when it is not set."""
    if cfg.sample_queries is None:
        return None
    from mmjudge.data.sample import sample_query_ids

    return sample_query_ids(_loader(cfg)(cfg), cfg.sample_queries, seed)


def _loader(cfg: DatasetConfig) -> Callable[[DatasetConfig], Iterator[Example]]:
    from mmjudge.data import flickr8k, hm, jsonl, table, trec

    loaders: dict[str, Callable[[DatasetConfig], Iterator[Example]]] = {
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
    return loader


def _prepared(example: Example, cfg: DatasetConfig) -> Example:
    """HTML converted to text where asked, then the text cut to the budget."""
    from mmjudge.data.html import clean_fields, html_columns
    from mmjudge.data.validation import truncate_fields

    fields = example.fields
    columns = html_columns(cfg)
    if columns is not None:
        fields = clean_fields(fields, columns)
    cut = truncate_fields(fields, cfg.max_text_tokens)
    if cut.fields == example.fields:
        return example
    return replace(
        example, fields=cut.fields, truncated=cut.truncated, tokens_removed=cut.tokens_removed
    )
