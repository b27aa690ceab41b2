"""The circuit breaker's classification of failures and its count; the runner stopping a cell
whose endpoint cannot work, and timeout rows that say which limit fired."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl

import pytest

from mmjudge.engine.breaker import Breaker, EndpointDown, failure_kind
from mmjudge.engine.policy import error_text
from mmjudge.engine.sync import Runner
from mmjudge.judges.base import ErrorVerdict
from mmjudge.records import JudgeRequest, JudgeResponse, Usage
from tests.engine.test_sync import MODEL, FakeJudge, collect, items, settings


def chained(outer: Exception, *inner: BaseException) -> Exception:
    """``outer`` raised from ``inner[0]``, raised from ``inner[1]``, ..."""
    current: BaseException = outer
    for cause in inner:
        current.__cause__ = cause
        current = cause
    return outer


class APIConnectionError(Exception):
    pass


class APITimeoutError(APIConnectionError):
    pass


class ClientConnectorError(OSError):
    pass


class ServerDisconnectedError(Exception):
    pass


class StatusError(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(f"Error code: {status}")
        self.status_code = status


@pytest.mark.parametrize(
    ("error", "endpoint", "kind"),
    [
        # What the SDKs raise, with the transport's error behind them.
        (
            chained(
                APITimeoutError("Request timed out."),
                ClientConnectorError("Cannot connect"),
                ConnectionRefusedError(111, "Connect call failed"),
            ),
            "http://127.0.0.1:9/v1",
            "refused",
        ),
        (
            chained(APIConnectionError("Connection error."), socket.gaierror(-2, "Name unknown")),
            "http://nohost.invalid/v1",
            "dns",
        ),
        (
            chained(APIConnectionError("Connection error."), ssl.SSLError(1, "WRONG_VERSION")),
            "https://127.0.0.1:1/v1",
            "tls",
        ),
        (
            chained(
                APITimeoutError("Request timed out."),
                ClientConnectorError("Cannot connect"),
                ConnectionResetError(),
            ),
            "https://127.0.0.1:1/v1",
            "tls",
        ),
        (
            chained(APITimeoutError("Request timed out."), ClientConnectorError("no route")),
            "http://10.255.255.1/v1",
            "unreachable",
        ),
        (
            chained(APITimeoutError("Request timed out."), ServerDisconnectedError()),
            "http://x/v1",
            "dropped",
        ),
        (chained(APITimeoutError("Request timed out."), TimeoutError()), "http://x/v1", "timeout"),
        (StatusError(500), "http://x/v1", "server_error"),
        (StatusError(529), "http://x/v1", "server_error"),
        (chained(ValueError("bad body"), json.JSONDecodeError("x", "{", 0)), "", "malformed"),
        # Signs of a live endpoint do not count.
        (StatusError(429), "http://x/v1", None),
        (StatusError(400), "http://x/v1", None),
        (ValueError("something else"), "http://x/v1", None),
    ],
)
def test_failures_are_classified_by_their_root_cause(
    error: Exception, endpoint: str, kind: str | None
) -> None:
    assert failure_kind(error, endpoint) == kind


def test_the_breaker_opens_after_n_failures_of_one_kind_with_no_success_between() -> None:
    breaker = Breaker(3, "http://127.0.0.1:9/v1", "gpt4o")
    refused = chained(APIConnectionError("Connection error."), ConnectionRefusedError())
    assert breaker.failure(refused, "x") is None
    assert breaker.failure(StatusError(429), "rate limited") is None  # does not count
    assert breaker.failure(refused, "x") is None
    breaker.success()  # a success resets the count
    assert breaker.failure(refused, "x") is None
    assert breaker.failure(refused, "x") is None
    opened = breaker.failure(refused, "APIConnectionError: Connection error.")
    assert isinstance(opened, EndpointDown)
    message = str(opened)
    assert "3 calls in a row to http://127.0.0.1:9/v1" in message
    assert "refused" in message and "model.base_url" in message
    assert "APIConnectionError: Connection error." in message and "\n" not in message


class Unreachable(FakeJudge):
    """Every call fails the way the SDKs fail when nothing listens on the port."""

    base_url = "http://127.0.0.1:9/v1"

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.calls.append(request.item_key)
        error = APIConnectionError("Connection error.")
        error.__cause__ = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
        raise error

    def classify_error(self, error: Exception) -> ErrorVerdict:
        return ErrorVerdict(retryable=True)


def test_an_unreachable_endpoint_stops_the_cell_after_n_calls() -> None:
    judge = Unreachable()
    runner = Runner(judge, MODEL, settings(concurrency=4, max_retries=5, breaker_failures=6))
    with pytest.raises(EndpointDown, match=r"127\.0\.0\.1:9/v1 were refused"):
        collect(runner, items(240))
    # Without the breaker: 240 items × 6 attempts. With it: the first attempts (not counted
    # until a retry fails too), the failed retries that open it, and the calls in flight.
    assert len(judge.calls) <= 6 + 2 * 4


class Dropped(FakeJudge):
    """Every item's first attempt loses its connection; the retry gets through."""

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        first = request.item_key not in self.calls
        self.calls.append(request.item_key)
        if first:
            raise chained(APIConnectionError("Connection error."), ServerDisconnectedError())
        return JudgeResponse(text="2\nok", usage=Usage(input_tokens=1, output_tokens=1))

    def classify_error(self, error: Exception) -> ErrorVerdict:
        return ErrorVerdict(retryable=True)


