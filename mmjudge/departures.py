"""Whether a request has left this process: what the runner needs to know about a call that
gets no answer.

A provider bills a request that reached it, answered or not. The runner cannot see the wire,
so it sets a :class:`Departure` around each attempt (:func:`watching`), and a transport that
can tell when a request has been written out says so: :func:`tracking` when it takes the
call on a path that reports, :func:`request_left` once the request has been handed to the
operating system: for aiohttp, the signal :attr:`aiohttp.TraceConfig.on_request_chunk_sent`
(:func:`aiohttp_trace`, the session of :mod:`mmjudge.speed.wire`); for an SDK's httpx
client, its ``request`` event hook and httpcore's ``trace`` extension (:func:`httpx_hooks`).
A call on a path that reports nothing (an SDK's first call through its own aiohttp client, a
judge of another kind) is taken to have maybe left as soon as it started.

The departure is found through a context variable, so nothing in :meth:`JudgeAPI.generate`'s
signature changes and a judge that knows nothing of this still works.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Departure:
    """What one attempt's transport said about its request."""

    on_left: Callable[[], None] | None = field(default=None, repr=False)
    """Called once, when the request has left (the runner records it in the claim)."""
    tracked: bool = False
    """Whether the transport reports departures for this attempt (see :func:`tracking`)."""
    left: bool = False
    """Whether the transport said the request has left."""

    @property
    def may_have_left(self) -> bool:
        """Whether the provider may have received the request: it left, or the transport
        cannot tell."""
        return self.left or not self.tracked


_current: ContextVar[Departure | None] = ContextVar("mmjudge_departure", default=None)


@contextmanager
def watching(departure: Departure) -> Iterator[Departure]:
    """Make ``departure`` the one the transports of calls made inside report to."""
    token = _current.set(departure)
    try:
        yield departure
    finally:
        _current.reset(token)


def tracking() -> None:
    """Said by a transport that will report when this call's request leaves."""
    departure = _current.get()
    if departure is not None:
        departure.tracked = True


def request_left() -> None:
    """Said by a transport once the request has been written out (the first time counts)."""
    departure = _current.get()
    if departure is None or departure.left:
        return
    departure.left = True
    if departure.on_left is not None:
        departure.on_left()


async def _chunk_sent(_session: Any, _context: Any, _params: Any) -> None:
    request_left()


async def _httpcore_event(name: str, _info: Any) -> None:
    if name.endswith("send_request_body.complete"):
        request_left()


async def _httpx_request(request: Any) -> None:
    # httpx's request extensions: its transport (httpcore) calls "trace" at each step of the
    # exchange, in the caller's task.
    tracking()
    request.extensions["trace"] = _httpcore_event


def httpx_hooks() -> dict[str, list[Any]]:
    """``event_hooks`` for an httpx client whose transport is httpcore's (the default): each
    request is reported as left once its body has been written (the ``trace`` extension's
    ``send_request_body.complete`` event)."""
    return {"request": [_httpx_request]}


def aiohttp_trace() -> Any:
    """An :class:`aiohttp.TraceConfig` that reports each request as left once its body has
    been written (aiohttp runs the body's writer in a task copied from the caller's context,
    so it reports to the caller's departure)."""
    import aiohttp

    trace = aiohttp.TraceConfig()
    trace.on_request_chunk_sent.append(_chunk_sent)
    trace.freeze()
    return trace
