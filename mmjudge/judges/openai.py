"""OpenAI Chat Completions judges, and any OpenAI-compatible server (vLLM, Ollama, Gemini...).

``provider: openai`` and ``provider: openai_compatible`` share this class; a compatible service
is only a ``base_url`` and an ``api_key_env``. The SDK's own retries are off
(``max_retries=0``): the runner retries, using :meth:`OpenAIJudge.classify_error`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError
from mmjudge.judges.base import BatchItemResult, BatchLimits, BatchPoll, SubmittedBatch
from mmjudge.judges.descriptor import OPENAI, ImageLimits, JudgeDescriptor
from mmjudge.judges.http import (
    HTTPOptions,
    MalformedResponseError,
    SDKJudge,
    one_line,
)
from mmjudge.judges.payloads import (
    count,
    field_value,
    image_data_url,
    image_marker,
    placed_images,
    usage_dict,
)
from mmjudge.prompts.passages import ANSWER_NAME, answer_schema
from mmjudge.records import EncodedImage, JudgeRequest, JudgeResponse, Usage

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: The variable the SDK reads a base URL from, for OpenAI's API and compatible servers alike.
BASE_URL_ENV = "OPENAI_BASE_URL"

MAX_TOKENS_PARAMS = ("max_tokens", "max_completion_tokens")
#: Body fields passed to ``chat.completions.create`` by name; the others go in ``extra_body``.
#: Model ids starting with these are reasoning models, which take ``max_completion_tokens``.
REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")

#: The Batch API's limits: 50,000 requests and a 200 MB input file per batch.
BATCH_LIMITS = BatchLimits(max_requests=50_000, max_bytes=200_000_000)
#: Pictures in one Chat Completions request, as OpenAI's vision guide states them (500 images
#: and 50 MB of image bytes; later pages allow more, the lower figures are kept). An
#: OpenAI-compatible server states its own, if any.
IMAGE_LIMITS = ImageLimits(
    max_images=500,
    max_bytes=50_000_000,
    source="OpenAI's vision guide: 500 images and 50 MB of image bytes per request",
)
#: The endpoint every line of a batch input file targets.
BATCH_ENDPOINT: Final = "/v1/chat/completions"
#: Batch statuses after which nothing changes.
BATCH_ENDED = frozenset({"completed", "expired", "cancelled", "failed"})
#: Error codes of batch items that another batch may well get through.
BATCH_RETRYABLE_CODES = frozenset({"batch_expired", "batch_cancelled"})


def default_max_tokens_param(model_id: str) -> str:
    """``max_completion_tokens`` for reasoning models (o-series, gpt-5*), else ``max_tokens``."""
    name = model_id.rsplit("/", 1)[-1].lower()
    return "max_completion_tokens" if name.startswith(REASONING_PREFIXES) else "max_tokens"


@dataclass(frozen=True)
class OpenAIOptions(HTTPOptions):
    """``model.options`` of an OpenAI (or OpenAI-compatible) judge."""

    family: ClassVar[str] = "openai"
    max_tokens_param: str | None = None
    """``max_tokens`` or ``max_completion_tokens`` (default: what the model id needs)."""
    reasoning_effort: str | None = None
    """Sent as ``reasoning_effort`` only when set."""


class OpenAIJudge(SDKJudge):
    """A judge behind the Chat Completions API.

    Model options: ``max_tokens_param`` (``max_tokens`` or ``max_completion_tokens``; the
    default follows the model id) and ``reasoning_effort`` (sent only when set).
    """

    #: OpenAI's own API, and any server that speaks it (``openai_compatible``: vLLM, Ollama,
    #: hosted open models), which needs a base URL, takes a key only where the config names
    #: one, and serves models of many makers.
    descriptors = (
        JudgeDescriptor(
            "openai",
            maker=OPENAI,
            sdk="openai",
            packages=("openai",),
            key_env=DEFAULT_KEY_ENV,
            base_url_env=BASE_URL_ENV,
            default_base_url=DEFAULT_BASE_URL,
            batch_api="Batch API",
            prompt_cache="automatic",
            structured_output="json_schema",
            image_limits=IMAGE_LIMITS,
        ),
        JudgeDescriptor(
            "openai_compatible",
            sdk="openai",
            packages=("openai",),
            base_url_env=BASE_URL_ENV,
            batch_api="Batch API",
            structured_output="json_schema",
        ),
    )
    Options = OpenAIOptions
    options: OpenAIOptions
    client_class = "AsyncOpenAI"
    response_type_name = "openai.types.chat:ChatCompletion"
    supports_images = True
    modalities: tuple[str, ...] = ("text", "mm", "image")
    batch_limits = BATCH_LIMITS
    api_path = "/chat/completions"

    def __init__(self, model: ModelConfig, *, timeout: float | None = None) -> None:
        super().__init__(model, timeout=timeout)
        self.supports_images = bool(model.supports_images)
        self.modalities = ("text", "mm", "image") if self.supports_images else ("text",)
        self.temperature = None if model.temperature is None else float(model.temperature)
        self.max_tokens = int(model.max_tokens)
        self.image_detail = str(model.image_detail or "low")
        param = self.options.max_tokens_param or default_max_tokens_param(self.model_id)
        if param not in MAX_TOKENS_PARAMS:
            raise ConfigError(
                f"model.options.max_tokens_param='{param}' for model '{self.name}' must be one "
                f"of: {', '.join(MAX_TOKENS_PARAMS)}"
            )
        self.max_tokens_param = str(param)
        self.reasoning_effort = self.options.reasoning_effort

    def describe(self) -> str:
        return f"{self.model.provider} judge '{self.name}' ({self.model_id} at {self.base_url})"

    # -- the request -----------------------------------------------------------------------

    def request_body(self, request: JudgeRequest, *, redact: bool = False) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions``; ``redact`` swaps images for hashes."""
        self.check_images(request)
        messages: list[dict[str, Any]] = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        content: str | list[dict[str, Any]]
        if request.image_places:
            # Each image where the prompt places it (several results, each with its own).
            content = [
                {"type": "text", "text": part}
                if isinstance(part, str)
                else self._image_part(part, redact)
                for part in placed_images(request)
            ]
        elif request.images:
            # The prompt first, then each image, every one with an explicit detail level
            # (the "auto" default would leave the token count up to the provider).
            content = [{"type": "text", "text": request.prompt}]
            content.extend(self._image_part(image, redact) for image in request.images)
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
        if request.cache_mark is not None and request.cache_mark.key:
            # Requests of one query share a key, so OpenAI routes them to where their common
            # prefix is cached; the body travels as JSON, so any SDK version sends it.
            body["prompt_cache_key"] = request.cache_mark.key
        if request.answer is not None:
            # Structured output: the answer is a JSON object that keeps to the schema.
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": ANSWER_NAME,
                    "strict": True,
                    "schema": answer_schema(request.answer),
                },
            }
        return body

    def _image_part(self, image: EncodedImage, redact: bool) -> dict[str, Any]:
        """An image's content part, with the judge's detail level."""
        url = image_marker(image) if redact else image_data_url(image)
        return {"type": "image_url", "image_url": {"url": url, "detail": self.image_detail}}

    def _response(self, completion: Any, latency: float) -> JudgeResponse:
        """The answer from a chat completion: the SDK's model, or the JSON it would be built
        from (a dict is what the SDK turns into a ``ChatCompletion``)."""
        choices = field_value(completion, "choices")
        if not choices:
            shown = "ChatCompletion" if isinstance(completion, dict) else type(completion).__name__
            raise MalformedResponseError(
                f"{self.base_url} answered without any choices (got {shown}, not a chat completion)"
            )
        choice = choices[0]
        message = field_value(choice, "message")
        text = field_value(message, "content")
        refusal = field_value(message, "refusal")
        stop_reason = field_value(choice, "finish_reason")
        if refusal and not text:
            stop_reason = "refusal"
        raw_usage = usage_dict(field_value(completion, "usage"))
        return JudgeResponse(
            text=text or "",
            usage=usage_from_openai(raw_usage),
            raw_usage=raw_usage,
            latency_s=latency,
            model=str(field_value(completion, "model") or self.model_id),
            stop_reason=stop_reason,
            system_fingerprint=field_value(completion, "system_fingerprint") or None,
        )

    # -- the Batch API ---------------------------------------------------------------------

    def batch_entry(self, custom_id: str, request: JudgeRequest) -> bytes:
        """One line of a batch input file: the same body a synchronous call would send."""
        line = {
            "custom_id": custom_id,
            "method": "POST",
            "url": BATCH_ENDPOINT,
            "body": self.request_body(request),
        }
        return json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    async def batch_submit(self, entries: Sequence[bytes]) -> SubmittedBatch:
        """Upload the lines as a JSONL file (``purpose=batch``) and create a batch from it."""
        content = b"\n".join(entries) + b"\n"
        try:
            uploaded = await self._client.files.create(
                file=("mmjudge-batch.jsonl", content, "application/jsonl"), purpose="batch"
            )
            batch = await self._client.batches.create(
                input_file_id=uploaded.id, endpoint=BATCH_ENDPOINT, completion_window="24h"
            )
        except self.status_error as exc:
            fatal = self._batch_fatal(exc, "/files and /batches")
            if fatal is not None:
                raise fatal from exc
            raise
        return SubmittedBatch(id=batch.id, status=batch.status, info={"input_file_id": uploaded.id})

    async def batch_poll(self, batch_id: str) -> BatchPoll:
        """The batch's status; once it has ended, the ids of its output and error files."""
        try:
            batch = await self._client.batches.retrieve(batch_id)
        except self.status_error as exc:
            fatal = self._batch_fatal(exc, f"/batches/{batch_id}")
            if fatal is not None:
                raise fatal from exc
            raise
        counts = usage_dict(batch.request_counts)
        info = {"output_file_id": batch.output_file_id, "error_file_id": batch.error_file_id}
        failure = None
        retryable = True
        if batch.status == "failed":
            errors = list(batch.errors.data or []) if batch.errors is not None else []
            codes = " ".join(str(e.code or "") for e in errors)
            text = "; ".join(one_line(f"{e.code}: {e.message}") for e in errors[:3])
            failure = f"batch {batch_id} failed: {text or 'no reason given'}"
            # Validation errors repeat on resubmission; queue limits clear with time.
            retryable = "limit" in codes
        return BatchPoll(
            status=str(batch.status),
            ended=batch.status in BATCH_ENDED,
            counts={k: int(v) for k, v in counts.items() if isinstance(v, int)},
            info=info,
            failure=failure,
            failure_retryable=retryable,
        )

    async def batch_results(
        self, batch_id: str, poll: BatchPoll, latency_s: float
    ) -> AsyncIterator[BatchItemResult]:
        """The lines of the output and error files, parsed; matched later by ``custom_id``."""
        for key in ("output_file_id", "error_file_id"):
            file_id = poll.info.get(key)
            if not file_id:
                continue
            try:
                content = await self._client.files.content(str(file_id))
            except self.status_error as exc:
                fatal = self._batch_fatal(exc, f"/files/{file_id}/content")
                if fatal is not None:
                    raise fatal from exc
                raise
            for line in content.text.splitlines():
                if line.strip():
                    yield self._batch_line(line, latency_s)

    def _batch_line(self, line: str, latency_s: float) -> BatchItemResult:
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            return BatchItemResult("", None, "unreadable result line", False, "Malformed")
        cid = str(data.get("custom_id") or "")
        response = data.get("response") or {}
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            try:
                answer = self._response(self.response_type.construct(**body), latency_s)
            except MalformedResponseError as exc:
                return BatchItemResult(cid, None, str(exc), True, "MalformedResponseError")
            answer.batch = True
            return BatchItemResult(cid, answer)
        error = data.get("error") or {}
        if isinstance(status, int):
            inner = body.get("error") if isinstance(body, dict) else None
            message = inner.get("message") if isinstance(inner, dict) else None
            retryable = status in (408, 409, 429) or status >= 500
            text = one_line(f"{status}: {message or 'request failed'}")
            return BatchItemResult(cid, None, text, retryable, f"HTTP{status}")
        code = str(error.get("code") or "error")
        text = one_line(f"{code}: {error.get('message') or 'request failed'}")
        return BatchItemResult(cid, None, text, code in BATCH_RETRYABLE_CODES, code)


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
