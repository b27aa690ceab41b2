"""Seeded samples of a dataset: whole queries (``dataset.sample_queries``) or graded items
(``dataset.sample_items``, the order a race judges items in).

A query sample keeps every item of a sampled query, none of the others. An item sample keeps
the N graded items (those with a person's grade) first in one seeded order. Either way a
query's or an item's place in the draw is a hash of the seed and its id, so the sample does
not depend on file order, a larger sample contains every smaller one drawn with the same seed,
and finding it needs one pass over the items holding no more than the N ids kept.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterable

from mmjudge.data.schema import Example


def draw_rank(seed: int, query_id: str) -> int:
    """The query's position in the seeded draw (lower is drawn first)."""
    digest = hashlib.sha256(f"{seed}\0{query_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def item_rank(seed: int, query_id: str, result_id: str) -> int:
    """The item's position in the seeded order of items (lower comes first): the one order
    :func:`sample_item_keys` and a race (:func:`mmjudge.studies.race_rule.race_order`) draw in."""
    return draw_rank(seed, f"{query_id}\t{result_id}")


def sample_item_keys(
    examples: Iterable[Example], n: int, seed: int, *, graded_only: bool = True
) -> frozenset[tuple[str, str]]:
    """The ``(query id, result id)`` of the ``n`` graded items of lowest :func:`item_rank`
    (every graded item when there are fewer); items no person graded are never drawn, unless
    ``graded_only`` is off (a race asking for grades draws among every item)."""
    heap: list[tuple[int, tuple[str, str]]] = []  # (-rank, key): the highest rank kept on top
    for example in examples:
        if graded_only and not example.labels:
            continue
        key = (example.query_id, example.result_id)
        rank = item_rank(seed, *key)
        if len(heap) < n:
            heapq.heappush(heap, (-rank, key))
        elif rank < -heap[0][0]:
            heapq.heapreplace(heap, (-rank, key))
    return frozenset(key for _rank, key in heap)


def sample_query_ids(examples: Iterable[Example], n: int, seed: int) -> frozenset[str]:
    """The ``n`` query ids of lowest :func:`draw_rank` (all of them when there are fewer)."""
    heap: list[tuple[int, str]] = []  # (-rank, query id): the highest rank kept is on top
    kept: set[str] = set()
    for example in examples:
        query_id = example.query_id
        if query_id in kept:
            continue
        rank = draw_rank(seed, query_id)
        if len(heap) < n:
            heapq.heappush(heap, (-rank, query_id))
            kept.add(query_id)
        elif rank < -heap[0][0]:
            _rank, dropped = heapq.heapreplace(heap, (-rank, query_id))
            kept.discard(dropped)
            kept.add(query_id)
    return frozenset(kept)
