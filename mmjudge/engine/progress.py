"""The one-line progress display of a judging cell."""

from __future__ import annotations

import sys
import time

from mmjudge.display import usd


class Progress:
    """A one-line progress display on stderr: done/total, rate, ETA and dollars so far."""

    def __init__(self, label: str, total: int | None, enabled: bool) -> None:
        self.label = label
        self.total = total
        self.enabled = enabled and sys.stderr.isatty()
        self.done = 0
        self.usd = 0.0
        self.started = time.monotonic()
        self._last = 0.0

    def update(self, usd: float) -> None:
        self.done += 1
        self.usd += usd
        now = time.monotonic()
        if self.enabled and now - self._last > 0.2:
            self._last = now
            sys.stderr.write("\r" + self.line() + "\x1b[K")
            sys.stderr.flush()

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        total = f"/{self.total}" if self.total is not None else ""
        eta = ""
        if self.total and rate > 0:
            eta = f" ETA {max(self.total - self.done, 0) / rate:.0f}s"
        return f"{self.label} {self.done}{total} {rate:.1f}/s{eta} {usd(self.usd)}"

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + self.line() + "\x1b[K\n")
            sys.stderr.flush()
