"""Looking work items up in the response cache many at a time.

A rerun of a finished cell finds every answer in the cache; one query per item is then a
good part of its time. :class:`CacheLookahead` takes items ahead of the runner and looks up
their keys in one query: one item at a time while answers are missing (a live run calls for
each item at once, so nothing waits for items further ahead), twice as many after each
window whose every answer was found, up to :data:`MAX_WINDOW`.

An answer found here is final. One not found may still arrive before the item is called
(another process paying for it): the runner's claim, taken before the call, looks again.
Where claims are taken, that second look is also why, while answers are missing, only one
item in :data:`PROBE_EVERY` is looked up here: the claim finds any answer the others have,
and a probe that finds one turns the windows on again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from mmjudge.records import JudgeResponse
from mmjudge.running.cache import RequestKeys, ResponseCache
from mmjudge.running.policy import WorkItem

#: The most items taken ahead of the runner for one lookup.
MAX_WINDOW = 256
#: While answers are missing and claims look again, one item in this many is looked up.
PROBE_EVERY = 16


class LookedUp(NamedTuple):
    """A work item with its request's cache key and the answer the cache holds for it."""

    item: WorkItem
    key: str
    """The request's cache key ("" for an item without a request)."""
    response: JudgeResponse | None


class CacheLookahead:
    """The items of ``next_item``, each with its key and cached answer (see the module)."""

    def __init__(
        self,
        next_item: Callable[[], Awaitable[WorkItem | None]],
        cache: ResponseCache,
        keys: RequestKeys,
        claims_look_again: bool = False,
    ) -> None:
        self._next_item = next_item
        self._cache = cache
        self._keys = keys
        self._ready: deque[LookedUp] = deque()
        self._window = 1
        self._exhausted = False
        self._probe_every = PROBE_EVERY if claims_look_again else 1
        self._unprobed = 0
        """Items still to pass without a lookup before the next probe."""
        self.lookups = 0
        """Queries made (for tests)."""

    async def __call__(self) -> LookedUp | None:
        """The next item looked up, or None at the end."""
        if not self._ready and not self._exhausted:
            await self._fill()
        return self._ready.popleft() if self._ready else None

    async def _fill(self) -> None:
        taken: list[tuple[WorkItem, str]] = []
        while len(taken) < self._window:
            item = await self._next_item()
            if item is None:
                self._exhausted = True
                break
            taken.append((item, "" if item.request is None else self._keys(item.request)))
        keys = [key for _item, key in taken if key]
        if keys and self._unprobed:
            self._unprobed -= 1
            found = {}
        elif keys:
            self.lookups += 1
            found = self._cache.get_many(keys)
            all_found = len(found) == len(set(keys))
            self._window = min(2 * self._window, MAX_WINDOW) if all_found else 1
            self._unprobed = 0 if all_found else self._probe_every - 1
        else:  # items that cannot be called (nothing to look up)
            found = {}
            self._window = min(2 * self._window, MAX_WINDOW)
        self._ready.extend(LookedUp(item, key, found.get(key)) for item, key in taken)


def looked_up(
    next_item: Callable[[], Awaitable[WorkItem | None]],
    cache: ResponseCache | None,
    keys: RequestKeys,
    claims_look_again: bool = False,
) -> Callable[[], Awaitable[LookedUp | None]]:
    """The items of ``next_item`` looked up in ``cache`` (see :class:`CacheLookahead`); with
    no cache, each with no key and no answer."""
    if cache is not None:
        return CacheLookahead(next_item, cache, keys, claims_look_again)

    async def uncached() -> LookedUp | None:
        item = await next_item()
        return None if item is None else LookedUp(item, "", None)

    return uncached


def look_up(item: WorkItem, cache: ResponseCache | None, keys: RequestKeys) -> LookedUp:
    """One item looked up in ``cache`` on its own."""
    if item.request is None or cache is None:
        return LookedUp(item, "", None)
    key = keys(item.request)
    return LookedUp(item, key, cache.get(key))
