"""What judges, and what it is shown: the ``model`` and ``modality`` groups."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from mmjudge.config.values import check_name, check_whole, is_finite, require

#: ``model.image_detail``: what OpenAI's API takes as an image's ``detail``.
IMAGE_DETAILS = ("low", "high", "auto")


@dataclass
class ModelConfig:
    """A judge: which provider serves it, which snapshot, and how to call it."""

    name: str = MISSING
    """Short name used in results and reports (``gpt4o``)."""
    provider: str = MISSING
    """``openai``, ``anthropic``, ``openai_compatible`` or a local judge (``lexical``...)."""
    model_id: str = MISSING
    """The provider's model name, pinned to a snapshot where one exists."""
    supports_images: bool = False
    """Whether the model can read images."""
    temperature: float | None = 0.0
    """Sampling temperature; null for models that only accept their default."""
    max_tokens: int = 200
    """Maximum output tokens per judgment: at least 1 for a paid judge, called over an API
    (checked with its provider's facts: :func:`mmjudge.judges.registry.check_model`); 0 for a
    free local judge, which writes no text; at most ``context_tokens``."""
    base_url: str | None = None
    """Endpoint override (an OpenAI-compatible server, a proxy, a loopback test server)."""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key (never the key itself)."""
    image_detail: str = "low"
    """OpenAI ``detail`` sent with every image: ``low``, ``high`` or ``auto``
    (:data:`IMAGE_DETAILS`)."""
    price_key: str | None = None
    """Key into the price sheet; defaults to ``model_id``."""
    context_tokens: int = 128000
    """Context window, used to truncate over-long documents."""
    thresholds: list[float] = field(default_factory=list)
    """Local judges: score thresholds mapping a similarity to grades 1, 2, ..."""
    options: dict[str, Any] = field(default_factory=dict)
    """Provider-specific extras (e.g. ``reasoning_effort``, local model paths)."""
    max_concurrency: int | None = None
    """The most calls this model takes at once (a provider's or server's own limit); null for
    none, so ``runner.concurrency`` decides (see :mod:`mmjudge.engine.concurrency`)."""
    requests_per_minute: float | None = None
    """Request rate limit; null for none."""
    tokens_per_minute: float | None = None
    """Token rate limit (input + output); null for none."""
    max_images_per_call: int | None = None
    """The most pictures one request to this model may carry, in place of the count its
    provider states (:attr:`~mmjudge.judges.descriptor.JudgeDescriptor.image_limits`): a
    vLLM server's ``--limit-mm-per-prompt``, or a model allowed more than its provider's
    general figure. A cell whose calls could carry more is skipped before any call, in one
    line naming what to change. Null: the provider's own count (none for a server that
    states none)."""
    prompt_cache_min_tokens: int | None = None
    """The shortest prefix the provider's prompt cache keeps for this model (OpenAI: 1,024;
    Anthropic: 1,024 to 4,096 by model); null: the model has no prompt cache that mmjudge
    arranges, so ``runner.prompt_cache=auto`` leaves its requests as they are."""

    def validate(self) -> None:
        check_name("model.name", self.name)
        check_name("model.model_id", self.model_id)
        check_whole("model.max_concurrency", self.max_concurrency, 1, "for no limit of its own")
        check_whole("model.context_tokens", self.context_tokens, 1)
        check_whole("model.max_tokens", self.max_tokens, 0)
        check_whole("model.prompt_cache_min_tokens", self.prompt_cache_min_tokens, 1, "for none")
        check_whole(
            "model.max_images_per_call",
            self.max_images_per_call,
            1,
            "for its provider's own limit",
        )
        require(
            self.max_tokens <= self.context_tokens,
            "model.max_tokens",
            self.max_tokens,
            "use a whole number of at most model.context_tokens "
            f"({self.context_tokens}): no answer is longer than the model's context window",
        )
        require(
            self.image_detail in IMAGE_DETAILS,
            "model.image_detail",
            self.image_detail,
            f"use one of {', '.join(IMAGE_DETAILS)}",
        )
        if self.temperature is not None:
            require(
                is_finite(self.temperature) and 0 <= self.temperature <= 2,
                "model.temperature",
                self.temperature,
                "use a number from 0 to 2, or null for the model's default",
            )
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None:
                require(
                    is_finite(value) and value > 0,
                    f"model.{name}",
                    value,
                    "use a number above 0, or null for no limit",
                )


@dataclass
class ModalityConfig:
    """What the judge is shown: result text, image, or both."""

    name: str = MISSING
    """``text``, ``mm`` (image + text) or ``image``."""
    include_text: bool = True
    """Show the result's text fields."""
    include_image: bool = False
    """Show the result's image(s)."""

    def validate(self) -> None:
        check_name("modality.name", self.name)
        require(
            self.include_text or self.include_image,
            "modality.include_text",
            self.include_text,
            "a modality shows the result's text, its image or both (modality.include_image is "
            "false too)",
        )
