"""Anthropic Messages API judges (Claude).

The SDK's own retries are off (``max_retries=0``): the runner retries, using
:meth:`AnthropicJudge.classify_error`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar

from mmjudge.config import ModelConfig
from mmjudge.judges.base import BatchItemResult, BatchLimits, BatchPoll, SubmittedBatch
from mmjudge.judges.descriptor import ANTHROPIC, Crowd, ImageLimits, JudgeDescriptor
from mmjudge.judges.http import (
    MalformedResponseError,
    SDKJudge,
    one_line,
)
from mmjudge.judges.payloads import (
    count,
    field_value,
    image_base64,
    image_marker,
    placed_images,
    usage_dict,
)
from mmjudge.prompts.passages import ANSWER_NAME, answer_schema
from mmjudge.records import EncodedImage, JudgeRequest, JudgeResponse, Usage

log = logging.getLogger(__name__)
T = TypeVar("T")

#: The SDK appends ``/v1/messages`` to the base URL, so base URLs stop before ``/v1``.
DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"

#: Message Batches limits: 100,000 requests or 256 MB per batch.
BATCH_LIMITS = BatchLimits(max_requests=100_000, max_bytes=256_000_000)
#: Pictures in one Messages request: 100 on models with a 200k-token context window (600 on
#: the others; the lower figure is kept), within the 32 MB a request may take; above 20
#: pictures, none over 2000 pixels a side.
IMAGE_LIMITS = ImageLimits(
    max_images=100,
    max_bytes=32_000_000,
    source="Anthropic's vision guide: 100 images and 32 MB per request",
    crowd=Crowd(pictures=20, max_side=2000),
)
#: Error types of an errored batch item that a later batch may get through.
BATCH_RETRYABLE_ERRORS = frozenset(
    {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
)
#: The tool-use system prompt Anthropic adds to a call whose ``tool_choice`` forces a tool
#: (``any`` or ``tool``), in input tokens, on its current models (Claude 4 family).
TOOL_PROMPT_TOKENS = 313
#: What the structured answer's tool is said to do.
TOOL_DESCRIPTION = "Record the grade of each result shown, under its marker."


def normalise_base_url(url: str | None) -> str:
    """The base URL without a trailing slash or ``/v1`` (a common slip the SDK would repeat)."""
    if not url:
        return DEFAULT_BASE_URL
    url = url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


class AnthropicJudge(SDKJudge):
    """A judge behind the Messages API, in one user turn: the images, then the prompt; where
    the request marks a shared part for the prompt cache, that part comes first."""

    descriptors = (
        JudgeDescriptor(
            "anthropic",
            maker=ANTHROPIC,
            sdk="anthropic",
            packages=("anthropic",),
            key_env=DEFAULT_KEY_ENV,
            base_url_env="ANTHROPIC_BASE_URL",
            default_base_url=DEFAULT_BASE_URL,
            batch_api="Message Batches API",
            prompt_cache="marked",
            structured_output="tool",
            structured_prompt_tokens=TOOL_PROMPT_TOKENS,
            image_limits=IMAGE_LIMITS,
        ),
    )
    client_class = "AsyncAnthropic"
    response_type_name = "anthropic.types:Message"
    supports_images = True
    modalities: tuple[str, ...] = ("text", "mm", "image")
    batch_limits = BATCH_LIMITS
    api_path = "/v1/messages"

    def __init__(self, model: ModelConfig, *, timeout: float | None = None) -> None:
        super().__init__(model, timeout=timeout)
        self.supports_images = bool(model.supports_images)
        self.modalities = ("text", "mm", "image") if self.supports_images else ("text",)
        self.temperature = None if model.temperature is None else float(model.temperature)
        self.max_tokens = int(model.max_tokens)

    def endpoint(self, override: str | None) -> str:
        """The configured base URL without a trailing ``/v1`` (the SDK adds it), else
        Anthropic's public endpoint."""
        return normalise_base_url(override)

    def describe(self) -> str:
        return f"anthropic judge '{self.name}' ({self.model_id} at {self.base_url})"

    # -- the request -----------------------------------------------------------------------

    def request_body(self, request: JudgeRequest, *, redact: bool = False) -> dict[str, Any]:
        """The JSON body sent to ``/v1/messages``; ``redact`` swaps images for hashes."""
        self.check_images(request)
        content = _content(request, redact)
        body: dict[str, Any] = {
            "model": self.model_id,
            "max_tokens": self.max_tokens,
            "messages": [{"role": "user", "content": content}],
        }
        if request.system:
            body["system"] = request.system
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if request.answer is not None:
            # Structured output: one tool whose input is the answer, which the model must use.
            body["tools"] = [
                {
                    "name": ANSWER_NAME,
                    "description": TOOL_DESCRIPTION,
                    "input_schema": answer_schema(request.answer),
                }
            ]
            body["tool_choice"] = {"type": "tool", "name": ANSWER_NAME}
        return body

    def _response(self, message: Any, latency: float) -> JudgeResponse:
        """The answer from a message: the SDK's model, or the JSON it would be built from (a
        dict is what the SDK turns into a ``Message``)."""
        blocks = field_value(message, "content")
        if not isinstance(blocks, list):
            shown = "Message" if isinstance(message, dict) else type(message).__name__
            raise MalformedResponseError(
                f"{self.base_url} answered without content blocks (got {shown}, not a message)"
            )
        # Only text blocks are the answer; thinking and other blocks are left out.
        text = "".join(
            field_value(block, "text") or ""
            for block in blocks
            if field_value(block, "type") == "text"
        )
        text = _tool_answer(blocks) or text
        raw_usage = usage_dict(field_value(message, "usage"))
        return JudgeResponse(
            text=text,
            usage=usage_from_anthropic(raw_usage),
            raw_usage=raw_usage,
            latency_s=latency,
            model=str(field_value(message, "model") or self.model_id),
            stop_reason=field_value(message, "stop_reason"),
        )

    # -- Message Batches -------------------------------------------------------------------

    async def _batch_call(self, call: Awaitable[T], where: str) -> T:
        """Await one Message Batches call; an error that no retry can mend (a 404: no batch
        API, or another key's batch) becomes the run-stopping error that says so."""
        try:
            return await call
        except self.status_error as exc:
            fatal = self._batch_fatal(exc, where)
            if fatal is not None:
                raise fatal from exc
            raise

    def batch_entry(self, custom_id: str, request: JudgeRequest) -> bytes:
        """One batch request: the ``custom_id`` and the body a synchronous call would send."""
        entry = {"custom_id": custom_id, "params": self.request_body(request)}
        return json.dumps(entry, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    async def batch_submit(self, entries: Sequence[bytes]) -> SubmittedBatch:
        """Create a Message Batch holding the requests."""
        requests = [json.loads(entry) for entry in entries]
        batch = await self._batch_call(
            self._client.messages.batches.create(requests=requests), "/v1/messages/batches"
        )
        return SubmittedBatch(id=batch.id, status=batch.processing_status)

    async def batch_poll(self, batch_id: str) -> BatchPoll:
        """The batch's processing status; it has ended once every request has a result."""
        batch = await self._batch_call(
            self._client.messages.batches.retrieve(batch_id), f"/v1/messages/batches/{batch_id}"
        )
        counts = usage_dict(batch.request_counts)
        return BatchPoll(
            status=str(batch.processing_status),
            ended=batch.processing_status == "ended",
            counts={k: int(v) for k, v in counts.items() if isinstance(v, int)},
            info={"results_url": batch.results_url},
        )

    async def batch_results(
        self, batch_id: str, poll: BatchPoll, latency_s: float
    ) -> AsyncIterator[BatchItemResult]:
        """Each request's result: succeeded, errored, canceled or expired."""
        results = await self._batch_call(
            self._client.messages.batches.results(batch_id),
            f"/v1/messages/batches/{batch_id}/results",
        )
        async for line in results:
            yield self._batch_result(line, latency_s)

    def _batch_result(self, line: Any, latency_s: float) -> BatchItemResult:
        cid = str(getattr(line, "custom_id", "") or "")
        result = getattr(line, "result", None)
        kind = str(getattr(result, "type", "") or "unknown")
        if kind == "succeeded":
            try:
                answer = self._response(getattr(result, "message", None), latency_s)
            except MalformedResponseError as exc:
                return BatchItemResult(cid, None, str(exc), True, "MalformedResponseError")
            answer.batch = True
            return BatchItemResult(cid, answer)
        if kind == "errored":
            outer = getattr(result, "error", None)
            inner = getattr(outer, "error", None)
            error_type = str(getattr(inner, "type", "") or "error")
            message = getattr(inner, "message", None) or "request failed"
            retryable = error_type in BATCH_RETRYABLE_ERRORS
            return BatchItemResult(
                cid, None, one_line(f"{error_type}: {message}"), retryable, error_type
            )
        # canceled and expired requests were never run: another batch may run them.
        return BatchItemResult(cid, None, f"the request was {kind}", True, kind)


def _tool_answer(blocks: list[Any]) -> str | None:
    """The input of the answer's tool call (a structured answer), as JSON text; None when the
    answer calls no such tool."""
    for block in blocks:
        if field_value(block, "type") == "tool_use" and field_value(block, "name") == ANSWER_NAME:
            given = field_value(block, "input")
            return json.dumps(given, ensure_ascii=False) if isinstance(given, dict) else None
    return None


def _image_block(image: EncodedImage, redact: bool) -> dict[str, Any]:
    """An image's content block: by URL when passed through, else its base64 data."""
    source: dict[str, Any]
    if image.encoding == "url":
        url = image_marker(image) if redact else image.data
        source = {"type": "url", "url": url}
    else:
        media_type, data = image_base64(image)
        payload = image_marker(image) if redact else data
        source = {"type": "base64", "media_type": media_type, "data": payload}
    return {"type": "image", "source": source}


def _content(request: JudgeRequest, redact: bool) -> list[dict[str, Any]]:
    """The user message's blocks. Without a cache mark: the images, then the prompt (where
    the request places its images, each where placed). With one (Anthropic's prompt caching),
    the marked part comes first as its own text block with a ``cache_control`` breakpoint at
    its end, then the same blocks for the rest of the prompt: the images stand after the part
    every item shares, so the cache can keep it."""
    head = _cached_head(request)
    blocks = [] if head is None else [head]
    split = 0 if head is None else len(head["text"])
    rest = request.prompt[split:]
    if request.image_places:
        # Each image where the prompt places it (several results, each with its own).
        after = dataclasses.replace(
            request, prompt=rest, image_places=tuple(p - split for p in request.image_places)
        )
        blocks.extend(
            {"type": "text", "text": part} if isinstance(part, str) else _image_block(part, redact)
            for part in placed_images(after)
        )
        return blocks
    blocks.extend(_image_block(image, redact) for image in request.images)
    if rest:
        blocks.append({"type": "text", "text": rest})
    return blocks


def _cached_head(request: JudgeRequest) -> dict[str, Any] | None:
    """The text block of the part the request marks for the cache, breakpoint included; None
    without a mark, or where the part is not a leading part of the text shown before any
    image."""
    mark = request.cache_mark
    if mark is None or not 0 < mark.prefix_chars < len(request.prompt):
        return None
    if request.image_places and request.image_places[0] < mark.prefix_chars:
        return None
    control: dict[str, str] = {"type": "ephemeral"}
    if mark.ttl != "5m":  # Anthropic's default lifetime goes unsaid
        control["ttl"] = mark.ttl
    return {"type": "text", "text": request.prompt[: mark.prefix_chars], "cache_control": control}


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
        cache_write_1h_tokens=count(raw, "cache_creation", "ephemeral_1h_input_tokens"),
        reasoning_tokens=count(raw, "output_tokens_details", "thinking_tokens"),
    )
