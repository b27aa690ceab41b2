"""Sending a ready request the way the SDK would send it, through less of its machinery.

A judge sends thousands of requests that differ only in their JSON body. For each, an official
SDK copies its options, builds a request through its HTTP client's models, runs its auth and
retry hooks, and parses the answer into its typed models: about half of the CPU a judgment
costs at high concurrency. :class:`WireSender` keeps what matters and drops the rest, using
only the SDKs' public API (``with_options(http_client=...)``, ``post``, their error types) and
the public transport interface of their HTTP client (``AsyncBaseTransport``):

- before the first call, the SDK builds the request for its body once through a transport of
  ours that records it and answers without sending anything (:meth:`WireSender.capture`): URL,
  every header (key, organisation, project, user agent, the SDK's own) and the exact bytes of
  the body. Calls started meanwhile (a run starts many at once) wait for it;
- every call then sends the same URL and headers through one aiohttp session, with a body
  encoded the way the SDK encoded the recorded one (checked byte for byte: a body the encoder
  cannot reproduce keeps every call on the SDK's own path), a fresh idempotency key where the
  SDK sent one, and redirects followed as the SDK's client follows them;
- errors are the SDK's own: the status and body of an error answer, or the transport's
  failure, are handed back to the SDK through a replaying transport of ours, and the SDK
  builds and raises the same status, timeout or connection error it raises on its own path,
  so rows, retries and messages are the same on either path;
- the answer is returned as the parsed JSON (``dict``), or as text where the SDK would
  return text (a 2xx body that is not JSON under a non-JSON content type).

Clients whose credentials change per request (workload identity, custom auth) never leave
the SDK's path. No retries happen here: the runner owns them (SDK ``max_retries=0``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from importlib import import_module
from typing import Any, NoReturn

from mmjudge import departures

#: Headers aiohttp computes for each request itself.
_COMPUTED = frozenset({"content-length", "host", "transfer-encoding"})

#: Encodings aiohttp can undo by itself without optional packages.
_DECODABLE = "gzip, deflate"


def _compact(body: Any) -> bytes:
    """``body`` as both SDKs write it: compact JSON, not ASCII-escaped, in UTF-8."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


#: Ways an SDK's HTTP client may have serialised a JSON body (tried against the captured one).
_ENCODERS: tuple[Callable[[Any], bytes], ...] = (
    _compact,
    lambda body: json.dumps(body).encode(),
    lambda body: json.dumps(body, ensure_ascii=False).encode(),
)


#: The prefix of the idempotency keys the SDKs generate (a fresh one per request).
_SDK_KEY_PREFIX = "stainless-python-retry-"


class _Template:
    """The URL, headers and body encoding of a request the SDK built."""

    def __init__(
        self, url: str, headers: dict[str, str], encoder: int, idempotency: str | None
    ) -> None:
        self.url = url
        self.headers = headers
        self.encoder = encoder
        self.encode = _ENCODERS[encoder]
        self.idempotency = idempotency
        """The SDK's idempotency header, when it sends one (a fresh key per call)."""
        self.proxy = _env_proxy(url)
        """The proxy the environment names for ``url`` (looked up once, not per call)."""

    def parts(self) -> tuple[str, dict[str, str], int, str | None]:
        """What another process needs to rebuild this template (see :meth:`WireSender.preset`)."""
        return self.url, self.headers, self.encoder, self.idempotency

    def headers_for_a_call(self) -> dict[str, str]:
        """The headers of one call: the template's, with a fresh idempotency key if any."""
        if not self.idempotency:
            return self.headers
        return {**self.headers, self.idempotency: f"{_SDK_KEY_PREFIX}{uuid.uuid4()}"}


def idempotency_header(headers: dict[str, str]) -> str | None:
    """The header in which the SDK put a key of its own making (None: it sent none)."""
    return next(
        (
            name
            for name, value in headers.items()
            if name.lower() == "idempotency-key" and value.startswith(_SDK_KEY_PREFIX)
        ),
        None,
    )


def http_flavour(sdk: Any) -> Any:
    """The HTTP client package the SDK's public clients are built on (``httpx`` or its
    successor), found from the SDK's public ``DefaultAsyncHttpxClient``."""
    client_class = sdk.DefaultAsyncHttpxClient
    return next(
        import_module(cls.__module__.split(".")[0])
        for cls in client_class.__mro__
        if cls.__name__ == "AsyncClient"
    )


def _transport(flavour: Any, handle: Callable[[Any], Any]) -> Any:
    """An HTTP client of the SDK's flavour whose transport hands each request to ``handle``
    (a coroutine function) and sends nothing."""

    class Transport(flavour.AsyncBaseTransport):
        async def handle_async_request(self, request: Any) -> Any:
            await request.aread()
            return await handle(request)

    return flavour.AsyncClient(transport=Transport())


