"""Structured configs: one dataclass per config group, registered in Hydra's ConfigStore.

The primary config is typed by :class:`SweepConfig`, so a misspelt key in any group file or on
the command line fails at compose time, and an unknown group option lists the valid choices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING


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
    """Maximum output tokens per judgment."""
    base_url: str | None = None
    """Endpoint override (an OpenAI-compatible server, a proxy, a loopback test server)."""
    api_key_env: str | None = None
    """Name of the environment variable that holds the API key (never the key itself)."""
    image_detail: str = "low"
    """OpenAI ``detail`` sent with every image: ``low``, ``high`` or ``auto``."""
    image_transport: str = "base64"
    """``base64`` sends image bytes; ``url`` passes dataset URLs through when there are any."""
    price_key: str | None = None
    """Key into the price sheet; defaults to ``model_id``."""
    context_tokens: int = 128000
    """Context window, used to truncate over-long documents."""
    thresholds: list[float] = field(default_factory=list)
    """Local judges: score thresholds mapping a similarity to grades 1, 2, ..."""
    options: dict[str, Any] = field(default_factory=dict)
    """Provider-specific extras (e.g. ``reasoning_effort``, local model paths)."""
    max_concurrency: int = 16
    """Open connections to this model at once."""
    requests_per_minute: float | None = None
    """Request rate limit; null for none."""
    tokens_per_minute: float | None = None
    """Token rate limit (input + output); null for none."""


@dataclass
class ModalityConfig:
    """What the judge is shown: result text, image, or both."""

    name: str = MISSING
    """``text``, ``mm`` (image + text) or ``image``."""
    include_text: bool = True
    """Show the result's text fields."""
    include_image: bool = False
    """Show the result's image(s)."""


@dataclass
class ScaleConfig:
    """A label scale and what each grade means."""

    grades: list[int] = field(default_factory=lambda: [0, 1, 2])
    """The grades, in increasing relevance."""
    meanings: dict[int, str] = field(default_factory=dict)
    """A definition per grade, shown to the judge and in the report."""
    relevant_from: int = 1
    """Binarisation: grades at or above this count as relevant."""


@dataclass
class DatasetConfig:
    """A dataset: where it lives, how to read it, and its label scale."""

    name: str = MISSING
    """Short name used in results and reports."""
    loader: str = "jsonl"
    """Loader: ``jsonl`` (mmjudge's canonical format), ``hm``, ``flickr8k_expert``, ``trec``
    or ``table`` (any CSV / JSONL with a column mapping)."""
    path: str = MISSING
    """Dataset root, relative to the project root or absolute."""
    items: str = "items.jsonl"
    """The items file, relative to the dataset root (the table for ``table``, the articles
    CSV for ``hm``, the documents JSONL for ``trec``)."""
    labels_file: str | None = None
    """Label file (H&M: query, article id, grades; TREC: qrels), relative to the dataset root
    or absolute."""
    queries_file: str | None = None
    """TREC queries file (``query_id<TAB>text``)."""
    runs: list[str] = field(default_factory=list)
    """TREC run files for system-ranking agreement."""
    text_fields: list[str] = field(default_factory=list)
    """Result fields shown to the judge, in order (loaders have their own defaults)."""
    columns: dict[str, Any] = field(default_factory=dict)
    """Loader options. ``table``: which column holds ``query``, ``query_id``, ``result_id``,
    ``text_fields``, ``image``, ``annotators`` (annotator name -> grade column), ``grade_map``,
    ``delimiter``. ``flickr8k_expert``: ``skip_missing_images``, ``image_dir``. ``trec``:
    ``doc_id`` (the documents' id key)."""
    encoding: str = "utf-8"
    """Text encoding of the dataset's files."""
    max_text_tokens: int | None = None
    """Truncate a result's text to this many tokens (recorded on the row)."""
    description: str = ""
    """One sentence on what the results are, shown to the judge when the prompt asks for it."""
    guidelines: str = ""
    """Optional grading guidelines specific to this domain."""
    scale: ScaleConfig = field(default_factory=ScaleConfig)
    """The label scale."""
    annotators: list[str] = field(default_factory=list)
    """Expected annotator names; an empty list accepts any."""
    max_images: int = 1
    """Images shown per result."""
    limit: int | None = None
    """Use only the first N items (for quick trials)."""


@dataclass
class PromptConfig:
    """Which prompt design to render."""

    id: str = "default"
    """Identifier of the prompt variant, kept on every record."""
    template: str = "judge"
    """Template family under ``mmjudge/prompts/``."""
    role: bool = True
    """Open with a statement of the judge's role."""
    strictness_note: bool = True
    """Tell the judge the middle grade is for partial matches and to use it sparingly."""
    explanation: bool = True
    """Ask for a one- or two-sentence explanation after the grade."""
    guidelines: bool = False
    """Insert the dataset's grading guidelines."""
    aspects: bool = False
    """Ask for aspect grades (match to the intent, trustworthiness of the listing) before an
    ``overall:`` grade; only the overall grade is read as the label."""
    raters: int = 1
    """Above 1: the judge imagines this many independent raters, writes a grade for each,
    then a ``final:`` grade; only the final grade is read as the label."""
    confidence: bool = False
    """Ask for a stated confidence (``confidence: 1``–``5``) after the grade; cascades can
    escalate on it."""
    paraphrase: int = 0
    """Which wording of the same design to use (0 is the standard wording); measures how
    much agreement moves with wording alone."""


