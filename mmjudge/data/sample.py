"""A seeded sample of whole queries (``dataset.sample_queries``).

Judges are compared on complete queries: every item of a sampled query is kept, none of the
others. A query's place in the draw is a hash of the seed and its id, so the sample does not
depend on file order, a larger sample contains every smaller one drawn with the same seed, and
finding it needs one pass over the items holding no more than the N query ids kept.
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
