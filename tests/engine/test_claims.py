"""Claims in the response cache: two runners on one cell pay once; a dead owner's items are
taken over (and counted as resent when its request was on the wire)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import time
from pathlib import Path

import pytest

from mmjudge.costs.calls import PricedCall
from mmjudge.engine.policy import Outcome
from mmjudge.engine.response_cache import ItemClaims, Owner, RequestKeys, ResponseCache
from mmjudge.engine.sync import Runner
from mmjudge.errors import Interrupted
from mmjudge.records import JudgeRequest, JudgeResponse, Usage
from tests.engine.test_sync import MODEL, FakeJudge, collect, items, settings

ANSWER = JudgeResponse(text="1\nok", usage=Usage(input_tokens=10, output_tokens=2))
ELSEWHERE = Owner("another-host", 4242, "1")


def dead_pid() -> int:
    """The pid of a process that has ended and been reaped (a tiny program, not Python)."""
    done = subprocess.Popen(["true"])
    assert done.wait(timeout=30) == 0
    return done.pid


def test_a_claim_is_exclusive_until_answered_released_or_expired(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    mine = cache.claims(30.0)
    theirs = ItemClaims(cache, ELSEWHERE, 30.0)
    assert theirs.claim("k").state == "claimed"
    busy = mine.claim("k")
    assert busy.state == "busy" and busy.holder == "another-host:4242"
    theirs.complete("k", ANSWER)
    found = mine.claim("k")
    assert found.state == "cached" and found.response is not None
    assert found.response.text == ANSWER.text

    assert theirs.claim("j").state == "claimed"
    theirs.release("j")
    assert mine.claim("j").state == "claimed"

    short = ItemClaims(cache, ELSEWHERE, 0.05)
    assert short.claim("e").state == "claimed"
    assert mine.claim("e").state == "busy"
    time.sleep(0.1)  # not renewed: the claim expires
    taken = mine.claim("e")
    assert taken.state == "claimed" and not taken.resent  # nothing was on the wire


def test_a_dead_owner_on_this_host_is_taken_over_at_once_and_counts_as_resent(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    gone = ItemClaims(cache, Owner(socket.gethostname(), dead_pid(), "1"), 3600.0)
    assert gone.claim("sent").state == "claimed"
    gone.sending("sent")
    assert gone.claim("waiting").state == "claimed"
    mine = cache.claims(30.0)
    sent = mine.claim("sent")
    assert sent.state == "claimed" and sent.resent
    waiting = mine.claim("waiting")
    assert waiting.state == "claimed" and not waiting.resent


def test_every_lost_send_of_a_request_is_counted(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    here = socket.gethostname()
    first = ItemClaims(cache, Owner(here, dead_pid(), "1"), 3600.0)
    first.claim("k")
    first.sending("k")
    second = ItemClaims(cache, Owner(here, dead_pid(), "2"), 3600.0)
    assert second.claim("k").resent == 1
    second.sending("k")  # sent again, and lost again
    assert cache.claims(30.0).claim("k").resent == 2


def test_renewal_keeps_a_live_claim_and_abandon_marks_it_for_resend(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    theirs = ItemClaims(cache, ELSEWHERE, 0.2)
    mine = cache.claims(30.0)
    theirs.claim("k")
    theirs.sending("k")
    for _ in range(4):
        time.sleep(0.08)
        theirs.renew()
        assert mine.claim("k").state == "busy"
    theirs.abandon("k")  # a stop while the request was on the wire
    taken = mine.claim("k")
    assert taken.state == "claimed" and taken.resent


def test_two_runners_on_one_cell_pay_for_each_item_once(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    judges = [FakeJudge(delay=0.01), FakeJudge(delay=0.01)]
    owners = [Owner("host-a", 1, "1"), Owner("host-b", 2, "2")]
    runners = []
    for judge, owner in zip(judges, owners, strict=True):
        cache = ResponseCache(path)
        runners.append(
            Runner(
                judge, MODEL, settings(concurrency=4), cache=cache, claims=cache.claims(30, owner)
            )
        )

    async def both() -> list[list[Outcome]]:
        async def one(runner: Runner) -> list[Outcome]:
            return [o async for o in runner.run(items(60))]

        return list(await asyncio.gather(*(one(r) for r in runners)))

    first, second = asyncio.run(both())
    calls = judges[0].calls + judges[1].calls
    assert sorted(calls) == sorted(f"k{i}" for i in range(60))  # every item paid for once
    for outcomes in (first, second):
        assert sorted(o.item.key for o in outcomes) == sorted(f"k{i}" for i in range(60))
        assert all(o.response is not None for o in outcomes)
    # Each item was answered once by a call and once from the cache (found there, or waited
    # for while the other runner held its claim).
    assert sum(o.cached for o in first + second) == 60
    assert sum(r.stats.calls.answered_by_another_process for r in runners) > 0


def test_a_resent_request_is_counted_and_its_lost_first_send_priced(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    gone = ItemClaims(cache, Owner(socket.gethostname(), dead_pid(), "1"), 3600.0)
    gone.claim(request_key_of("k1"))
    gone.sending(request_key_of("k1"))
    judge = FakeJudge()
    runner = Runner(
        judge,
        MODEL,
        settings(),
        cache=cache,
        claims=cache.claims(30.0),
        price=lambda _request, response: PricedCall(response.usage, 0.25, 0.0),
    )
    outcomes = {o.item.key: o for o in collect(runner, items(3))}
    assert outcomes["k1"].resent and not outcomes["k0"].resent
    assert runner.stats.calls.resent == 1
    assert runner.stats.calls.resent_usd == pytest.approx(0.25)
    assert runner.stats.calls.spent_usd == pytest.approx(3 * 0.25 + 0.25)


def request_key_of(key: str) -> str:
    from mmjudge.engine.response_cache import request_key

    return request_key(MODEL, JudgeRequest(item_key=key, prompt=f"p{key[1:]}"))


class Slow(FakeJudge):
    """Answers item k<i> after 0.05 s for the first few items, 5 s for the others."""

    finished: list[str]

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        self.calls.append(request.item_key)
        await asyncio.sleep(0.05 if int(request.item_key[1:]) < 4 else 5.0)
        self.finished.append(request.item_key)
        return JudgeResponse(text="2\nok", usage=Usage(input_tokens=1, output_tokens=1))


def test_a_stop_keeps_answers_within_the_grace_period_and_abandons_the_rest(
    tmp_path: Path,
) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    judge = Slow()
    judge.finished = []
    runner = Runner(
        judge, MODEL, settings(concurrency=8, grace_s=0.3), cache=cache, claims=cache.claims(30)
    )
    seen: list[Outcome] = []

    async def go() -> None:
        async def stop_soon() -> None:
            await asyncio.sleep(0.01)
            runner.request_stop(2)

        stopper = asyncio.create_task(stop_soon())
        with pytest.raises(Interrupted) as stopped:
            async for outcome in runner.run(items(50)):
                seen.append(outcome)
        await stopper
        assert stopped.value.signal_number == 2

    asyncio.run(go())
    assert sorted(o.item.key for o in seen) == ["k0", "k1", "k2", "k3"]  # within the grace
    assert len(judge.calls) == 8  # nothing new was scheduled after the stop
    assert runner.stats.calls.abandoned_in_flight == 4
    assert sorted(judge.finished) == ["k0", "k1", "k2", "k3"]  # the slow calls were cancelled
    again = cache.claims(30.0, Owner("later", 9, "9"))
    resent = [again.claim(request_key_of(f"k{i}")).resent for i in range(4, 8)]
    assert resent == [1] * 4  # abandoned in flight: a resume counts them as resent


def test_a_resume_pays_for_none_of_the_cached_answers(tmp_path: Path) -> None:
    """A resume where every third answer is cached: none of them is paid for again."""
    cache = ResponseCache(tmp_path / "c.sqlite")
    work = items(96)
    keys = RequestKeys(MODEL)
    cached = {f"k{i}" for i in range(1, 96, 3)}
    for item in work:
        if item.key in cached:
            assert item.request is not None
            cache.put(keys(item.request), ANSWER)
    judge = FakeJudge()
    claims = cache.claims(30, Owner("host-a", 1, "1"))
    runner = Runner(judge, MODEL, settings(concurrency=4), cache=cache, claims=claims)
    outcomes = collect(runner, work)
    assert sorted(judge.calls) == sorted(f"k{i}" for i in range(96) if f"k{i}" not in cached)
    assert {o.item.key for o in outcomes if o.cached} == cached
