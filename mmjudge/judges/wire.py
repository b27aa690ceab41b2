"""Sending a ready request the way the SDK sent the last one, through less of its machinery.

A judge sends thousands of requests that differ only in their JSON body. For each, an official
SDK copies its options, builds a request through its HTTP client's models, runs its auth and
retry hooks, and parses the answer into its typed models: about half of the CPU a judgment
costs at high concurrency. :class:`WireSender` keeps what matters and drops the rest:

- the **first** call of a judge goes through the SDK (``post``) untouched, and the request it
  put on the wire — URL, every header (key, organisation, project, user agent, the SDK's own),
  and the exact bytes of the body — is captured on its way out; calls started meanwhile (a
  run starts many at once) wait the few milliseconds until it is on the wire. Where a child
  process made that template ahead (:mod:`mmjudge.judges.ahead`, with the SDK building a
  request it never sends: :meth:`WireSender.capture`), even the first call skips the SDK,
  which is then imported only to build an error;
- later calls send the same URL and headers through one aiohttp session, with a body encoded
  the way the SDK encoded the first one (checked byte for byte: a body the encoder cannot
  reproduce keeps every call on the SDK's own path), a fresh idempotency key where the SDK
  sends one, and redirects followed as the SDK's client follows them;
- errors are the SDK's own: a status of 300 or above becomes the SDK's status error (built by
  the SDK from the response), and transport failures are mapped to the SDK's connection and
  timeout errors through the SDK's own aiohttp mapping, so rows, retries and messages are
  the same on either path;
- the answer is returned as the parsed JSON (``dict``), or as text where the SDK would
  return text (a 2xx body that is not JSON under a non-JSON content type).

Clients whose credentials change per request (workload identity, a provider runtime) never
leave the SDK's path. No retries happen here: the runner owns them (SDK ``max_retries=0``).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from importlib import import_module
from typing import Any, NoReturn

import msgspec

from mmjudge.judges import departures, fastjson

#: JSON as :func:`json.loads` reads it wherever both read a body (tests/judges/test_fastjson.py).
_decode = fastjson.decode

#: Headers aiohttp computes for each request itself.
_COMPUTED = frozenset({"content-length", "host", "transfer-encoding"})

#: Encodings aiohttp can undo by itself without optional packages.
_DECODABLE = "gzip, deflate"

_encode_with_msgspec = msgspec.json.Encoder().encode


def _compact(body: Any) -> bytes:
    """``json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)`` in
    UTF-8, the way both SDKs write a body. msgspec writes it, about five times faster on a
    body holding an image, wherever it writes the same bytes (:func:`_written_alike`); json
    writes the rest, and raises its own errors."""
    if _written_alike(body):
        try:
            return _encode_with_msgspec(body)
        except (TypeError, ValueError):  # a lone surrogate, say: json raises its own error
            pass
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _written_alike(value: Any) -> bool:
    """Whether msgspec writes ``value`` as compact ``json.dumps(ensure_ascii=False)`` does:
    strings (every code point is escaped alike: tests/judges/test_wire.py), integers,
    booleans, null, floats that ``repr`` writes without an exponent (``1e-05`` is
    ``0.00001`` to msgspec), and lists and string-keyed dicts of those."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value) and "e" not in repr(value)
    if kind is dict:
        return all(type(key) is str and _written_alike(item) for key, item in value.items())
    if kind is list:
        return all(_written_alike(item) for item in value)
    return False


#: Ways an SDK's HTTP client may have serialised a JSON body (tried against the captured one).
_ENCODERS: tuple[Callable[[Any], bytes], ...] = (
    _compact,
    lambda body: json.dumps(body).encode(),
    lambda body: json.dumps(body, ensure_ascii=False).encode(),
)


class _Template:
    """The URL, headers and body encoding of a request the SDK sent (or built)."""

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


class _Captured(Exception):
    """Stops a request the SDK built for :meth:`WireSender.capture` before it is sent."""


