"""Reading a dataset: the registered loader's examples, sampled by query, limited, with HTML
converted and long text cut, streamed in file order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from mmjudge.config import DatasetConfig
from mmjudge.data.attributes import with_attributes
from mmjudge.data.loader_registry import loader_for
from mmjudge.data.page_text import clean_fields, html_columns
from mmjudge.data.prepared import cached_items
from mmjudge.data.sample import sample_item_keys, sample_query_ids
from mmjudge.data.schema import Example
from mmjudge.data.validation import truncate_fields


def load_dataset(
    cfg: DatasetConfig,
    *,
    seed: int = 0,
    queries: frozenset[str] | None = None,
    items: frozenset[tuple[str, str]] | None = None,
    cache: Path | None = None,
    prepare: bool = True,
) -> Iterator[Example]:
    """Stream a dataset's examples, validated and prepared, in file order.

    ``dataset.sample_queries`` keeps every item of a seeded sample of queries (``seed``; pass
    ``queries``, from :func:`sampled_queries`, to skip drawing it again), and
    ``dataset.sample_items`` a seeded sample of graded items (``items``, from
    :func:`sampled_items`, likewise); ``dataset.limit`` then keeps the first N items. Each
    item's HTML is converted where the config asks, then its text is cut to
    ``dataset.max_text_tokens``. With ``cache`` (``paths.prepared_cache``)
    the prepared items are read from there when a pass over the same file with the same
    settings has written them, and written there by a whole pass that finds none
    (:mod:`mmjudge.data.prepared`). With ``prepare=False`` the items are yielded as the loader
    gives them (validated, sampled and limited, their HTML not converted nor their text cut),
    and nothing is cached.
    """
    loader = loader_for(cfg)
    if queries is None:
        queries = sampled_queries(cfg, seed, cache=cache)
    if items is None:
        items = sampled_items(cfg, seed, cache=cache)
    stream: Iterator[Example]
    if not prepare:
        stream = (with_attributes(example, cfg) for example in loader(cfg))
    elif cache is None:
        stream = (_prepared(example, cfg) for example in loader(cfg))
    else:
        # A pass cut short by dataset.limit reads an entry but does not write one.
        stream = cached_items(
            cfg,
            cache,
            lambda: (
                _prepared(example, cfg)
                for example in loader(cfg)
                if cfg.limit is None or queries is None or example.query_id in queries
            ),
            write=cfg.limit is None,
        )
    count = 0
    for example in stream:
        if queries is not None and example.query_id not in queries:
            continue
        if items is not None and (example.query_id, example.result_id) not in items:
            continue
        if cfg.limit is not None and count >= cfg.limit:
            return
        count += 1
        yield example


def sampled_queries(
    cfg: DatasetConfig, seed: int, *, cache: Path | None = None
) -> frozenset[str] | None:
    """The query ids ``dataset.sample_queries`` keeps, or ``None`` when it is not set; with
    ``cache``, read from the prepared items there when a pass has written them."""
    if cfg.sample_queries is None:
        return None
    loader = loader_for(cfg)
    examples = (
        loader(cfg) if cache is None else cached_items(cfg, cache, lambda: loader(cfg), write=False)
    )
    return sample_query_ids(examples, cfg.sample_queries, seed)


def sampled_items(
    cfg: DatasetConfig, seed: int, *, cache: Path | None = None
) -> frozenset[tuple[str, str]] | None:
    """The (query id, result id) of the items ``dataset.sample_items`` keeps, or ``None`` when
    it is not set; with ``cache``, read from the prepared items there when a pass has written
    them."""
    if cfg.sample_items is None:
        return None
    loader = loader_for(cfg)
    examples = (
        loader(cfg) if cache is None else cached_items(cfg, cache, lambda: loader(cfg), write=False)
    )
    return sample_item_keys(
        examples, cfg.sample_items, seed, graded_only=cfg.sample_items_from == "graded"
    )


def _prepared(example: Example, cfg: DatasetConfig) -> Example:
    """Attributes taken out of the text shown, HTML converted to text where asked, then the
    text cut to the budget."""
    example = with_attributes(example, cfg)
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
