"""Sends that may have been billed without an answer: which ones the sync runner counts, and
when.

A provider may bill a request once it has left, answered or not. The runner counts each send
without an answer as possibly billed, in its count and in its run folder's ledger
(:meth:`~mmjudge.engine.policy.CallPolicy.unanswered`), as soon as it is known:

- a send that timed out or was cut off after it left (the runner's retries count it);
- the calls in flight given up at a stop, in one entry once the stop has cancelled them all
  (:meth:`LostSends.given_up`), their claims marked so that whoever sends them again counts
  each as resent;
- the sends a killed run of the same folder left in flight, found in the claims before this
  run sends anything (:meth:`LostSends.left_behind`);
- the sends earlier runs lost of a request this run claims, where the ledger does not count
  them yet (:meth:`LostSends.claimed`: another folder's run lost them, say).

A lost send that surely left is proved received when its request is answered: it leaves the
figure and is priced as resent, at the answer's price (:meth:`LostSends.answered`); when no
answer comes it stays possibly billed (:meth:`LostSends.not_answered`). A free judge's sends
cost nothing and are not counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from mmjudge.engine.jobs import Job
from mmjudge.engine.policy import CallPolicy, Outcome
from mmjudge.engine.response_cache import Claim, ItemClaims

#: Takes a step on the claims unless the response cache has failed (the runner's guard).
OnClaims = Callable[[Callable[[ItemClaims], object]], None]


class LostSends:
    """The sync runner's count of sends possibly billed without an answer (see the module's
    notes)."""

    def __init__(
        self, policy: CallPolicy, claims: ItemClaims | None, free: bool, on_claims: OnClaims
    ) -> None:
        self.policy = policy
        self.claims = claims
        self.free = free
        self.on_claims = on_claims

    def left_behind(self) -> None:
        """Before anything is sent: the sends a killed run left in flight in this run's folder
        (claims no ledger counts yet), each at its send's price or the dearest answer seen,
        so the budget starts from them."""
        claims = self.claims
        if claims is None or not claims.folder or self.free:
            return
        found = claims.left_behind()
        if not found:
            return
        dearest = self.policy.stats.dearest_usd
        prices = [max(left.usd, dearest) for left in found]
        self.policy.unanswered(
            sum(left.sends for left in found),
            math.fsum(left.sends * price for left, price in zip(found, prices, strict=True)),
            why="left in flight by a run of this folder that was killed",
            keys=[left.key for left in found],
        )
        claims.noted([(left.key, price) for left, price in zip(found, prices, strict=True)])

    def given_up(self, jobs: Sequence[Job]) -> None:
        """The calls given up in flight at a stop: possibly billed, each at its send's price,
        in one entry of the ledger; then their claims, marked so that whoever sends them
        again counts them as resent."""
        if not jobs:
            return
        calls = self.policy.stats.calls
        calls.abandoned_in_flight += len(jobs)
        prices = [0.0 if self.free else self.policy.send_usd(job.item) for job in jobs]
        usd = math.fsum(prices)
        calls.abandoned_usd += usd
        if not self.free:
            self.policy.unanswered(
                len(jobs),
                usd,
                why="in flight when the run stopped: given up",
                keys=[job.key for job in jobs if job.key],
            )
        claimed = [(job.key, price) for job, price in zip(jobs, prices, strict=True) if job.claimed]
        if claimed and self.claims is not None:
            noted = bool(self.claims.folder) and not self.free
            self.on_claims(lambda claims: claims.abandon_all(claimed, noted=noted))
            calls.handed_on += len(claimed)
            calls.handed_on_usd += math.fsum(price for _, price in claimed)

    def claimed(self, job: Job, claim: Claim) -> None:
        """The sends of ``job``'s request that earlier runs lost (its :class:`Claim`):
        possibly billed until an answer proves otherwise, counted in the ledger unless it
        counts them already. The sure ones (``resent``) are priced as resent when this call
        is answered; the maybe ones stay possibly billed."""
        lost = claim.resent + claim.maybe_resent
        if not lost:
            return
        self.policy.stats.calls.maybe_resent += claim.maybe_resent
        job.resent = claim.resent
        if self.free:
            return
        job.lost_usd = claim.usd or self.policy.send_usd(job.item)
        unnoted = lost - claim.noted
        if unnoted > 0:
            self.policy.unanswered(
                unnoted,
                unnoted * job.lost_usd,
                why="sent by a run that stopped before its answer came",
                keys=[job.key],
            )
            if self.claims is not None and self.claims.folder:
                self.claims.noted([(job.key, job.lost_usd)])
        job.possibly_billed += claim.maybe_resent
        job.possibly_billed_usd += claim.maybe_resent * job.lost_usd

    def answered(self, job: Job) -> None:
        """``job``'s call was answered: its request's lost sends that surely left were
        received, and are priced as resent (with the answer) instead of possibly billed."""
        if job.resent and not self.free:
            self.policy.unanswered(
                -job.resent,
                -job.resent * job.lost_usd,
                why="answered when sent again: the lost sends reached the provider, priced as "
                "resent",
                keys=[job.key],
            )

    def not_answered(self, job: Job, outcome: Outcome) -> None:
        """``job`` ended without an answer (``outcome``): its request's lost sends stay
        possibly billed, on its row with the others, and are not resent."""
        if outcome.response is None and job.resent:
            job.possibly_billed += job.resent
            job.possibly_billed_usd += job.resent * job.lost_usd
            outcome.resent = 0
        if job.possibly_billed:
            outcome.possibly_billed = job.possibly_billed
            outcome.possibly_billed_usd = job.possibly_billed_usd