class WireSender:
    """Posts JSON bodies to one path of one SDK client; see the module's docstring.

    ``sdk`` names the SDK's module (``openai``): its error types and its aiohttp error mapping
    are taken from it, imported when first needed. ``client`` gives the SDK's client (built
    when first asked for: a sender with a template made ahead may never need it).
    ``connections`` caps the session's connection pool (None: no cap, the runner bounds the
    calls in flight).
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
        self._capturing = False
        self._captured = asyncio.Event()
        """Set once the call being captured is on the wire, or has ended."""
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

    def preset(self, parts: tuple[Any, ...]) -> None:
        """Use a template made elsewhere (:meth:`_Template.parts`) from the first call on."""
        url, headers, encoder, idempotency = parts
        self._template = _Template(url, dict(headers), encoder, idempotency)

    async def capture(self, body: dict[str, Any]) -> tuple[Any, ...] | None:
        """The template of the request the SDK builds for ``body``, without sending it; None
        where it cannot be reused (see :meth:`_learn`)."""
        client = self.client()
        http = client._client
        original = http.send

        async def capture(request: Any, *args: Any, **kwargs: Any) -> Any:
            self._learn(request, body)
            raise _Captured

        http.send = capture
        try:
            await client.post(self.path, body=body, cast_to=object)
        except Exception:  # the SDK wraps what the capture raised in its connection error
            pass
        finally:
            http.send = original
        return None if self._template is None else self._template.parts()

    @staticmethod
    def usable(client: Any) -> bool:
        """Whether the client's requests are the same apart from their bodies."""
        return (
            getattr(client, "workload_identity", None) is None
            and getattr(client, "_provider_runtime", None) is None
            and getattr(client, "custom_auth", None) is None
            and hasattr(client, "_make_status_error_from_response")
            and hasattr(getattr(client, "_client", None), "send")
        )

    async def post(self, body: dict[str, Any], cast_to: type) -> Any:
        """The SDK's answer for ``body``: a parsed JSON value (or text) from the fast path,
        or what ``client.post`` returns while no template has been captured."""
        template = self._template
        if template is not None:
            return await self._send(template, body)
        return await self._first(body, cast_to)

    async def _first(self, body: dict[str, Any], cast_to: type) -> Any:
        """Through the SDK, capturing the request it sends; calls made while another one is
        being captured wait until it is on the wire (or has failed before), then take the
        fast path if it gave a template, the SDK's otherwise."""
        if self._capturing:
            await self._captured.wait()
            if self._template is not None:
                return await self._send(self._template, body)
            return await self.client().post(self.path, body=body, cast_to=cast_to)
        self._capturing = True
        self._captured = asyncio.Event()
        client = self.client()
        http = client._client
        original = http.send

        async def capture(request: Any, *args: Any, **kwargs: Any) -> Any:
            http.send = original
            self._learn(request, body)
            self._captured.set()
            return await original(request, *args, **kwargs)

        http.send = capture
        try:
            return await client.post(self.path, body=body, cast_to=cast_to)
        finally:
            if http.send is capture:
                http.send = original
            self._capturing = False
            self._captured.set()

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
        idempotency = getattr(self.client(), "_idempotency_header", None)
        self._template = _Template(str(request.url), headers, encoder, idempotency)

    async def _send(self, template: _Template, body: dict[str, Any]) -> Any:
        session = self._session or self._open()
        headers = template.headers
        idempotency = template.idempotency
        if idempotency:
            headers = {**headers, idempotency: self.client()._idempotency_key()}
        data = template.encode(body)
        self.fast_calls += 1
        departures.tracking()  # the session's trace says when the request has left
        try:
            async with session.post(
                template.url, data=data, headers=headers, proxy=template.proxy
            ) as response:
                status = response.status
                raw = await response.read()
                answer_headers = response.headers
        except Exception as error:
            await self._sdk_for_errors()
            self._raise_transport_error(error, template, data)
        if status >= 300:
            await self._sdk_for_errors()
            self._raise_status_error(template, data, status, list(answer_headers.items()), raw)
        return _parsed(raw, answer_headers.get("content-type", "*"))

    async def _sdk_for_errors(self) -> None:
        """Import what the SDK builds its errors with, in a thread, the first time an error
        needs it. Where the template was made ahead, nothing of the SDK is loaded here until
        then, and its import (one to two seconds) on the event loop would hold up every call
        in flight at the moment a run meets its first rate limit; in a thread the loop keeps
        turning, and calls that fail meanwhile wait for the same import."""
        if self._sdk_import is None:
            loop = asyncio.get_running_loop()
            self._sdk_import = loop.run_in_executor(None, self._load_for_errors)
            self._sdk_import.add_done_callback(self._forget_failed_import)
        await asyncio.shield(self._sdk_import)

    def _load_for_errors(self) -> None:
        """(In a thread.) The SDK's modules for its errors, and its client, which makes the
        status errors (built here where it was not yet: it loads the HTTP client's modules)."""
        _import_for_errors(self.sdk_name)
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

    def _raise_transport_error(
        self, error: Exception, template: _Template, data: bytes
    ) -> NoReturn:
        """Raise what the SDK raises for ``error`` from its aiohttp client: the error mapped
        to its HTTP client's by the SDK's own mapping, then to the SDK's timeout or connection
        error (the SDK loaded beforehand: :meth:`_sdk_for_errors`)."""
        transport = import_module(f"{self.sdk_name}._vendor.httpx_aiohttp.transport")
        timeouts, failures = _transport_errors(self.sdk_name)
        try:
            with transport.map_aiohttp_exceptions():
                raise error
        except timeouts as mapped:
            raise self.sdk.APITimeoutError(request=self._request(template, data)) from mapped
        except failures as mapped:
            raise self.sdk.APIConnectionError(request=self._request(template, data)) from mapped

    def _request(self, template: _Template, data: bytes) -> Any:
        import httpx2

        return httpx2.Request("POST", template.url, headers=template.headers, content=data)

    def _raise_status_error(
        self,
        template: _Template,
        data: bytes,
        status: int,
        headers: list[tuple[str, str]],
        raw: bytes,
    ) -> None:
        """Raise the SDK's own error for this status, built by the SDK from the response and
        raised as the SDK raises it (inside the HTTP client's status error)."""
        import httpx2

        kept = [(k, v) for k, v in headers if k.lower() != "content-encoding"]
        response = httpx2.Response(
            status, headers=kept, content=raw, request=self._request(template, data)
        )
        try:
            response.raise_for_status()
        except httpx2.HTTPStatusError:
            raise self.client()._make_status_error_from_response(response) from None

    async def aclose(self) -> None:
        self._sdk_import = None  # it belongs to this event loop
        if self._session is not None:
            await self._session.close()
            self._session = None


def _import_for_errors(sdk: str) -> None:
    """Import the SDK and the modules its errors are built and sorted with."""
    for name in (
        sdk,
        f"{sdk}._vendor.httpx_aiohttp.transport",
        "httpx2",
        *(["openai._httpx2"] if sdk == "openai" else []),
    ):
        import_module(name)


def _transport_errors(sdk: str) -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """The HTTP client's errors the SDK turns into its timeout error, and those it turns into
    its connection error (as its client's ``request`` sorts them)."""
    if sdk == "openai":
        from openai._httpx2 import request_exceptions, timeout_exceptions

        return timeout_exceptions(), request_exceptions()
    import httpx2  # the Anthropic SDK: its timeout, and any other failure but its own errors

    return (httpx2.TimeoutException,), (Exception,)


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
    try:
        return _decode(raw)  # four times faster than json.loads on an answer
    except msgspec.MsgspecError:
        pass  # what only json.loads reads (NaN, a BOM, 1e400, lone surrogates), or no JSON
    kind = content_type.split(";")[0]
    if kind.endswith("json"):
        return json.loads(raw)
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")
