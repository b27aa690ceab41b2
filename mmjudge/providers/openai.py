"""OpenAI Chat Completions judges, and any OpenAI-compatible server (vLLM, Ollama, Gemini...).

``provider: openai`` and ``provider: openai_compatible`` share this class; a compatible service
is only a ``base_url`` and an ``api_key_env``. The SDK's own retries are off
(``max_retries=0``): the runner retries, using :meth:`OpenAIJudge.is_retryable` and
:meth:`OpenAIJudge.retry_after`.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, FatalProviderError
from mmjudge.providers._common import (
    DEFAULT_TIMEOUT_S,
    MalformedResponseError,
    ProviderResponse,
    classify_status,
    count,
    http_client,
    image_data_url,
    image_marker,
    is_retryable_error,
    read_api_key,
    retry_after_seconds,
    usage_dict,
)
from mmjudge.providers.base import JudgeAPI
from mmjudge.records import JudgeRequest, Usage

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: Sent as the key to OpenAI-compatible servers that need none (the SDK insists on one).
NO_KEY = "not-needed"

MAX_TOKENS_PARAMS = ("max_tokens", "max_completion_tokens")
#: Body fields passed to ``chat.completions.create`` by name; the others go in ``extra_body``.
#: Model ids starting with these are reasoning models, which take ``max_completion_tokens``.
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def default_max_tokens_param(model_id: str) -> str:
    """``max_completion_tokens`` for reasoning models (o-series, gpt-5*), else ``max_tokens``."""
    name = model_id.rsplit("/", 1)[-1].lower()
    return "max_completion_tokens" if name.startswith(REASONING_PREFIXES) else "max_tokens"


class OpenAIJudge(JudgeAPI):
    """A judge behind the Chat Completions API.

    Model options: ``max_tokens_param`` (``max_tokens`` or ``max_completion_tokens``; the
    default follows the model id) and ``reasoning_effort`` (sent only when set).
    """

    provider = "openai"
    supports_images = True
    modalities: tuple[str, ...] = ("text", "mm", "image")

    def __init__(self, model: ModelConfig, *, timeout: float | None = None) -> None:
        super().__init__(model)
        self.name = str(model.name)
        self.provider_name = str(model.provider)
        self.model_id = str(model.model_id)
        self.supports_images = bool(model.supports_images)
        self.modalities = ("text", "mm", "image") if self.supports_images else ("text",)
        self.temperature = None if model.temperature is None else float(model.temperature)
        self.max_tokens = int(model.max_tokens)
        self.image_detail = str(model.image_detail or "low")
        options = dict(model.options or {})
        param = options.get("max_tokens_param") or default_max_tokens_param(self.model_id)
        if param not in MAX_TOKENS_PARAMS:
            raise ConfigError(
                f"model.options.max_tokens_param='{param}' for model '{self.name}' must be one "
                f"of: {', '.join(MAX_TOKENS_PARAMS)}"
            )
        self.max_tokens_param = str(param)
        effort = options.get("reasoning_effort")
        self.reasoning_effort = None if effort is None else str(effort)

        compatible = self.provider_name != "openai"
        if compatible and not model.base_url:
            raise ConfigError(
                f"model '{self.name}' uses provider '{self.provider_name}' and needs "
                "model.base_url (the server's URL, e.g. http://127.0.0.1:8000/v1)"
            )
        self.base_url = str(model.base_url or DEFAULT_BASE_URL)
        self.key_env = model.api_key_env or (None if compatible else DEFAULT_KEY_ENV)
        api_key = read_api_key(self.name, self.key_env) if self.key_env else NO_KEY
        self._client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=self.base_url,
            max_retries=0,
            timeout=DEFAULT_TIMEOUT_S if timeout is None else timeout,
            http_client=http_client(openai, model),
        )

    def describe(self) -> str:
        return f"{self.provider_name} judge '{self.name}' ({self.model_id} at {self.base_url})"

    # -- the request -----------------------------------------------------------------------

    def request_body(self, request: JudgeRequest, *, redact: bool = False) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions``; ``redact`` swaps images for hashes."""
        if request.images and not self.supports_images:
            raise ConfigError(
                f"model '{self.name}' has supports_images=false but was given "
                f"{len(request.images)} image(s)"
            )
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        content: str | list[dict[str, Any]]
        if request.images:
            # The prompt first, then each image, every one with an explicit detail level
            # (the "auto" default would leave the token count up to the provider).
            content = [{"type": "text", "text": request.prompt}]
            for image in request.images:
                url = image_marker(image) if redact else image_data_url(image)
                content.append(
                    {"type": "image_url", "image_url": {"url": url, "detail": self.image_detail}}
                )
        else:
            # A plain string: every OpenAI-compatible server accepts it, not all take parts.
            content = request.prompt
        messages.append({"role": "user", "content": content})
        body: dict[str, Any] = {"model": self.model_id, "messages": messages}
        body[self.max_tokens_param] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.reasoning_effort is not None:
            body["reasoning_effort"] = self.reasoning_effort
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
            # The body is already in wire format, so it goes through the SDK's generic ``post``
            # (same client, auth, errors and parsing) and skips the keyword-argument
            # transformation of ``chat.completions.create``, which costs about a millisecond of
            # CPU per call and would dominate the harness at high concurrency.
            completion = await self._client.post(
                "/chat/completions", body=body, cast_to=ChatCompletion
            )
        except json.JSONDecodeError as exc:
            raise MalformedResponseError(
                f"{self.base_url} answered with a body that is not valid JSON ({exc.msg})"
            ) from exc
        except openai.APIStatusError as exc:
            fatal = self.classify_fatal(exc)
            if fatal is not None:
                raise fatal from exc
            raise
        latency = time.perf_counter() - started
        return self._response(completion, latency)

    def _response(self, completion: Any, latency: float) -> ProviderResponse:
        choices = getattr(completion, "choices", None)
        if not choices:
            shown = type(completion).__name__
            raise MalformedResponseError(
                f"{self.base_url} answered without any choices (got {shown}, not a chat completion)"
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None)
        refusal = getattr(message, "refusal", None)
        stop_reason = getattr(choice, "finish_reason", None)
        if refusal and not text:
            stop_reason = "refusal"
        raw_usage = usage_dict(getattr(completion, "usage", None))
        return ProviderResponse(
            text=text or "",
            usage=usage_from_openai(raw_usage),
            raw_usage=raw_usage,
            latency_s=latency,
            model=str(getattr(completion, "model", None) or self.model_id),
            stop_reason=stop_reason,
            refusal=refusal or None,
        )

    # -- errors ----------------------------------------------------------------------------

    def is_retryable(self, error: Exception) -> bool:
        return is_retryable_error(
            error,
            connection_errors=(openai.APIConnectionError,),
            status_errors=(openai.APIStatusError,),
        )

    def retry_after(self, error: Exception) -> float | None:
        return retry_after_seconds(error)

    def classify_fatal(self, error: Exception) -> FatalProviderError | None:
        """The run-stopping error for ``error`` (bad key, unknown model, bad settings), or None."""
        if not isinstance(error, openai.APIStatusError):
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


def usage_from_openai(raw: dict[str, Any]) -> Usage:
    """Chat Completions usage in mmjudge's buckets (``prompt_tokens`` already holds them all)."""
    return Usage(
        input_tokens=count(raw, "prompt_tokens"),
        output_tokens=count(raw, "completion_tokens"),
        cached_input_tokens=count(raw, "prompt_tokens_details", "cached_tokens"),
        cache_write_tokens=count(raw, "prompt_tokens_details", "cache_write_tokens"),
        reasoning_tokens=count(raw, "completion_tokens_details", "reasoning_tokens"),
        image_tokens=count(raw, "prompt_tokens_details", "image_tokens"),
    )
