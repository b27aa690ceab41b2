"""Structured configs: one dataclass per config group, registered in Hydra's ConfigStore.

The primary config is typed by :class:`SweepConfig`, so a misspelt key in any group file or on
the command line fails at compose time, and an unknown group option lists the valid choices.
Values are checked by each dataclass's ``validate()``; :meth:`SweepConfig.validate` runs them
all once, where the typed config is built, before anything runs.
"""

from __future__ import annotations

import codecs
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from mmjudge.config_values import _check_whole, _finite, _require
from mmjudge.errors import ConfigError
from mmjudge.images import ImageSettings  # the image rules live with the preprocessor

#: Wordings shipped with the prompt templates (``mmjudge/prompts/_wording<N>.j2``).
N_WORDINGS = len(list((Path(__file__).parent / "prompts").glob("_wording*.j2")))

#: How raw grades are placed on the scale (see :mod:`mmjudge.data.grades`).
GRADE_RULES = ("exact", "round", "floor", "ceil", "bins")

#: ``dataset.max_text_tokens`` unless a dataset says otherwise: enough for a long product page
#: or a passage, and a bound on what one runaway field can cost.
DEFAULT_MAX_TEXT_TOKENS = 2000


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
    none, so ``runner.concurrency`` decides (see :mod:`mmjudge.running.concurrency`)."""
    requests_per_minute: float | None = None
    """Request rate limit; null for none."""
    tokens_per_minute: float | None = None
    """Token rate limit (input + output); null for none."""

    def validate(self) -> None:
        _check_whole("model.max_concurrency", self.max_concurrency, 1, "for no limit of its own")
        _check_whole("model.max_tokens", self.max_tokens, 0)
        _check_whole("model.context_tokens", self.context_tokens, 1)
        if self.temperature is not None:
            _require(
                _finite(self.temperature) and 0 <= self.temperature <= 2,
                "model.temperature",
                self.temperature,
                "use a number from 0 to 2, or null for the model's default",
            )
        for name in ("requests_per_minute", "tokens_per_minute"):
            value = getattr(self, name)
            if value is not None:
                _require(
                    _finite(value) and value > 0,
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
        _require(
            self.include_text or self.include_image,
            "modality.include_text",
            self.include_text,
            "a modality shows the result's text, its image or both (modality.include_image is "
            "false too)",
        )


@dataclass
class ScaleConfig:
    """A label scale and what each grade means."""

    grades: list[int] = field(default_factory=lambda: [0, 1, 2])
    """The grades, in increasing relevance."""
    meanings: dict[int, str] = field(default_factory=dict)
    """A definition per grade, shown to the judge and in the report."""
    relevant_from: int = 1
    """Binarisation: grades at or above this count as relevant."""

    def validate(self) -> None:
        grades = list(self.grades)
        _require(
            len(grades) >= 2,
            "dataset.scale.grades",
            grades,
            "list at least two grades, in increasing relevance, e.g. [0, 1, 2]",
        )
        repeated = sorted({g for g in grades if grades.count(g) > 1})
        _require(
            not repeated,
            "dataset.scale.grades",
            grades,
            f"grade {', '.join(map(str, repeated))} is listed more than once",
        )
        _require(
            grades == sorted(grades),
            "dataset.scale.grades",
            grades,
            "list the grades in increasing relevance, e.g. [0, 1, 2]",
        )
        _require(
            self.relevant_from in grades[1:],
            "dataset.scale.relevant_from",
            self.relevant_from,
            f"use one of the grades above the lowest: {', '.join(map(str, grades[1:]))}",
        )
        strangers = [str(k) for k in self.meanings if k not in grades]
        _require(
            not strangers,
            "dataset.scale.meanings",
            dict(self.meanings),
            f"grade(s) {', '.join(strangers)} are not on the scale {grades}",
        )


@dataclass
class TestBanksConfig:
    """A dataset's test bank file per kind, relative to the dataset root or absolute; null
    reads ``testbanks/<dataset>/<kind>.jsonl`` under the project root."""

    nuggets: str | None = None
    """Nuggets: facts or attributes a relevant result has."""
    questions: str | None = None
    """Questions a relevant result answers."""


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
    """Text encoding of the dataset's files (a UTF-8 byte-order mark is accepted)."""
    max_text_tokens: int | None = DEFAULT_MAX_TEXT_TOKENS
    """Cut a result's text to about this many tokens (the row is flagged ``truncated``);
    null for no cap."""
    html_to_text: bool = False
    """Convert HTML in every text field to plain text before it is cut and shown."""
    html_fields: list[str] = field(default_factory=list)
    """Convert HTML to plain text in these text fields only."""
    grade_rule: str = "exact"
    """How raw grades are placed on the scale: ``exact`` (whole numbers only), ``round``
    (halves up), ``floor``, ``ceil`` or ``bins`` (see ``grade_bins``); for labels that are
    the mean of several raters."""
    grade_bins: list[float] = field(default_factory=list)
    """With ``grade_rule: bins``: one more edge than the scale has grades; a value in
    ``[edge_i, edge_i+1)`` gets the i-th grade, the last bin includes its upper edge."""
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
    sample_queries: int | None = None
    """Use every item of N queries drawn at random (seeded by ``seed``)."""
    testbanks: TestBanksConfig = field(default_factory=lambda: TestBanksConfig())
    """Test bank files (see :class:`TestBanksConfig`)."""

    def validate(self) -> None:
        self.scale.validate()
        _check_whole("dataset.limit", self.limit, 1, "for every item")
        _check_whole("dataset.sample_queries", self.sample_queries, 1, "for every query")
        _check_whole("dataset.max_images", self.max_images, 0)
        _check_whole("dataset.max_text_tokens", self.max_text_tokens, 1, "for no cap")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            _require(False, "dataset.encoding", self.encoding, "use e.g. utf-8, latin-1, cp1252")
        _require(
            not (self.html_to_text and self.html_fields),
            "dataset.html_fields",
            list(self.html_fields),
            "dataset.html_to_text=true already converts every field; give one or the other",
        )
        self.check_grade_rule()

    def check_grade_rule(self) -> None:
        """``grade_rule`` and ``grade_bins`` (also checked by the loaders' grade reader)."""
        _require(
            self.grade_rule in GRADE_RULES,
            "dataset.grade_rule",
            self.grade_rule,
            f"use one of {', '.join(GRADE_RULES)}",
        )
        edges = list(self.grade_bins)
        if self.grade_rule != "bins":
            _require(not edges, "dataset.grade_bins", edges, "it needs dataset.grade_rule=bins")
            return
        n = len(self.scale.grades) + 1
        _require(
            len(edges) == n and all(map(_finite, edges)),
            "dataset.grade_bins",
            edges,
            f"give {n} edges, one more than the scale's {n - 1} grades (for grades 1-3 of "
            "averaged ratings, e.g. [1, 1.5, 2.5, 3])",
        )
        _require(
            all(a < b for a, b in itertools.pairwise(edges)),
            "dataset.grade_bins",
            edges,
            "the edges must increase from one to the next",
        )


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
    bank: str | None = None
    """``nuggets`` or ``questions``: grade each result against the dataset's test bank of
    that kind instead of asking for a grade directly (see :mod:`mmjudge.testbank`)."""
    bank_calls: str = "item"
    """``item``: one call per result with the whole bank of its query; ``entry``: one call
    per (result, entry)."""
    spans: bool = False
    """Test-bank grading: ask the judge to quote the supporting text (or the answer)."""
    rule: str = "coverage"
    """How entry grades (0-5) become the dataset's grade: ``coverage`` (the share of
    entries graded at least ``covered_from``) or ``best`` (the best entry grade)."""
    covered_from: int = 4
    """The entry grade from which an entry counts as covered (0-5)."""
    cuts: list[float] = field(default_factory=list)
    """Cut points for ``rule``, one per grade above the lowest: shares covered (0-1) for
    ``coverage``, entry grades (0-5) for ``best``; empty spreads them evenly."""

    def validate(self) -> None:
        """Fail with a one-line fix when the prompt asks for something not shipped (the
        test-bank settings are checked by :func:`mmjudge.testbank.derive.check_bank_prompt`,
        which :func:`mmjudge.running.cell.typed_config` calls)."""
        if not 0 <= self.paraphrase < N_WORDINGS:
            raise ConfigError(
                f"prompt.paraphrase={self.paraphrase} is not a shipped wording; "
                f"use 0 to {N_WORDINGS - 1}"
            )
        if self.raters < 1:
            raise ConfigError(f"prompt.raters={self.raters}: use 1 (one grade) or more")


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

    def validate(self) -> None:
        try:
            ImageSettings.from_config(self)
        except ValueError as error:
            raise ConfigError(str(error)) from None