class WireSender:
    """Posts JSON bodies to one path of one SDK client; see the module's docstring.

    ``sdk`` names the SDK's module (``openai``): its error types are taken from it, imported
    when first needed. ``client`` gives the SDK's client (built when first asked for).
    ``connections`` caps the session's
    connection pool (None: no cap, the runner bounds the calls in flight).
    """

    def __init__(
        self,
        sdk: str,
        client: Callable[[], Any],
        path: str,
        *,
        connections: int | None,
        timeout_s: float,
    ) -> None:
        self.sdk_name = sdk
        self.client = client
        self.path = path
        self.connections = connections
        self.timeout_s = timeout_s
        self._template: _Template | None = None
        self._session: Any = None
        self._capture: asyncio.Future[tuple[Any, ...] | None] | None = None
        """The capture of the template, shared by the calls started while it runs."""
        self._replayer: Any = None
        """The SDK's client over a replaying transport, which turns outcomes into errors."""
        self.fast_calls = 0
        """Calls sent outside the SDK (for tests and benchmarks)."""
        self._sdk_import: asyncio.Future[None] | None = None
        """The SDK's import for its errors, in a thread (see :meth:`_sdk_for_errors`)."""

    @property
    def sdk(self) -> Any:
        """The SDK's module."""
        return import_module(self.sdk_name)

    @property
    def ready(self) -> bool:
        """Whether calls go out here without the SDK (a template is known)."""
        return self._template is not None

    async def capture(self, body: dict[str, Any]) -> tuple[Any, ...] | None:
        """The template of the request the SDK builds for ``body``, without sending it; None
        where it cannot be reused (see :meth:`_learn`)."""
        flavour = http_flavour(self.sdk)
        built: list[Any] = []

        async def record(request: Any) -> Any:
            built.append(request)
            return flavour.Response(200, json={}, request=request)

        http = _transport(flavour, record)
        try:
            recording = self.client().with_options(http_client=http)
            await recording.post(self.path, body=body, cast_to=object)
        except Exception:  # a client that cannot build this request: the SDK's path
            return None
        finally:
            await http.aclose()
        if built:
            self._learn(built[0], body)
        return None if self._template is None else self._template.parts()

    @staticmethod
    def usable(client: Any) -> bool:
        """Whether the client's requests are the same apart from their bodies (no per-request
        credentials), and it can be copied onto a transport of ours."""
        return (
            getattr(client, "workload_identity", None) is None
            and getattr(client, "custom_auth", None) is None
            and callable(getattr(client, "with_options", None))
        )

    async def post(self, body: dict[str, Any], cast_to: type) -> Any:
        """The SDK's answer for ``body``: a parsed JSON value (or text) from the fast path,
        or what ``client.post`` returns where no template could be made."""
        template = self._template
        if template is None:
            template = await self._first(body)
            if template is None:
                return await self.client().post(self.path, body=body, cast_to=cast_to)
        return await self._send(template, body)

    async def _first(self, body: dict[str, Any]) -> _Template | None:
        """The template, captured once for the calls started before it was known."""
        if self._capture is None:
            self._capture = asyncio.ensure_future(self.capture(body))
        with contextlib.suppress(Exception):  # a failed capture: the SDK's path for every call
            await asyncio.shield(self._capture)
        return self._template

    def _learn(self, request: Any, body: dict[str, Any]) -> None:
        content = getattr(request, "content", None)
        if not isinstance(content, bytes) or str(request.method).upper() != "POST":
            return
        encoder = next(
            (i for i, encode in enumerate(_ENCODERS) if _encodes(encode, body, content)), None
        )
        if encoder is None:
            return  # an encoding we cannot reproduce: stay on the SDK's path
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _COMPUTED}
        for name in list(headers):
            if name.lower() == "accept-encoding":
                headers[name] = _DECODABLE
        idempotency = idempotency_header(headers)
        self._template = _Template(str(request.url), headers, encoder, idempotency)

    async def _send(self, template: _Template, body: dict[str, Any]) -> Any:
        session = self._session or self._open()
        data = template.encode(body)
        self.fast_calls += 1
        departures.tracking()  # the session's trace says when the request has left
        try:
            async with session.post(
                template.url, data=data, headers=template.headers_for_a_call(), proxy=template.proxy
            ) as response:
                status = response.status
                raw = await response.read()
                answer_headers = response.headers
        except Exception as error:
            await self._sdk_for_errors()
            await self._replay(body, error=error)
            raise  # not reached: the replay raises the SDK's error
        if status >= 300:
            await self._sdk_for_errors()
            kept = [(k, v) for k, v in answer_headers.items() if k.lower() != "content-encoding"]
            await self._replay(body, answer=(status, kept, raw))
        return _parsed(raw, answer_headers.get("content-type", "*"))

    async def _replay(
        self,
        body: dict[str, Any],
        *,
        error: Exception | None = None,
        answer: tuple[int, list[tuple[str, str]], bytes] | None = None,
    ) -> NoReturn:
        """Raise what the SDK raises for this outcome: the same body posted through the SDK
        to a transport that answers with ``answer`` (the SDK builds its status error from it)
        or fails with ``error`` mapped to the HTTP client's error (the SDK turns it into its
        timeout or connection error)."""
        flavour = http_flavour(self.sdk)
        outcome = _outcome.set((error, answer))
        try:
            if self._replayer is None:
                self._replayer = self.client().with_options(
                    http_client=_transport(flavour, _replayed)
                )
            await self._replayer.post(self.path, body=body, cast_to=object)
        finally:
            _outcome.reset(outcome)
        raise self.sdk.APIConnectionError(  # an SDK that took a failure for an answer
            message="the request failed", request=flavour.Request("POST", self._url())
        ) from error

    def _url(self) -> str:
        return "" if self._template is None else self._template.url

    async def _sdk_for_errors(self) -> None:
        """Import the SDK and build its client, in a thread, the first time an error needs
        them (usually both exist already: the template was captured through them). An import
        (one to two seconds) on the event loop would hold up every call in flight at the
        moment a run meets its first rate limit; in a thread the loop keeps turning, and calls
        that fail meanwhile wait for the same import."""
        if self._sdk_import is None:
            loop = asyncio.get_running_loop()
            self._sdk_import = loop.run_in_executor(None, self._load_for_errors)
            self._sdk_import.add_done_callback(self._forget_failed_import)
        await asyncio.shield(self._sdk_import)

    def _load_for_errors(self) -> None:
        """(In a thread.) The SDK, its HTTP client's package, and its client."""
        http_flavour(self.sdk)
        self.client()

    def _forget_failed_import(self, future: asyncio.Future[None]) -> None:
        """Let the next error try the import again after one that failed."""
        if future.cancelled() or future.exception() is not None:
            self._sdk_import = None

    def _open(self) -> Any:
        """The session (made at the first call, inside the event loop)."""
        import aiohttp

        connector = aiohttp.TCPConnector(limit=self.connections or 0, limit_per_host=0)
        timeout = aiohttp.ClientTimeout(
            total=None, sock_connect=self.timeout_s, sock_read=self.timeout_s
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            auto_decompress=True,
            trace_configs=[departures.aiohttp_trace()],
        )
        return self._session

    async def aclose(self) -> None:
        self._sdk_import = None  # it belongs to this event loop
        self._capture = None
        replayer, self._replayer = self._replayer, None
        if replayer is not None:
            await replayer.close()
        if self._session is not None:
            await self._session.close()
            self._session = None


