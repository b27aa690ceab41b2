"""Taking work items one at a time from a plain or an asynchronous iterable."""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def next_of(
    items: Iterable[T] | AsyncIterable[T],
) -> Callable[[], Awaitable[T | None]]:
    """A coroutine function giving the next item, or None at the end."""
    if isinstance(items, AsyncIterable):
        async_iterator = aiter(items)

        async def next_async() -> T | None:
            return await anext(async_iterator, None)

        return next_async
    iterator = iter(items)

    async def next_sync() -> T | None:
        return next(iterator, None)

    return next_sync
