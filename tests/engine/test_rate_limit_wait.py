"""Rate limits with an end: a stretch of nothing but 429s lasting ``runner.rate_limit_wait_s``
stops the cell in one line naming the endpoint, the provider's message and how to resume;
anything but a rate limit ends the stretch."""

from __future__ import annotations

import pytest

from mmjudge.config import RunnerConfig
from mmjudge.engine.rate_limits import RateLimitedTooLong, RateLimitWatch
from mmjudge.engine.sync import Runner
from mmjudge.errors import ConfigError, FatalProviderError
from mmjudge.judges.base import ErrorVerdict
from tests.engine.test_sync import MODEL, FakeJudge, collect, items, settings


class StatusError(Exception):
    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(f"Error code: {status} - {message}")
        self.status_code = status


LIMIT = "Rate limit reached for fake-1 on requests per min (RPM): Limit 3, Used 3"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_stretch_is_timed_from_the_first_rate_limit() -> None:
    clock = Clock()
    watch = RateLimitWatch(60.0, "http://127.0.0.1:9/v1", "fake", clock=clock)
    for _ in range(5):
        assert watch.failure(StatusError(429, LIMIT), f"RateLimitError: {LIMIT}") is None
        clock.now += 10
    clock.now += 10  # 60 s after the first
    stop = watch.failure(StatusError(429, LIMIT), f"RateLimitError: {LIMIT}")
    assert isinstance(stop, RateLimitedTooLong) and isinstance(stop, FatalProviderError)
    text = str(stop)
    assert "\n" not in text
    assert "stopped after 60 s in which all 6 answers from http://127.0.0.1:9/v1" in text
    assert LIMIT in text and "run the same command again to resume" in text
    assert "runner.rate_limit_wait_s=60" in text


@pytest.mark.parametrize("breaks", ["success", "other answer"])
def test_any_other_answer_ends_the_stretch(breaks: str) -> None:
    clock = Clock()
    watch = RateLimitWatch(60.0, "e", "fake", clock=clock)
    watch.failure(StatusError(429), "429")
    clock.now += 50
    if breaks == "success":
        watch.success()
    else:
        assert watch.failure(StatusError(400, "bad image"), "400") is None
    clock.now += 50
    assert watch.failure(StatusError(429), "429") is None  # a new stretch begins here
    clock.now += 59
    assert watch.failure(StatusError(429), "429") is None
    clock.now += 1
    assert watch.failure(StatusError(429), "429") is not None


def test_failures_without_an_answer_neither_count_nor_break_it() -> None:
    clock = Clock()
    watch = RateLimitWatch(60.0, "e", "fake", clock=clock)
    watch.failure(StatusError(429), "429")
    clock.now += 30
    assert watch.failure(TimeoutError("no answer"), "timeout") is None
    clock.now += 30
    assert watch.failure(StatusError(429), "429") is not None


def test_null_never_stops() -> None:
    clock = Clock()
    watch = RateLimitWatch(None, "e", "fake", clock=clock)
    watch.failure(StatusError(429), "429")
    clock.now += 1e6
    assert watch.failure(StatusError(429), "429") is None


class RateLimitedJudge(FakeJudge):
    """Answers every call with a 429, retryable as the real providers' are."""

    async def generate(self, request):  # type: ignore[no-untyped-def]
        self.calls.append(request.item_key)
        raise StatusError(429, LIMIT)

    def classify_error(self, error: Exception) -> ErrorVerdict:
        return ErrorVerdict(retryable=True, retry_after=0.0)


def test_a_runner_getting_only_rate_limits_stops_after_the_wait() -> None:
    judge = RateLimitedJudge()
    runner = Runner(judge, MODEL, settings(rate_limit_wait_s=0.2, max_retries=1000, concurrency=4))
    with pytest.raises(RateLimitedTooLong, match="answers from the fake API were rate limits"):
        collect(runner, items(50))
    # Without the wait every item would be retried its 1000 times.
    assert len(judge.calls) < 50 * 1000


def test_the_wait_must_be_positive_or_null() -> None:
    RunnerConfig(rate_limit_wait_s=None).validate()
    with pytest.raises(ConfigError, match=r"runner\.rate_limit_wait_s=0 is not allowed"):
        RunnerConfig(rate_limit_wait_s=0).validate()
    assert 60 < RunnerConfig().rate_limit_wait_s <= 600  # type: ignore[operator]
