"""The circuit breaker: stop a cell in seconds when its endpoint cannot work.

Retries fix passing faults. They cannot fix a wrong ``model.base_url``, a host that cannot
be reached, a TLS mismatch, a service answering only 5xx, or calls that all time out; without
a breaker every item would be retried to the end and the cell would finish as a heap of
error rows. The runner reports failures that no retry has fixed here (a failed retry, or a
failure that will not be retried: a first attempt that is retried does not count yet, so a
burst of calls failing together does not trip it); after ``runner.breaker_failures`` such
failures of one kind with no success in between, the breaker opens and the runner stops the
cell with one line naming the endpoint, the last error and what to check.

Rate limits (429), per-item refusals (a 400 about an image) and other errors that say the
endpoint is alive do not count; any successful call resets the count.
"""

from __future__ import annotations

import json
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field

from mmjudge.errors import FatalProviderError

#: What each detailed kind of failure counts towards (connection failures of every sort
#: count together, so a host that is half refused and half unreachable still trips).
CATEGORY = {
    "refused": "connection",
    "dns": "connection",
    "tls": "connection",
    "unreachable": "connection",
    "dropped": "connection",
    "timeout": "timeout",
    "server_error": "server_error",
    "malformed": "malformed",
}

_WHAT = {
    "refused": "were refused (nothing is listening there)",
    "dns": "failed to resolve the host name",
    "tls": "failed in the TLS handshake",
    "unreachable": "could not connect",
    "dropped": "lost the connection before an answer came",
    "timeout": "timed out",
    "server_error": "got only server errors (5xx)",
    "malformed": "got answers that are not the provider's response format",
}

_CHECK = {
    "refused": "check model.base_url (scheme, host and port) and that the server is running",
    "dns": "check the host name in model.base_url and this machine's DNS",
    "tls": "check http:// against https:// in model.base_url, certificates and any proxy",
    "unreachable": "check model.base_url (http:// or https://, host, port), the network "
    "and any proxy",
    "dropped": "check that the server (or a proxy in front of it) stays up under load",
    "timeout": "check that the server is up and answering; a slow model needs a larger "
    "runner.timeout_s",
    "server_error": "the service may be down: check its status page and run again later",
    "malformed": "check that model.base_url points at the API itself (for OpenAI-compatible "
    "servers it usually ends in /v1)",
}


class EndpointDown(FatalProviderError):
    """The breaker opened: the endpoint cannot serve this cell now."""


def causes(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the chain of exceptions behind it, outermost first."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _names(error: BaseException) -> str:
    return " ".join(type(e).__name__ for e in causes(error))


def failure_kind(error: BaseException, endpoint: str = "") -> str | None:
    """The detailed kind of a failed attempt (a key of :data:`CATEGORY`), or None when the
    failure says nothing about the endpoint as a whole (rate limits, per-item errors)."""
    chain = list(causes(error))
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return "server_error" if status >= 500 else None
    if any(isinstance(e, ConnectionRefusedError) for e in chain):
        return "refused"
    if any(isinstance(e, socket.gaierror) or "DNSError" in type(e).__name__ for e in chain):
        return "dns"
    names = _names(error)
    if any(isinstance(e, ssl.SSLError) for e in chain) or "SSL" in names or "Certificate" in names:
        return "tls"
    connecting = "Connector" in names or "ConnectError" in names or "ConnectTimeout" in names
    if connecting and "Disconnected" not in names:
        if endpoint.startswith("https:") and any(
            isinstance(e, ConnectionResetError) for e in chain
        ):
            return "tls"
        return "unreachable"
    if (
        "Disconnected" in names
        or "RemoteProtocolError" in names
        or any(isinstance(e, (ConnectionError, EOFError)) for e in chain)
    ):
        return "dropped"
    if "Timeout" in names or any(isinstance(e, TimeoutError) for e in chain):
        return "timeout"
    if "Malformed" in names or any(isinstance(e, json.JSONDecodeError) for e in chain):
        return "malformed"
    if "APIConnectionError" in names:
        return "unreachable"
    return None


@dataclass
class Breaker:
    """Counts failed attempts per category since the last success."""

    threshold: int
    """Failures of one category, with no success in between, that open the breaker."""
    endpoint: str
    """Where the calls go, for the message."""
    model_name: str
    streaks: dict[str, int] = field(default_factory=dict)

    def success(self) -> None:
        self.streaks.clear()

    def failure(self, error: BaseException, described: str) -> EndpointDown | None:
        """Count a failed attempt; returns the error that stops the cell when it trips.

        ``described`` is the one-line text of the error, quoted in the message.
        """
        kind = failure_kind(error, self.endpoint)
        if kind is None or self.threshold <= 0:
            return None
        category = CATEGORY[kind]
        self.streaks[category] = self.streaks.get(category, 0) + 1
        count = self.streaks[category]
        if count < self.threshold:
            return None
        return EndpointDown(
            f"model '{self.model_name}': stopped after {count} calls in a row to "
            f"{self.endpoint} {_WHAT[kind]} (last error: {described}); {_CHECK[kind]}; "
            "then run the same command again to resume (runner.breaker_failures sets how "
            "many failures stop a cell)"
        )
