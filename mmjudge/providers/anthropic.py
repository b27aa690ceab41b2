"""Anthropic Messages API judges (Claude).

The SDK's own retries are off (``max_retries=0``): the runner retries, using
:meth:`AnthropicJudge.is_retryable` and :meth:`AnthropicJudge.retry_after`.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import anthropic
from anthropic.types import Message

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, FatalProviderError
from mmjudge.providers._common import (
    DEFAULT_TIMEOUT_S,
    MalformedResponseError,
    ProviderResponse,
    classify_status,
    count,
    http_client,
    image_base64,
    image_marker,
    is_retryable_error,
    read_api_key,
    retry_after_seconds,
    usage_dict,
)
from mmjudge.providers.base import JudgeAPI
from mmjudge.records import JudgeRequest, Usage

log = logging.getLogger(__name__)

#: The SDK appends ``/v1/messages`` to the base URL, so base URLs stop before ``/v1``.
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
#: Body fields passed to ``messages.create`` by name; the others travel in ``extra_body``.


def normalise_base_url(url: str | None) -> str:
    """The base URL without a trailing slash or ``/v1`` (a common slip the SDK would repeat)."""
    if not url:
        return DEFAULT_BASE_URL
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class AnthropicJudge(JudgeAPI):
    """A judge behind the Messages API: images first, then the prompt, in one user turn."""

    provider = "anthropic"
    supports_images = True
    modalities: tuple[str, ...] = ("text", "mm", "image")

    def __init__(self, model: ModelConfig, *, timeout: float | None = None) -> None:
        super().__init__(model)
        self.name = str(model.name)
        self.model_id = str(model.model_id)
        self.supports_images = bool(model.supports_images)
        self.modalities = ("text", "mm", "image") if self.supports_images else ("text",)
        self.temperature = None if model.temperature is None else float(model.temperature)
        self.max_tokens = int(model.max_tokens)
        self.base_url = normalise_base_url(model.base_url)
        self.key_env = str(model.api_key_env or DEFAULT_KEY_ENV)
        self._client = anthropic.AsyncAnthropic(
            api_key=read_api_key(self.name, self.key_env),
            base_url=self.base_url,
            max_retries=0,
            timeout=DEFAULT_TIMEOUT_S if timeout is None else timeout,
            http_client=http_client(anthropic, model),
        )

    def describe(self) -> str:
        return f"anthropic judge '{self.name}' ({self.model_id} at {self.base_url})"

    # -- the request -----------------------------------------------------------------------

    def request_body(self, request: JudgeRequest, *, redact: bool = False) -> dict[str, Any]:
        """The JSON body sent to ``/v1/messages``; ``redact`` swaps images for hashes."""
        if request.images and not self.supports_images:
            raise ConfigError(
                f"model '{self.name}' has supports_images=false but was given "
                f"{len(request.images)} image(s)"
            )
        content: list[dict[str, Any]] = []
        for image in request.images:
            source: dict[str, Any]
            if image.encoding == "url":
                url = image_marker(image) if redact else image.data
                source = {"type": "url", "url": url}
            else:
                media_type, data = image_base64(image)
                payload = image_marker(image) if redact else data
                source = {"type": "base64", "media_type": media_type, "data": payload}
            content.append({"type": "image", "source": source})
        content.append({"type": "text", "text": request.prompt})
        body: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": self.max_tokens,
            "messages": [{"role": "user", "content": content}],
        }
        if request.system:
            body["system"] = request.system
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def redacted_request(self, request: JudgeRequest) -> dict[str, Any]:
        """The request body for logs: each image is ``sha256:<hash>``; no headers, no key."""
        return self.request_body(request, redact=True)

    # -- the call --------------------------------------------------------------------------

    async def generate(self, request: JudgeRequest) -> ProviderResponse:
        body = self.request_body(request)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s request %s", self.name, json.dumps(self.redacted_request(request)))
        started = time.perf_counter()
        try:
            # The body is already in wire format: the SDK's generic ``post`` sends it with the
            # same client, auth, errors and parsing, without re-transforming keyword arguments
            # (recent SDKs also dropped sampling keywords that the API still reads).
            message = await self._client.post("/v1/messages", body=body, cast_to=Message)
        except json.JSONDecodeError as exc:
            raise MalformedResponseError(
                f"{self.base_url} answered with a body that is not valid JSON ({exc.msg})"
            ) from exc
        except anthropic.APIStatusError as exc:
            fatal = self.classify_fatal(exc)
            if fatal is not None:
                raise fatal from exc
            raise
        latency = time.perf_counter() - started
        return self._response(message, latency)

    def _response(self, message: Any, latency: float) -> ProviderResponse:
        blocks = getattr(message, "content", None)
        if not isinstance(blocks, list):
            shown = type(message).__name__
            raise MalformedResponseError(
                f"{self.base_url} answered without content blocks (got {shown}, not a message)"
            )
        # Only text blocks are the answer; thinking and other blocks are left out.
        text = "".join(
            getattr(block, "text", "") or ""
            for block in blocks
            if getattr(block, "type", None) == "text"
        )
        stop_reason = getattr(message, "stop_reason", None)
        raw_usage = usage_dict(getattr(message, "usage", None))
        return ProviderResponse(
            text=text,
            usage=usage_from_anthropic(raw_usage),
            raw_usage=raw_usage,
            latency_s=latency,
            model=str(getattr(message, "model", None) or self.model_id),
            stop_reason=stop_reason,
            refusal=(text or None) if stop_reason == "refusal" else None,
        )

    # -- errors ----------------------------------------------------------------------------

    def is_retryable(self, error: Exception) -> bool:
        return is_retryable_error(
            error,
            connection_errors=(anthropic.APIConnectionError,),
            status_errors=(anthropic.APIStatusError,),
        )

    def retry_after(self, error: Exception) -> float | None:
        return retry_after_seconds(error)

    def classify_fatal(self, error: Exception) -> FatalProviderError | None:
        """The run-stopping error for ``error`` (bad key, unknown model, bad settings), or None."""
        if not isinstance(error, anthropic.APIStatusError):
            return None
        return classify_status(
            error,
            model_name=self.name,
            model_id=self.model_id,
            base_url=self.base_url,
            key_env=self.key_env,
        )

    async def aclose(self) -> None:
        await self._client.close()


def usage_from_anthropic(raw: dict[str, Any]) -> Usage:
    """Messages usage in mmjudge's buckets.

    Anthropic's ``input_tokens`` counts only the tokens after the last cache breakpoint, so
    the total input is ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``.
    """
    written = count(raw, "cache_creation_input_tokens")
    read = count(raw, "cache_read_input_tokens")
    return Usage(
        input_tokens=count(raw, "input_tokens") + written + read,
        output_tokens=count(raw, "output_tokens"),
        cached_input_tokens=read,
        cache_write_tokens=written,
        reasoning_tokens=count(raw, "output_tokens_details", "thinking_tokens"),
    )
