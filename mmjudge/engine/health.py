"""What failed attempts say about the endpoint: whether the cell can go on.

The sync runner asks two watches after every failed attempt and tells both of every answer;
the first that says stop ends the cell, with its one line:

- the circuit breaker (:mod:`~mmjudge.engine.breaker`): failures of one kind that no retry
  fixed, in a row, mean the endpoint cannot work (nothing listening, TLS, only 5xx...);
- the rate-limit watch (:mod:`~mmjudge.engine.rate_limits`): nothing but rate-limit answers
  for ``runner.rate_limit_wait_s`` mean a limit no retry within the run can outlast.
"""

from __future__ import annotations

from dataclasses import dataclass

from mmjudge.config import RunnerConfig
from mmjudge.engine.breaker import Breaker
from mmjudge.engine.rate_limits import RateLimitWatch
from mmjudge.errors import FatalProviderError


@dataclass
class EndpointHealth:
    """The breaker and the rate-limit watch of one runner."""

    breaker: Breaker
    rate_limits: RateLimitWatch

    @classmethod
    def of(cls, settings: RunnerConfig, endpoint: str, model_name: str) -> EndpointHealth:
        """The watches ``settings`` ask for, on calls to ``endpoint``."""
        return cls(
            Breaker(settings.breaker_failures, endpoint, model_name),
            RateLimitWatch(settings.rate_limit_wait_s, endpoint, model_name),
        )

    def success(self) -> None:
        """An answer: both watches start over."""
        self.breaker.success()
        self.rate_limits.success()

    def failure(
        self, error: BaseException, described: str, *, settled: bool
    ) -> FatalProviderError | None:
        """Count a failed attempt; returns the error that stops the cell, or None.

        ``settled``: no retry has fixed the failure (a failed retry, or a failure that will
        not be retried). Only those count for the breaker, so a burst of first attempts
        failing together (stale keep-alive connections dropped at once) does not trip it
        until their retries fail too. Every rate-limit answer counts for the watch.
        """
        if settled:
            trip = self.breaker.failure(error, described)
            if trip is not None:
                return trip
        return self.rate_limits.failure(error, described)
