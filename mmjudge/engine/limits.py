"""Request and token rate limits (``model.requests_per_minute``, ``tokens_per_minute``)."""

from __future__ import annotations

import asyncio
import time


class RateLimiter:
    """A token bucket refilled continuously; ``rate`` units per minute, ``None`` for no limit."""

    def __init__(self, per_minute: float | None) -> None:
        self.rate = per_minute / 60.0 if per_minute else None
        self.capacity = per_minute or 0.0
        self.level = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    async def acquire(self, amount: float = 1.0) -> None:
        if self.rate is None:
            return
        amount = min(amount, self.capacity)
        async with self._lock:
            while True:
                now = time.monotonic()
                self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
                self.updated = now
                if self.level >= amount:
                    self.level -= amount
                    return
                await asyncio.sleep((amount - self.level) / self.rate)
