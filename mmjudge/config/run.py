"""How a cell runs, what it is priced at, and where it writes: the ``runner``, ``pricing``,
``paths`` and ``report`` groups."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import MISSING, DictConfig

from mmjudge.config.values import check_whole, is_finite, require
from mmjudge.errors import ConfigError
from mmjudge.locations import resolve_path

#: ``runner.mode``: call the API directly, or through the provider's batch API.
MODES = ("sync", "batch")
#: ``runner.batch_failed``: where items a batch returned as failed are retried.
FAILED_MODES = ("batch", "sync")
#: ``runner.prompt_cache``: mark the prompt's static part for the provider's prompt cache
#: where the model has one and the part is long enough, or never.
PROMPT_CACHE_MODES = ("auto", "off")
#: ``runner.prompt_cache_ttl``: how long Anthropic keeps a cached prefix (a 1-hour write
#: costs more than a 5-minute one; a read costs the same).
PROMPT_CACHE_TTLS = ("5m", "1h")
#: The longest ``runner.timeout_s``: a call silent for an hour is a stalled connection, and a
#: larger number (``1e308``) would mean no timeout at all.
MAX_TIMEOUT_S = 3600.0


@dataclass
class RunnerConfig:
    """How calls are scheduled."""

    concurrency: int | None = None
    """Calls in flight at once; null: the model's ``max_concurrency``, or 16 when that is unset
    too. A model limit that is set caps it (see :mod:`mmjudge.engine.concurrency`)."""
    timeout_s: float = 60.0
    """Per-call timeout, at most :data:`MAX_TIMEOUT_S` (an hour)."""
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
    """The most the cell may cost in its run folder, over all its runs: no send (a first
    attempt or a retry) goes out that could pass it, counting what earlier runs in the folder
    paid, this run's answers, sends possibly billed without an answer (a killed run's
    included), and calls in flight, each send at its forecast or the dearest answer seen,
    whichever is more."""
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
    max_unparseable_rate: float = 0.02
    """Answers that hold no grade the prompt's format allows, up to this share of a cell's
    answers, leave it ``complete`` (real models miss the format in 0.1–1% of answers; the
    closing line counts them); with more it ends ``partial``, and ``failed`` when none can be
    read. Such answers are not retried: the same request gets the same answer."""
    breaker_failures: int = 10
    """Failed calls of one kind in a row (connection refused, DNS, TLS, 5xx, timeouts), with
    no success in between, that stop a cell: its endpoint cannot work."""
    rate_limit_wait_s: float | None = 300.0
    """Seconds of nothing but rate-limit answers (429) after which a cell stops ``failed``,
    naming the limit; null: retry for as long as the run lasts. Five minutes is several
    windows of the per-minute limits providers set, at the longest backoff (60 s): a limit
    still hit after that is a daily quota or a tier below the run's concurrency, which no
    retry within the run can outlast."""
    grace_s: float = 5.0
    """After Ctrl-C or SIGTERM, seconds to wait for answers already in flight."""
    claim_ttl_s: float = 30.0
    """Seconds a claim on an item lasts unless its owner renews it; a killed owner's items
    are taken over after this (at once when it ran on this host)."""
    samples: int = 1
    """Times each item is judged (test–retest): 1 judges it once; with more, the answers
    after the first go to ``samples.jsonl`` beside the run's rows, each sample its own entry
    in the response cache, and the summary measures how often the judge agrees with itself
    (:mod:`mmjudge.studies.stability`). In a batch (``runner.mode=batch``) each sample is
    a request of its own, with its own custom id, priced at the batch discount."""
    prompt_cache: str = "auto"
    """``auto``: the prompt's static part (instructions, scale, guidelines) is laid out first
    and offered to the provider's prompt cache where the model names a minimum cacheable
    length (``model.prompt_cache_min_tokens``) and the part reaches it; ``off``: requests
    carry no cache marks (OpenAI still caches long prefixes on its own)."""
    prompt_cache_ttl: str = "5m"
    """How long Anthropic keeps the cached part: ``5m`` (written at 1.25x the input price) or
    ``1h`` (at 2x; the sheet's ``cache_write_1h``), for batches that take longer than
    five minutes between calls sharing the part."""

    def validate(self) -> None:
        """Every ``runner`` setting's check, in one place: the run engine uses the values as
        they are."""
        for name, choices in (
            ("mode", MODES),
            ("batch_failed", FAILED_MODES),
            ("prompt_cache", PROMPT_CACHE_MODES),
            ("prompt_cache_ttl", PROMPT_CACHE_TTLS),
        ):
            value = getattr(self, name)
            require(value in choices, f"runner.{name}", value, f"use one of {', '.join(choices)}")
        for name, minimum, null in (
            ("concurrency", 1, "for the default"),
            ("max_retries", 0, ""),
            ("samples", 1, ""),
            ("batch_max_requests", 1, "for the default"),
            ("batch_max_bytes", 1, "for the default"),
            ("forecast_output_tokens", 0, "to learn it"),
            ("breaker_failures", 1, ""),
        ):
            check_whole(f"runner.{name}", getattr(self, name), minimum, null)
        self._check_seconds()
        self._check_stops()

    def _check_seconds(self) -> None:
        for name, above_zero in (
            ("timeout_s", True),
            ("batch_poll_s", True),
            ("claim_ttl_s", True),
            ("backoff_base_s", False),
            ("grace_s", False),
        ):
            value = getattr(self, name)
            ok = is_finite(value) and (value > 0 if above_zero else value >= 0)
            valid = "above 0" if above_zero else "of at least 0"
            require(ok, f"runner.{name}", value, f"use a number of seconds {valid}")
        require(
            self.timeout_s <= MAX_TIMEOUT_S,
            "runner.timeout_s",
            self.timeout_s,
            f"use a number of seconds above 0 and at most {MAX_TIMEOUT_S:g} (an hour)",
        )
        require(
            is_finite(self.backoff_max_s) and self.backoff_max_s >= self.backoff_base_s,
            "runner.backoff_max_s",
            self.backoff_max_s,
            f"use a number of seconds of at least runner.backoff_base_s ({self.backoff_base_s})",
        )
        if self.rate_limit_wait_s is not None:
            require(
                is_finite(self.rate_limit_wait_s) and self.rate_limit_wait_s > 0,
                "runner.rate_limit_wait_s",
                self.rate_limit_wait_s,
                "use a number of seconds above 0, or null to retry rate limits without end",
            )

    def _check_stops(self) -> None:
        if self.max_cost_usd is not None:
            require(
                is_finite(self.max_cost_usd) and self.max_cost_usd >= 0,
                "runner.max_cost_usd",
                self.max_cost_usd,
                "use a dollar amount of at least 0, or null for no cap",
            )
        for name, what in (
            ("max_error_rate", "failed judgments, above which a cell counts as failed"),
            ("max_unparseable_rate", "answers without a grade, above which a cell is partial"),
        ):
            value = getattr(self, name)
            require(
                is_finite(value) and 0 <= value <= 1,
                f"runner.{name}",
                value,
                f"use a share from 0 to 1 (of {what})",
            )


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
    ``cache_write_1h``, ``cache_read``, ``batch_discount``, long-context ``tiers`` and the
    ``image_rule``; or, for a self-hosted judge, ``gpu_hour``, ``gpus``, a throughput
    (``throughput_tokens_per_s`` or ``input_tokens_per_s`` / ``output_tokens_per_s``) and
    ``utilization`` (see :mod:`mmjudge.costs`)."""

    def validate(self) -> None:
        require(
            is_finite(self.batch_discount) and 0 < self.batch_discount <= 1,
            "pricing.batch_discount",
            self.batch_discount,
            "use the fraction of the list price paid, above 0 and at most 1 (0.5 = half price)",
        )


@dataclass
class PathsConfig:
    """Every location mmjudge reads or writes (the ``paths`` group); relative paths are
    relative to the folder the command runs in."""

    results: str = "results"
    """Where runs and sweeps are written."""
    reports: str = "reports"
    """Where reports are written."""
    response_cache: str = ".cache/responses.sqlite"
    """The response cache file."""
    image_cache: str = ".cache/images"
    """Encoded images, cached by (source hash, settings)."""
    prepared_cache: str = ".cache/prepared"
    """Datasets' prepared items (HTML converted, text cut), cached by (items file content,
    dataset settings, preparation version) and shared by every cell and process."""

    def validate(self) -> None:
        """Each location is a path on one line (an empty one would be the working folder)."""
        for name in ("results", "reports", "response_cache", "image_cache", "prepared_cache"):
            problem = place_problem(f"paths.{name}", getattr(self, name))
            if problem:
                raise ConfigError(problem)


@dataclass
class ReportConfig:
    """The report built when a run or sweep ends (``conf/report/``)."""

    build: bool = True
    """Build it (``report.build=false`` leaves it to ``mmjudge report``)."""
    slices: list[str] = field(default_factory=list)
    """Break every judge's κ, unparseable share and cost down by these slices: names the
    dataset maps to an item field (``dataset.slices``), ``query_length`` or ``has_image``."""
    human_cost_per_label: float | None = None
    """What one human label costs, in USD: the cards then price the labels they ask for and
    show how that money is best split between human and judge labels (unset: counts only)."""
    label_budget_usd: float | None = None
    """The budget, in USD, the cards' Label budget line splits between human and judge
    labels (needs ``human_cost_per_label``; unset: what the More labels line's labels cost)."""

    def validate(self) -> None:
        price = self.human_cost_per_label
        require(
            price is None or (is_finite(price) and price > 0),
            "report.human_cost_per_label",
            price,
            "give what one human label costs in USD, above 0 (null: leave the cards unpriced)",
        )
        budget = self.label_budget_usd
        require(
            budget is None or (is_finite(budget) and budget > 0),
            "report.label_budget_usd",
            budget,
            "give the label budget in USD, above 0 (null: what the labels the card asks for cost)",
        )


#: The ``paths`` settings, each a location mmjudge writes to.
PATHS = ("results", "reports", "response_cache", "image_cache", "prepared_cache")


def place_problem(setting: str, value: object) -> str | None:
    """Why a location given in ``setting`` cannot be used as written, in one line: it is
    empty (the working folder would take its place) or holds a newline or another control
    character; None when it can."""
    text = "" if value is None else str(value)
    if not text.strip():
        return (
            f"{setting} is empty; give a folder (a relative path is taken in the working "
            f"folder), or leave {setting} out for its default"
        )
    if any(ord(c) < 32 or c == "\x7f" for c in text):
        return f"{setting}={text!r} holds a newline or another control character; remove it"
    return None


def unwritable_problem(what: str, folder: Path, fix: str | None = None) -> str | None:
    """Why ``folder`` (``what`` names it: the setting that gives it) cannot be made or
    written, in one line ending with ``fix`` (by default: set that setting to a folder one
    can write to): the nearest part of it that exists is a file, or a folder this process may
    not write; None when it can (as far as can be told before writing)."""
    path = folder.expanduser().absolute()
    existing = next((p for p in (path, *path.parents) if p.exists() or p.is_symlink()), None)
    if existing is None:
        return None
    fix = fix or f"set {what} to a folder you can write to"
    if not existing.is_dir():
        return f"{what}: {folder} cannot be made, as {existing} is a file, not a folder; {fix}"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{what}: {folder} cannot be written ({existing} is not writable); {fix}"
    return None


def output_problem(config: DictConfig, *, multirun: bool) -> str | None:
    """Why the command cannot write where ``config`` (with its ``hydra`` node) says, checked
    before Hydra makes the run's (or the sweep's) folder: a location that is empty or holds
    a control character, a run or sweep folder, or a reports folder (when a report is to be
    built), that cannot be made or written. None when all can."""
    hydra_key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    for name in PATHS:
        problem = place_problem(f"paths.{name}", config.paths.get(name))
        if problem:
            return problem
    given = config.hydra.sweep.dir if multirun else config.hydra.run.dir
    problem = place_problem(hydra_key, given)
    if problem:
        return problem
    folder = Path(str(given)).expanduser().absolute()
    results = resolve_path(str(config.paths.results)).absolute()
    setting = "paths.results" if folder.is_relative_to(results) else hydra_key
    problem = unwritable_problem(setting, folder)
    if problem is None and config.report.build and not config.runner.dry_run:
        reports = resolve_path(str(config.paths.reports))
        fix = "set paths.reports to a folder you can write to, or report.build=false"
        problem = unwritable_problem("paths.reports", reports, fix)
    return problem
