"""Rate limits with an end: stop a cell that gets nothing but rate-limit answers for
``runner.rate_limit_wait_s``.

A 429 is retried with backoff, and the circuit breaker (:mod:`~mmjudge.engine.breaker`)
leaves it alone: the endpoint is alive and a passing burst clears within a minute. A limit
that does not clear (a daily quota, a tier far below the run's concurrency) would otherwise
keep a run retrying every item to the end, each as an error row, for as long as the dataset
lasts. :class:`RateLimitWatch` measures the stretch of time since the first of an unbroken
run of rate-limit answers; any answer that is not a rate limit (a success, or the server
answering with another status) ends the stretch. Failures that carry no answer (timeouts,
dropped connections) neither extend nor end it: the breaker counts those.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from mmjudge.engine.breaker import causes
from mmjudge.errors import FatalProviderError

#: The HTTP status of a rate-limit answer.
RATE_LIMITED = 429


class RateLimitedTooLong(FatalProviderError):
    """Every answer for ``runner.rate_limit_wait_s`` was a rate limit: the cell stops."""


def answer_status(error: BaseException) -> int | None:
    """The HTTP status the server answered with, when the error carries one."""
    for cause in causes(error):
        status = getattr(cause, "status_code", None)
        if isinstance(status, int):
            return status
    return None


@dataclass
class RateLimitWatch:
    """Times an unbroken stretch of rate-limit answers and says when it has lasted too long."""

    wait_s: float | None
    """Seconds of nothing but rate limits that stop the cell (None: never)."""
    endpoint: str
    """Where the calls go, for the message."""
    model_name: str
    clock: Callable[[], float] = time.monotonic
    since: float | None = None
    """When the stretch began (None: not in one)."""
    answers: int = 0
    """Rate-limit answers in the stretch."""

    def success(self) -> None:
        """An answer: the limit let a call through."""
        self.since = None
        self.answers = 0

    def failure(self, error: BaseException, described: str) -> RateLimitedTooLong | None:
        """Count a failed attempt; returns the error that stops the cell once the stretch of
        rate limits has lasted ``wait_s``. ``described``: the error's one-line text (the
        provider's message), quoted in the stop line."""
        status = answer_status(error)
        if status is None:
            return None  # no answer came: neither a rate limit nor the end of one
        if status != RATE_LIMITED:
            self.success()  # the server answered something else: the stretch is broken
            return None
        now = self.clock()
        if self.since is None:
            self.since = now
        self.answers += 1
        lasted = now - self.since
        if self.wait_s is None or lasted < self.wait_s:
            return None
        return RateLimitedTooLong(
            f"model '{self.model_name}': stopped after {lasted:.0f} s in which all "
            f"{self.answers} answers from {self.endpoint} were rate limits (last: "
            f"{described}); the provider's limit for this key and model is lower than the run "
            "asks for: wait for it to reset or raise it with the provider, or lower "
            "runner.concurrency, then run the same command again to resume (answers already "
            "paid for come from the response cache; runner.rate_limit_wait_s="
            f"{self.wait_s:g} sets how long rate limits may last before a run stops)"
        )