#: The outcome the replaying transport gives the request it is handed (see
#: :meth:`WireSender._replay`): an aiohttp failure, or an answer's status, headers and body.
_outcome: ContextVar[tuple[Exception | None, tuple[int, list[tuple[str, str]], bytes] | None]] = (
    ContextVar("mmjudge_wire_outcome", default=(None, None))
)


async def _replayed(request: Any) -> Any:
    """The replaying transport's answer: the outcome set for this call."""
    flavour = sys.modules[type(request).__module__.split(".")[0]]
    error, answer = _outcome.get()
    if answer is not None:
        status, headers, raw = answer
        return flavour.Response(status, headers=headers, content=raw, request=request)
    assert error is not None
    mapped = _mapped(flavour, error)
    if mapped is None:
        raise error
    raise mapped(str(error), request=request) from error


def _mapped(flavour: Any, error: Exception) -> Any:
    """The HTTP client's error for an aiohttp failure, by what happened: a timeout connecting
    or reading is its timeout (the SDK's timeout error), a proxy's failure its proxy error,
    an answer cut off its read error, and any other failure to connect (refused, reset, a
    name that does not resolve) its connect error (the SDK's connection error). Anything
    that is not a transport failure is raised as it is (None)."""
    import aiohttp

    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return flavour.ConnectTimeout
    if isinstance(error, TimeoutError | aiohttp.ServerTimeoutError):
        return flavour.ReadTimeout
    if isinstance(error, aiohttp.ClientProxyConnectionError | aiohttp.ClientHttpProxyError):
        return flavour.ProxyError
    if isinstance(error, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        return flavour.ReadError
    if isinstance(error, aiohttp.ClientError | OSError):
        return flavour.ConnectError
    return None


def _env_proxy(url: str) -> str | None:
    """The ``*_PROXY`` variable's proxy for ``url`` unless ``NO_PROXY`` exempts its host (as
    the SDK's client reads the environment)."""
    from urllib.parse import urlsplit
    from urllib.request import getproxies_environment, proxy_bypass

    parts = urlsplit(url)
    proxy = getproxies_environment().get(parts.scheme)
    if not proxy or proxy_bypass(parts.hostname or ""):
        return None
    return proxy


def _encodes(encode: Callable[[Any], bytes], body: Any, content: bytes) -> bool:
    try:
        return encode(body) == content
    except (TypeError, ValueError):
        return False


def _parsed(raw: bytes, content_type: str) -> Any:
    """A 2xx body as the SDK reads it: JSON under a JSON content type (a body that is not
    valid JSON raises :class:`json.JSONDecodeError`), otherwise JSON when it parses, else
    the text."""
    kind = content_type.split(";")[0]
    if kind.endswith("json"):
        return json.loads(raw)
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")