@dataclass
class RunnerConfig:
    """How calls are scheduled."""

    concurrency: int | None = None
    """Calls in flight at once; null: the model's ``max_concurrency``, or 16 when that is unset
    too. A model limit that is set caps it (see :mod:`mmjudge.running.concurrency`)."""
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
    forecast_output_tokens: int | None = None
    """Output tokens per call assumed by forecasts; null: learnt from this cell's cached
    answers, else estimated from the prompt's answer format (see
    :mod:`mmjudge.costs.output_tokens`)."""
    progress: bool = True
    """Show a progress bar on stderr."""
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

    def validate(self) -> None:
        _check_whole("runner.concurrency", self.concurrency, 1, "for the default")
        _check_whole("runner.max_retries", self.max_retries, 0)
        for name, low, valid in (
            ("timeout_s", 0.0, "use a number of seconds above 0"),
            ("batch_poll_s", 0.0, "use a number of seconds above 0"),
        ):
            value = getattr(self, name)
            _require(_finite(value) and value > low, f"runner.{name}", value, valid)
        _require(
            _finite(self.backoff_base_s) and self.backoff_base_s >= 0,
            "runner.backoff_base_s",
            self.backoff_base_s,
            "use a number of seconds of at least 0",
        )
        _require(
            _finite(self.backoff_max_s) and self.backoff_max_s >= self.backoff_base_s,
            "runner.backoff_max_s",
            self.backoff_max_s,
            f"use a number of seconds of at least runner.backoff_base_s ({self.backoff_base_s})",
        )
        if self.max_cost_usd is not None:
            _require(
                _finite(self.max_cost_usd) and self.max_cost_usd >= 0,
                "runner.max_cost_usd",
                self.max_cost_usd,
                "use a dollar amount of at least 0, or null for no cap",
            )
        _check_whole("runner.batch_max_requests", self.batch_max_requests, 1, "for the default")
        _check_whole("runner.batch_max_bytes", self.batch_max_bytes, 1, "for the default")
        _check_whole("runner.forecast_output_tokens", self.forecast_output_tokens, 0, "to learn it")


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
    :mod:`mmjudge.costs`)."""

    def validate(self) -> None:
        _require(
            _finite(self.batch_discount) and 0 < self.batch_discount <= 1,
            "pricing.batch_discount",
            self.batch_discount,
            "use the fraction of the list price paid, above 0 and at most 1 (0.5 = half price)",
        )


@dataclass
class PathsConfig:
    """Every location mmjudge reads or writes (``conf/paths/``); relative paths are relative
    to the project root."""

    results: str = "results"
    """Where runs and sweeps are written."""
    reports: str = "reports"
    """Where reports are written."""
    response_cache: str = ".cache/responses.sqlite"
    """The response cache file."""
    image_cache: str = ".cache/images"
    """Encoded images, cached by (source hash, settings)."""


@dataclass
class ReportConfig:
    """The report built when a run or sweep ends (``conf/report/``)."""

    build: bool = True
    """Build it (``report.build=false`` leaves it to ``mmjudge report``)."""


@dataclass
class SweepConfig:
    """The primary config: one cell of a sweep."""

    model: ModelConfig = MISSING
    modality: ModalityConfig = MISSING
    dataset: DatasetConfig = MISSING
    prompt: PromptConfig = MISSING
    pricing: PricingConfig = MISSING
    runner: RunnerConfig = MISSING
    paths: PathsConfig = MISSING
    report: ReportConfig = MISSING
    images: ImageConfig = field(default_factory=ImageConfig)
    seed: int = 0
    """Seed for anything random (query samples, bootstrap, tie-breaks, backoff jitter)."""

    def validate(self) -> None:
        """Check every value that composing the config cannot check (ranges, choices)."""
        self.model.validate()
        self.modality.validate()
        self.dataset.validate()
        self.prompt.validate()
        self.pricing.validate()
        self.runner.validate()
        self.images.validate()


def register_configs() -> None:
    """Register the schema of the primary config; group files are validated against it."""
    store = ConfigStore.instance()
    store.store(name="sweep_schema", node=SweepConfig)
