"""Group commit of the claims' writes: the calls in flight share one transaction per turn of
the event loop.

Each paid call writes its claim twice (taken and marked on the wire; answered), and each
write used to be a commit of its own. Here a call stages its write in
:class:`~mmjudge.running.cache.ItemClaims` and waits; the first write staged in a turn of the
loop schedules one :meth:`~mmjudge.running.cache.ItemClaims.flush` for the end of that turn,
and every write staged meanwhile commits with it. What the claims guarantee stays as it was:

- a call's claim, marked maybe on the wire, is committed **before** its request is sent (the
  call waits for the flush), so another process never pays for it too; once the transport
  says the request has left, the claim is marked sent (staged, nothing waits), so a process
  killed after the send leaves a record that the request was paid for, and one killed in the
  window between leaves a record that it may have been;
- an answer is committed **before** its row is written (the call waits for the flush), so a
  row never stands for an answer the cache lost; an answer is held only for the rest of the
  turn in which it arrived, and a process killed in that moment leaves its claim marked on
  the wire, so whoever sends the request again counts the lost send as paid.

Writes that nothing waits for (a claim released after a failure, abandoned at a stop) are
staged too, so every write reaches the file in the order it was made.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from mmjudge.records import JudgeResponse
from mmjudge.running.cache import MAYBE_SENT, SENT, Claim, ItemClaims


class GroupCommit:
    """Stages claim writes for :class:`ItemClaims` and commits them once per loop turn."""

    def __init__(self, claims: ItemClaims) -> None:
        self.claims = claims
        self._scheduled = False
        self.flushes = 0
        """Transactions committed (for tests and benchmarks)."""

    async def claim_to_send(self, key: str) -> Claim:
        """Claim ``key`` marked as maybe on the wire, committed: the request may be sent when
        the claim comes back ``claimed`` (:meth:`left` marks it sent once it has left)."""
        found = await self._wait("claim", key, MAYBE_SENT)
        assert found is not None
        return found

    async def sending(self, key: str) -> None:
        """Mark our claim as maybe on the wire again (a retry), committed."""
        await self._wait("sending", key, MAYBE_SENT)

    def left(self, key: str) -> None:
        """Our request has left (the transport said so): the claim is marked sent at the end
        of this turn; a process killed before then leaves it marked maybe sent."""
        self._later("sending", key, SENT)

    async def complete(self, key: str, response: JudgeResponse) -> None:
        """Store the answer and drop the claim, committed."""
        await self._wait("complete", key, response)

    def not_sending(self, key: str) -> None:
        """Our request is off the wire (a failed attempt, to be retried)."""
        self._later("sending", key, False)

    def release(self, key: str) -> None:
        """Drop our claim without an answer."""
        self._later("release", key)

    def abandon(self, key: str) -> None:
        """Give up a claim whose request is on the wire (see :meth:`ItemClaims.abandon`)."""
        self._later("abandon", key)

    def flush(self) -> None:
        """Commit what is staged now (also run at the end of each turn that staged a write)."""
        self._scheduled = False
        self.flushes += bool(self.claims.staged)
        self.claims.flush()

    async def _wait(self, what: str, key: str, argument: Any) -> Claim | None:
        future: asyncio.Future[Claim | None] = asyncio.get_running_loop().create_future()

        def settle(result: Claim | None, error: BaseException | None) -> None:
            if future.done():
                return  # its caller was cancelled; the write itself still happened
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        self.claims.stage(what, key, argument, settle)
        self._schedule()
        return await future

    def _later(self, what: str, key: str, argument: Any = None) -> None:
        self.claims.stage(what, key, argument)
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_soon)

    def _flush_soon(self) -> None:
        # A failed commit has reached every call waiting on it through its future, and the
        # run stops on it; writes nothing waits for fall back on the claims' expiry.
        with contextlib.suppress(Exception):
            self.flush()
