"""A cell's passes over its dataset: the check before the first call, then the calls' pass,
each reading the prepared items (or, for a catalogue not prepared yet, fed by the check's child),
with a small dataset kept in memory between passes."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from pathlib import Path

from mmjudge.config import SweepConfig
from mmjudge.data.loading import load_dataset, sampled_items, sampled_queries
from mmjudge.data.page_text import html_columns
from mmjudge.data.prepared import has_entry
from mmjudge.data.schema import Example
from mmjudge.data.survey import DatasetSurvey, survey
from mmjudge.locations import resolve_path
from mmjudge.speed.feed import PreparedFeed

#: A dataset whose first whole pass held at most this many items and characters of text is
#: kept in memory for later passes (a few MB); a larger one is read from disk on each pass,
#: so memory stays flat however large it is.
KEEP_ITEMS = 20_000
KEEP_CHARS = 8_000_000


class ExampleStream:
    """Re-iterable view of a dataset's examples, prepared.

    The first whole pass over the prepared items reads the file (or its prepared-items
    entry); a small dataset is kept from it (:data:`KEEP_ITEMS`, :data:`KEEP_CHARS`), so the
    later passes (the calls, a rerun from the cache) do not parse and validate it again. The
    check before the calls (:meth:`survey`) is that first pass unless it reads the items
    unprepared. A query sample
    (``dataset.sample_queries``) is drawn once, on the first pass, and kept for every later
    one.
    """

    def __init__(self, cfg: SweepConfig) -> None:
        self.cfg = cfg
        self._kept: list[Example] | None = None
        self._feed: PreparedFeed | None = None

    @functools.cached_property
    def cache(self) -> Path:
        """``paths.prepared_cache``: the prepared items every pass and cell share."""
        return resolve_path(self.cfg.paths.prepared_cache)

    @functools.cached_property
    def queries(self) -> frozenset[str] | None:
        return sampled_queries(self.cfg.dataset, self.cfg.seed, cache=self.cache)

    @functools.cached_property
    def items(self) -> frozenset[tuple[str, str]] | None:
        return sampled_items(self.cfg.dataset, self.cfg.seed, cache=self.cache)

    def __iter__(self) -> Iterator[Example]:
        if self._kept is not None:
            return iter(self._kept)
        feed, self._feed = self._feed, None
        if feed is not None:
            return self._keeping(self._fed(feed))
        return self._read()

    def take_feed(self, feed: PreparedFeed) -> None:
        """The next pass takes its items from ``feed`` (:mod:`~mmjudge.speed.feed`): the
        calls' pass, after the check read the items unprepared in the child that sends them."""
        self.close()
        self._feed = feed

    def head(self, n: int) -> list[Example]:
        """The first ``n`` items, leaving a feed for the calls' pass."""
        if self._feed is None:
            return list(itertools.islice(self, n))
        return list(itertools.islice(self._loaded(), n))

    def close(self) -> None:
        """Stop a feed no pass has taken (the cell ended before its calls)."""
        feed, self._feed = self._feed, None
        if feed is not None:
            feed.close()

    def survey(self) -> DatasetSurvey:
        """The check before the first call: every item read and validated, and counted.

        Where the items' HTML is to be converted and the prepared-items cache has none for
        this file and these settings yet, the check reads them as the loader gives them:
        preparing a scraped catalogue takes seconds, and is left to the calls' own pass
        (prepared in the check's child where there is one, :mod:`~mmjudge.speed.feed`, and
        written to the cache). Otherwise the check reads the prepared items, and keeps a small
        dataset's for the later passes.
        """
        dataset = self.cfg.dataset
        if not self.check_reads_prepared():
            unprepared = load_dataset(
                dataset, seed=self.cfg.seed, queries=self.queries, items=self.items, prepare=False
            )
            return survey(unprepared, html_columns(dataset))
        return survey(self)

    def check_reads_prepared(self) -> bool:
        """Whether :meth:`survey` reads the items prepared (see there): unless their HTML is
        to be converted and the cache has no entry for them yet. (Cutting plain text to
        ``dataset.max_text_tokens`` costs about as much as reading it, and is done in the
        check as before.)"""
        dataset = self.cfg.dataset
        return html_columns(dataset) is None or has_entry(dataset, self.cache)

    def _read(self) -> Iterator[Example]:
        """One pass over the file, keeping the examples while the dataset stays small."""
        return self._keeping(self._loaded())

    def _loaded(self) -> Iterator[Example]:
        return load_dataset(
            self.cfg.dataset,
            seed=self.cfg.seed,
            queries=self.queries,
            items=self.items,
            cache=self.cache,
        )

    def _fed(self, feed: PreparedFeed) -> Iterator[Example]:
        """The items ``feed`` sends, then, should its child stop early, the rest of them
        prepared here."""
        yield from feed.items()
        if not feed.complete:
            yield from itertools.islice(self._loaded(), feed.received, None)

    def _keeping(self, examples: Iterator[Example]) -> Iterator[Example]:
        """``examples``, kept for later passes when the pass is whole and small."""
        kept: list[Example] | None = []
        chars = 0
        for example in examples:
            if kept is not None:
                chars += len(example.query) + sum(len(value) for _name, value in example.fields)
                kept.append(example)
                if len(kept) > KEEP_ITEMS or chars > KEEP_CHARS:
                    kept = None
            yield example
        if kept is not None:  # a whole pass: a partial one keeps nothing
            self._kept = kept