def test_a_burst_of_failures_that_retries_fix_does_not_trip_the_breaker() -> None:
    judge = Dropped()
    runner = Runner(judge, MODEL, settings(concurrency=8, breaker_failures=3))
    outcomes = collect(runner, items(50))
    assert len(outcomes) == 50 and all(o.response is not None for o in outcomes)
    assert runner.stats.calls.retries == 50


def test_with_retries_off_every_failure_counts() -> None:
    judge = Unreachable()
    runner = Runner(judge, MODEL, settings(concurrency=1, max_retries=0, breaker_failures=3))
    with pytest.raises(EndpointDown):
        collect(runner, items(20))
    assert len(judge.calls) == 3


class Silent(FakeJudge):
    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.calls.append(request.item_key)
        await asyncio.sleep(10)
        raise AssertionError("unreachable")


def test_a_run_where_every_call_times_out_stops_and_names_the_setting() -> None:
    judge = Silent()
    runner = Runner(
        judge, MODEL, settings(concurrency=8, timeout_s=0.05, max_retries=3, breaker_failures=8)
    )
    with pytest.raises(EndpointDown) as stopped:
        collect(runner, items(100))
    assert "timed out" in str(stopped.value) and "runner.timeout_s" in str(stopped.value)
    assert len(judge.calls) <= 8 + 2 * 8


def test_a_negative_timeout_trips_the_breaker_instead_of_retrying_every_item() -> None:
    judge = Silent()
    runner = Runner(judge, MODEL, settings(timeout_s=-1.0, breaker_failures=5))
    with pytest.raises(EndpointDown, match="timed out"):
        collect(runner, items(50))


def test_a_timeout_row_says_which_limit_fired_after_how_long() -> None:
    judge = Silent()
    runner = Runner(judge, MODEL, settings(timeout_s=0.05, max_retries=1, breaker_failures=100))
    (outcome,) = collect(runner, items(1))
    assert outcome.error is not None
    assert outcome.error.startswith("CallTimeout: no answer within 0.05 s (runner.timeout_s")
    assert "(after 2 attempts)" in outcome.error


def test_error_text_names_the_root_cause() -> None:
    error = chained(
        APITimeoutError("Request timed out."),
        ClientConnectorError("Cannot connect to host 127.0.0.1:9"),
        ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)"),
    )
    text = error_text(error)
    assert text.startswith("APITimeoutError: Request timed out.")
    assert "cause: ConnectionRefusedError: [Errno 111] Connect call failed" in text
    assert error_text(StatusError(503)) == "StatusError: Error code: 503"