@dataclass
class ImageConfig:
    """How images are preprocessed before they are sent."""

    size: int = 512
    """Target width and height in pixels."""
    fit: str = "pad"
    """``pad`` letterboxes, ``crop`` centre-crops, ``stretch`` ignores aspect ratio."""
    format: str = "jpeg"
    """``jpeg`` or ``png``."""
    quality: int = 90
    """JPEG quality."""
    encoding: str = "data_url"
    """``data_url``, ``base64`` or ``url`` (pass URLs through)."""
    cache_dir: str = ".cache/images"
    """Encoded images are cached here by (source hash, settings); relative to the project root."""


@dataclass
class RunnerConfig:
    """How calls are scheduled."""

    concurrency: int = 16
    """Calls in flight at once (further limited per model)."""
    timeout_s: float = 60.0
    """Per-call timeout."""
    max_retries: int = 5
    """Attempts after the first for retryable errors."""
    backoff_base_s: float = 1.0
    """First backoff; doubles each retry, with jitter."""
    backoff_max_s: float = 60.0
    """Longest backoff between attempts."""
    cache: bool = True
    """Reuse identical earlier answers from the response cache."""
    cache_path: str = ".cache/responses.sqlite"
    """Response cache file, relative to the project root."""
    dry_run: bool = False
    """Forecast calls, tokens and dollars without calling anything."""
    max_cost_usd: float | None = None
    """Stop scheduling calls before this spend would be passed."""
    mode: str = "sync"
    """``sync`` calls the API directly; ``batch`` uses the provider's batch API (half price,
    results within 24 hours)."""
    batch_poll_s: float = 30.0
    """Seconds between polls of a submitted batch."""
    batch_failed: str = "batch"
    """Items a batch returned as failed are retried in a follow-up ``batch`` or ``sync``."""
    batch_max_requests: int | None = None
    """Split batches above this many requests (default: the provider's limit)."""
    batch_max_bytes: int | None = None
    """Split batches above this size in bytes (default: the provider's limit)."""
    forecast_output_tokens: int = 40
    """Output tokens per call assumed by forecasts (a grade and a short explanation)."""
    progress: bool = True
    """Show a progress bar on stderr."""
    seed: int = 0
    """Seed for anything random (bootstrap, tie-breaks)."""
    report: bool = True
    """Build the report when the run or sweep ends."""
    max_error_rate: float = 0.1
    """A cell whose share of failed judgments is above this (or in which every judgment
    failed) ends ``failed``; with fewer failures it ends ``partial``."""
    breaker_failures: int = 10
    """Failed calls of one kind in a row (connection refused, DNS, TLS, 5xx, timeouts), with
    no success in between, that stop a cell: its endpoint cannot work."""
    grace_s: float = 5.0
    """After Ctrl-C or SIGTERM, seconds to wait for answers already in flight."""
    claim_ttl_s: float = 30.0
    """Seconds a claim on an item lasts unless its owner renews it; a killed owner's items
    are taken over after this (at once when it ran on this host)."""


@dataclass
class PricingConfig:
    """A dated price sheet (USD per million tokens)."""

    date: str = MISSING
    """Effective date of the sheet."""
    currency: str = "USD"
    sources: list[str] = field(default_factory=list)
    """Where the figures come from."""
    batch_discount: float = 0.5
    """Fraction of the price paid for batch calls."""
    models: dict[str, Any] = field(default_factory=dict)
    """Per model id: ``input``, ``output``, optional ``cached_input``, ``cache_write``,
    ``cache_read``, ``batch_discount``, long-context ``tiers`` and the ``image_rule``; or, for a
    self-hosted judge, ``gpu_hour``, ``gpus``, a throughput (``throughput_tokens_per_s`` or
    ``input_tokens_per_s`` / ``output_tokens_per_s``) and ``utilization`` (see
    :mod:`mmjudge.ledger`)."""


@dataclass
class SweepConfig:
    """The primary config: one cell of a sweep."""

    model: ModelConfig = MISSING
    modality: ModalityConfig = MISSING
    dataset: DatasetConfig = MISSING
    prompt: PromptConfig = MISSING
    pricing: PricingConfig = MISSING
    runner: RunnerConfig = MISSING
    images: ImageConfig = field(default_factory=ImageConfig)
    results_dir: str = "results"
    """Where runs are written, relative to the project root or absolute."""
    reports_dir: str = "reports"
    """Where reports are written, relative to the project root or absolute."""


def register_configs() -> None:
    """Register the schema of the primary config; group files are validated against it."""
    store = ConfigStore.instance()
    store.store(name="sweep_schema", node=SweepConfig)
