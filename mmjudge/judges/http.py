"""What the judges behind an official SDK share: keys, error classification, and
:class:`SDKJudge` (request payloads and answers' fields: :mod:`mmjudge.judges.payloads`).

Nothing here imports a provider SDK, so each provider module still imports only its own SDK;
the SDK-specific exception classes are passed in by the caller.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import sys
import time
from dataclasses import dataclass
from importlib import import_module
from typing import Any, ClassVar

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, CredentialError, FatalProviderError
from mmjudge.judges.base import ErrorVerdict, JudgeAPI
from mmjudge.judges.endpoint import endpoint_for
from mmjudge.judges.options import JudgeOptions
from mmjudge.judges.sdk_clients import ClientSpec, check_http_client, pool_size
from mmjudge.keyguard import redact_text
from mmjudge.records import JudgeRequest, JudgeResponse
from mmjudge.speed import FAST, Speed
from mmjudge.speed.wire import WireSender

#: SDK-level timeout (seconds) when the caller gives none. The runner's own per-call timeout
#: (``runner.timeout_s``) is normally the shorter one; this is only a backstop.
DEFAULT_TIMEOUT_S = 600.0

#: Sent as the key to servers that need none (an OpenAI-compatible one; the SDK insists on one).
NO_KEY = "not-needed"

#: How much of a provider's error message goes into a one-line error.
MESSAGE_CHARS = 200

#: Statuses worth another attempt: request timeout, conflict (OpenAI's lock timeouts), rate
#: limits and every 5xx, including Anthropic's 529 "overloaded". The same set the SDKs retry.
RETRYABLE_STATUSES = frozenset({408, 409, 429})

#: Words in a 400's message that mark it as a problem with this item rather than with the model
#: settings: a bad or oversized image, a prompt over the context window, a content filter.
_ITEM_PROBLEMS = (
    "image",
    "too long",
    "too large",
    "context length",
    "context_length",
    "maximum context",
    "content_filter",
    "content_policy",
    "content management policy",
)


class MalformedResponseError(Exception):
    """The server answered 200 but the body is not the provider's response format.

    Treated as retryable: a garbled or truncated body is usually a proxy or load-balancer
    hiccup that the next attempt does not hit, and the runner bounds the retries.
    """


def read_api_key(model_name: str, env_name: str) -> str:
    """The key held in ``env_name``, or a :class:`CredentialError` naming the variable."""
    key = os.environ.get(env_name, "").strip()
    if not key:
        raise CredentialError(
            f"model '{model_name}' needs an API key: set the {env_name} environment variable"
        )
    return key


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` with whitespace collapsed, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def status_code(error: BaseException) -> int | None:
    """The HTTP status of an SDK status error, or None."""
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else None


def _headers(error: BaseException) -> Any:
    response = getattr(error, "response", None)
    return getattr(response, "headers", None)


def provider_message(error: BaseException) -> str:
    """The provider's own error message (from the JSON error body when there is one).

    Redacted (:func:`mmjudge.keyguard.redact_text`): it goes into rows, summaries and the
    terminal, and a gateway may echo the credentials it was sent.
    """
    return redact_text(_provider_text(error))


def _provider_text(error: BaseException) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return one_line(inner["message"])
        if isinstance(body.get("message"), str):
            return one_line(body["message"])
    if isinstance(body, str) and body.strip():
        return one_line(body)
    return one_line(getattr(error, "message", None) or str(error) or type(error).__name__)


def _error_code(error: BaseException) -> str:
    """The provider's machine-readable error code (OpenAI ``code``/``type``), or ""."""
    body = getattr(error, "body", None)
    if not isinstance(body, dict):
        return ""
    inner = body.get("error", body)
    if not isinstance(inner, dict):
        return ""
    return " ".join(str(inner.get(key) or "") for key in ("code", "type", "param")).strip()


