"""How an SDK client is built from a judge's checked settings.

The judge builds its client from a :class:`ClientSpec` of its checked settings, which holds
everything the SDK's constructor is given (and nothing of mmjudge's config).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any

from mmjudge import departures
from mmjudge.errors import ConfigError

if TYPE_CHECKING:
    from mmjudge.config import ModelConfig


#: HTTP transports a provider SDK can use (``model.options.http_client``).
HTTP_CLIENTS = ("aiohttp", "httpx")


def check_http_client(model: ModelConfig, choice: str) -> None:
    """Raise :class:`ConfigError` for a ``model.options.http_client`` that is not offered."""
    if choice not in HTTP_CLIENTS:
        raise ConfigError(
            f"model.options.http_client='{choice}' for model '{model.name}' must be one of: "
            f"{', '.join(HTTP_CLIENTS)}"
        )


def pool_size(model: ModelConfig) -> int | None:
    """The connection pool's cap: a model's own limit (with room for connections being
    closed) also bounds the pool; without one the runner bounds the calls in flight."""
    own = model.max_concurrency
    return None if own is None else max(int(own), 1) + 8


def aiohttp_client(sdk: Any, connections: int | None) -> Any | None:
    """The SDK's aiohttp-based client (``DefaultAioHttpClient``, installed with the SDK's
    ``aiohttp`` extra) with its pool capped at ``connections`` (None: no cap); None when the
    SDK or the environment has none."""
    client_class = getattr(sdk, "DefaultAioHttpClient", None)
    if client_class is None:
        return None
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return None
    httpx_flavour = next(
        import_module(cls.__module__.split(".")[0])
        for cls in client_class.__mro__
        if cls.__name__ == "AsyncClient"
    )
    # The transport hands ``max_connections`` to aiohttp as its pool's limit, where 0 means
    # none; None would leave aiohttp's default of 100, a silent cap on the calls in flight.
    cap = 0 if connections is None else connections
    limits = httpx_flavour.Limits(max_connections=cap, max_keepalive_connections=connections)
    return client_class(limits=limits)


def httpx_client(sdk: Any) -> Any | None:
    """The SDK's own httpx client (``DefaultAsyncHttpxClient``, with the SDK's defaults),
    reporting when each request has left (:func:`mmjudge.departures.httpx_hooks`);
    None when the SDK has none."""
    client_class = getattr(sdk, "DefaultAsyncHttpxClient", None)
    if client_class is None:
        return None
    return client_class(event_hooks=departures.httpx_hooks())


@dataclass(frozen=True)
class ClientSpec:
    """Everything a judge's SDK client is built from (``AsyncOpenAI`` and ``AsyncAnthropic``
    take the same settings)."""

    client_class: str
    """The client's class in the SDK's module."""
    api_key: str = field(repr=False)
    base_url: str
    timeout_s: float
    use_aiohttp: bool
    """The SDK's aiohttp client (``model.options.http_client=aiohttp``), else its httpx one."""
    connections: int | None
    """The connection pool's cap (None: none; the runner bounds the calls in flight)."""

    def build(self, sdk: Any) -> tuple[Any, bool]:
        """The client, and whether it sends through the SDK's aiohttp client (its
        ``DefaultAioHttpClient``, whose connection pool stays cheap with hundreds of open
        connections, where the default httpx pool spends about a millisecond of CPU per
        request scanning its connections)."""
        transport = aiohttp_client(sdk, self.connections) if self.use_aiohttp else None
        http_client = transport if self.use_aiohttp else httpx_client(sdk)
        client = getattr(sdk, self.client_class)(
            api_key=self.api_key,
            base_url=self.base_url,
            max_retries=0,  # the runner retries
            timeout=self.timeout_s,
            http_client=http_client,
        )
        return client, transport is not None
