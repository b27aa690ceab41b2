"""The transports say when a request has left (:mod:`mmjudge.departures`): the runner
marks a claim as sent only then, and counts a call given up after it as possibly billed."""

from __future__ import annotations

import asyncio
import functools
import socket

import pytest

from mmjudge.departures import Departure, watching
from mmjudge.judges.http import SDKJudge
from mmjudge.judges.openai import OpenAIJudge
from tests.fixtures.loopback_server import Behaviour, LoopbackServer
from tests.judges.test_providers import _keys, openai_model  # noqa: F401
from tests.speed.test_wire import judge_for, request, sent_to


def departures_of(judge: SDKJudge, calls: int) -> list[tuple[Departure, bool]]:
    """Each call's departure, and whether it got an answer."""

    async def go() -> list[tuple[Departure, bool]]:
        found = []
        try:
            for _ in range(calls):
                left: list[bool] = []
                departure = Departure(on_left=functools.partial(left.append, True))
                with watching(departure):
                    try:
                        await judge.generate(request())
                        answered = True
                    except Exception:
                        answered = False
                assert left == ([True] if departure.left else [])  # said once at most
                found.append((departure, answered))
        finally:
            await judge.aclose()
        return found

    return asyncio.run(go())


@pytest.mark.parametrize("http_client", ["aiohttp", "httpx"])
def test_calls_say_when_their_request_has_left(
    loopback: LoopbackServer, provider: str, http_client: str
) -> None:
    judge = judge_for(loopback, provider, options={"http_client": http_client})
    found = departures_of(judge, 3)
    assert all(answered for _, answered in found)
    # The SDK's first call through its own aiohttp client cannot tell; every other can.
    told = found[1:] if http_client == "aiohttp" else found
    assert all(d.tracked and d.left for d, _ in told)
    assert len(sent_to(loopback, provider)) == 3


def test_a_call_refused_before_it_could_leave_did_not_leave() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    model = openai_model(base_url=f"http://127.0.0.1:{port}/v1", options={"http_client": "httpx"})
    ((departure, answered),) = departures_of(OpenAIJudge(model), 1)
    assert not answered
    assert departure.tracked and not departure.left and not departure.may_have_left


def test_a_call_timed_out_after_it_left_may_have_been_billed(
    loopback: LoopbackServer, provider: str
) -> None:
    loopback.set_default(Behaviour.hang(5))
    judge = judge_for(loopback, provider, timeout=0.5, options={"http_client": "httpx"})
    ((departure, answered),) = departures_of(judge, 1)
    assert not answered and departure.left and departure.may_have_left
    assert len(sent_to(loopback, provider)) == 1