def retry_after_seconds(error: BaseException) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` may be a number of seconds or an HTTP date. None when the error carries
    no response, no such header, or a value that cannot be read.
    """
    headers = _headers(error)
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            value = float(milliseconds) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    text = headers.get("retry-after")
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        value = when.timestamp() - time.time()
        return max(0.0, value)
    return value if math.isfinite(value) and value >= 0 else None


def is_retryable_error(
    error: BaseException,
    *,
    connection_errors: tuple[type[BaseException], ...],
    status_errors: tuple[type[BaseException], ...],
) -> bool:
    """Whether another attempt could succeed.

    Retryable: timeouts and dropped or refused connections (``connection_errors``, which
    include the SDK's timeout error), 408/409/429 and any 5xx (``status_errors``), and bodies
    that are not valid JSON or not the expected shape. An ``x-should-retry`` header, which both
    OpenAI and Anthropic send on some errors, overrides the status rule as it does in the SDKs.
    A 429 that means the account is out of quota is not retryable (see ``classify_status``).
    """
    if isinstance(error, (MalformedResponseError, json.JSONDecodeError)):
        return True
    if isinstance(error, connection_errors):
        return True
    if not isinstance(error, status_errors):
        return False
    status = status_code(error)
    if status is None:
        return False
    if status == 429 and "insufficient_quota" in _error_code(error):
        return False
    headers = _headers(error)
    hint = (headers.get("x-should-retry") or "").lower() if headers is not None else ""
    if hint in ("true", "false"):
        return hint == "true"
    return status in RETRYABLE_STATUSES or status >= 500


def classify_status(
    error: BaseException,
    *,
    model_name: str,
    model_id: str,
    base_url: str,
    key_env: str | None,
) -> FatalProviderError | None:
    """A :class:`FatalProviderError` for errors no retry can fix, else None.

    Fatal: 401/403 (the key), 402 and quota-exhausted 429s (billing), 404 (unknown model or
    wrong base URL), and 400/422 that concern the model settings. A 400/422 about this item
    (an image the provider cannot read, a prompt over the context window, a content filter) is
    left to the runner as a per-item failure, so one bad image does not stop a sweep.
    """
    status = status_code(error)
    if status is None:
        return None
    message = provider_message(error)
    where = f"model '{model_name}'"
    key_hint = f"check the key in {key_env}" if key_env else "set model.api_key_env"
    if status == 401:
        return FatalProviderError(
            f"{where}: the API key was rejected by {base_url} (401: {message}); {key_hint}"
        )
    if status == 403:
        return FatalProviderError(
            f"{where}: access to '{model_id}' was denied by {base_url} (403: {message}); "
            f"{key_hint} and its access to this model"
        )
    if status == 402 or (status == 429 and "insufficient_quota" in _error_code(error)):
        return FatalProviderError(
            f"{where}: the account has no credit or quota left ({status}: {message}); "
            "check billing for the key" + (f" in {key_env}" if key_env else "")
        )
    if status == 404:
        return FatalProviderError(
            f"{where}: unknown model '{model_id}' at {base_url} (404: {message}); "
            "check model.model_id (and model.base_url)"
        )
    if status in (400, 422):
        detail = f"{message} {_error_code(error)}".lower()
        if any(word in detail for word in _ITEM_PROBLEMS):
            return None
        return FatalProviderError(
            f"{where}: the provider rejected the request ({status}: {message}); check the model "
            "settings (model_id, temperature, max_tokens, options)"
        )
    return None


@dataclass(frozen=True)
class HTTPOptions(JudgeOptions):
    """``model.options`` every judge behind an SDK reads."""

    http_client: str = "aiohttp"
    """The SDK's HTTP transport: ``aiohttp`` (its aiohttp client) or ``httpx`` (its default)."""


class SDKJudge(JudgeAPI):
    """What the OpenAI and Anthropic judges share: error handling around an official SDK.

    The SDK is imported, and its client built, at the judge's first call (:attr:`_client`),
    not when the judge is made: a run answered entirely from the response cache never loads
    it. Everything a setting or a key can get wrong is checked when the judge is made, before
    any call: the endpoint (``model.base_url``, else the variable the SDK reads, else the
    provider's public one) and the key. Subclasses name their SDK's client class and response
    type (``client_class``, ``response_type_name``; the SDK's module is their descriptor's
    ``sdk``); the attributes ``name``, ``model_id``, ``base_url`` and ``key_env`` name the model
    in error messages.

    With the SDK's aiohttp transport (the default) and the speed machinery on, calls skip most
    of the SDK's per-call machinery (:class:`~mmjudge.speed.wire.WireSender`);
    ``model.options.http_client=httpx`` keeps every call on the SDK's own path.
    """

    Options: ClassVar[type[JudgeOptions]] = HTTPOptions
    options: HTTPOptions
    #: The SDK's client class, and where its response type lives (``module:Name``).
    client_class: ClassVar[str]
    response_type_name: ClassVar[str]
    #: Where calls are posted.
    api_path: ClassVar[str]

    name: str
    model_id: str
    base_url: str
    key_env: str | None
    _api_key: str
    _endpoint: str
    _timeout_s: float
    _built: Any = None
    """The SDK's client once built (see :attr:`_client`)."""
    _wire: WireSender | None = None
    """Where calls after the first go, through less of the SDK (None: the SDK's own path)."""
    _speed: Speed = FAST
    """Whether the run uses the speed machinery (:meth:`use_speed`)."""

    def __init__(self, model: ModelConfig, *, timeout: float | None = None) -> None:
        super().__init__(model)
        check_http_client(model, self.options.http_client)
        descriptor = self.descriptor
        self.sdk = str(descriptor.sdk)
        """The SDK's module (imported at the first call)."""
        self.name = str(model.name)
        self.model_id = str(model.model_id)
        endpoint = self.endpoint(endpoint_for(model, descriptor.base_url_env))
        # Shown in messages and kept in batch state files, so never with credentials in it.
        self.base_url = redact_text(endpoint)
        self.key_env = self.api_key_env(model)
        # Read now, so a missing key stops the run before any call; the SDK loads at the
        # first call (see _client).
        self._api_key = read_api_key(self.name, self.key_env) if self.key_env else NO_KEY
        self._endpoint = endpoint
        self._timeout_s = DEFAULT_TIMEOUT_S if timeout is None else timeout

    def endpoint(self, override: str | None) -> str:
        """Where calls go, given the configured ``override`` (None: none configured): the
        provider's public endpoint unless overridden; a provider without one (an
        OpenAI-compatible server) needs the override."""
        default = self.descriptor.default_base_url
        if override:
            return override
        if default is None:
            variable = self.descriptor.base_url_env
            raise ConfigError(
                f"model '{self.name}' uses provider '{self.model.provider}' and needs "
                "model.base_url (the server's URL, e.g. http://127.0.0.1:8000/v1)"
                + (f" or {variable}" if variable else "")
            )
        return default

    def use_speed(self, speed: Speed) -> None:
        self._speed = speed

    @property
    def _client(self) -> Any:
        """The SDK's client, built on first use."""
        if self._built is None:
            try:
                self._built = self._build_client(import_module(self.sdk))
            except Exception as error:  # the settings were checked when the judge was made
                raise FatalProviderError(
                    f"model '{self.name}': the {self.sdk} client could not be set up "
                    f"({type(error).__name__}: {one_line(str(error))})"
                ) from error
        return self._built

    def _client_spec(self) -> ClientSpec:
        return ClientSpec(
            client_class=self.client_class,
            api_key=self._api_key,
            base_url=self._endpoint,
            timeout_s=self._timeout_s,
            use_aiohttp=self.options.http_client == "aiohttp",
            connections=pool_size(self.model),
        )

    def _build_client(self, sdk: Any) -> Any:
        """The SDK's client (and :attr:`_wire` where it applies), from the checked settings."""
        client, aiohttp = self._client_spec().build(sdk)
        if self._wire is None and aiohttp and self._speed.on and WireSender.usable(client):
            self._wire = self._new_wire()
        return client

    def _new_wire(self) -> WireSender:
        return WireSender(
            self.sdk,
            lambda: self._client,
            self.api_path,
            connections=pool_size(self.model),
            timeout_s=self._timeout_s,
        )

    def _loaded_sdk_errors(self) -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
        """The SDK's connection and status errors, or none while the SDK is not loaded: an
        error raised before then is not one of its own, and importing the SDK here (a second
        or two) would hold up the event loop at a run's first error (a runner's timeout)."""
        module = sys.modules.get(self.sdk)
        found = [getattr(module, name, None) for name in ("APIConnectionError", "APIStatusError")]
        connection, status = (() if cls is None else (cls,) for cls in found)
        return connection, status

    @property
    def status_error(self) -> type[Exception]:
        """The SDK's error for an answer with an error status."""
        error: type[Exception] = import_module(self.sdk).APIStatusError
        return error

    @property
    def response_type(self) -> type[Any]:
        """The SDK type an answer is parsed into."""
        module, _, name = self.response_type_name.partition(":")
        cls: type[Any] = getattr(import_module(module), name)
        return cls

    def request_body(self, request: JudgeRequest, *, redact: bool = False) -> dict[str, Any]:
        """The JSON body of the call in the API's wire format; ``redact`` swaps images for
        their hashes."""
        raise NotImplementedError

    def redacted_request(self, request: JudgeRequest) -> dict[str, Any]:
        """The request body for logs: each image is ``sha256:<hash>``; no headers, no key."""
        return self.request_body(request, redact=True)

    def _response(self, answer: Any, latency: float) -> JudgeResponse:
        """The provider's parsed answer as a :class:`JudgeResponse`."""
        raise NotImplementedError

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        body = self.request_body(request)
        log = logging.getLogger(type(self).__module__)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s request %s", self.name, json.dumps(self.redacted_request(request)))
        started = time.perf_counter()
        try:
            # The body is already in wire format, so it goes through the SDK's generic ``post``
            # (same client, auth, errors and parsing) and skips the SDK's keyword-argument
            # transformation, which costs about a millisecond of CPU per call (it would
            # dominate the harness at high concurrency) and drops sampling keywords that some
            # APIs still read.
            answer: Any
            wire = self._wire
            if wire is not None and wire.ready:  # the template is known: no SDK needed
                answer = await wire.post(body, object)
            else:
                client = self._client  # built at the first call, with the wire sender if any
                if self._wire is not None:
                    answer = await self._wire.post(body, self.response_type)
                else:
                    answer = await client.post(self.api_path, body=body, cast_to=self.response_type)
        except json.JSONDecodeError as exc:
            raise MalformedResponseError(
                f"{self.base_url} answered with a body that is not valid JSON ({exc.msg})"
            ) from exc
        return self._response(answer, time.perf_counter() - started)

    def classify_error(self, error: Exception) -> ErrorVerdict:
        """Fatal (bad key, billing, unknown model, bad settings), retryable (see
        :func:`is_retryable_error`, with the server's ``Retry-After``), or an item failure."""
        fatal = self._fatal(error)
        if fatal is not None:
            return ErrorVerdict(fatal=fatal)
        connection_errors, status_errors = self._loaded_sdk_errors()
        retryable = is_retryable_error(
            error, connection_errors=connection_errors, status_errors=status_errors
        )
        return ErrorVerdict(retryable, retry_after_seconds(error) if retryable else None)

    def _fatal(self, error: Exception) -> FatalProviderError | None:
        """The run-stopping error for ``error`` (bad key, unknown model, bad settings), or None."""
        _connection_errors, status_errors = self._loaded_sdk_errors()
        if not isinstance(error, status_errors):
            return None
        return classify_status(
            error,
            model_name=self.name,
            model_id=self.model_id,
            base_url=self.base_url,
            key_env=self.key_env,
        )

    def _batch_fatal(self, error: Exception, where: str) -> FatalProviderError | None:
        """Run-stopping batch errors; a 404 means the server has no batch API (or no batch)."""
        if status_code(error) == 404:
            return FatalProviderError(
                f"model '{self.name}': {self.base_url} answered 404 on {where} "
                f"({one_line(provider_message(error))}); the server may have no "
                f"{self.descriptor.batch_api or 'batch API'}, or the batch belongs to another "
                "key: use runner.mode=sync, or check the key"
            )
        return self._fatal(error)

    async def aclose(self) -> None:
        if self._wire is not None:
            await self._wire.aclose()
        if self._built is not None:  # never built: nothing to close
            await self._built.close()
