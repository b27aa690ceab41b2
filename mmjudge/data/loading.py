"""Reading a dataset: the registered loader's examples, sampled by query, limited, with HTML
converted and long text cut, streamed in file order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from mmjudge.config import DatasetConfig
from mmjudge.data.page_text import clean_fields, html_columns
from mmjudge.data.registry import loader_for
from mmjudge.data.sample import sample_query_ids
from mmjudge.data.schema import Example
from mmjudge.data.validation import truncate_fields


def load_dataset(
    cfg: DatasetConfig, *, seed: int = 0, queries: frozenset[str] | None = None
) -> Iterator[Example]:
    """Stream a dataset's examples, validated and prepared, in file order.

    ``dataset.sample_queries`` keeps every item of a seeded sample of queries (``seed``; pass
    ``queries``, from :func:`sampled_queries`, to skip drawing it again); ``dataset.limit``
    then keeps the first N items. Each item's HTML is converted where the config asks, then
    its text is cut to ``dataset.max_text_tokens``.
    """
    loader = loader_for(cfg)
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
    return sample_query_ids(loader_for(cfg)(cfg), cfg.sample_queries, seed)


def _prepared(example: Example, cfg: DatasetConfig) -> Example:
    """HTML converted to text where asked, then the text cut to the budget."""
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
