"""The judge contract: one async ``generate``, one hook that classifies a failed call, the
capabilities a judge declares, its provider's facts (:mod:`mmjudge.judges.descriptor`), and the
small batch contract a judge with a batch API adds.

Everything generic (retries, connection limits, caching, cost, logging, batching state) lives
in :mod:`mmjudge.engine`, never inside a judge. A judge only turns a
:class:`~mmjudge.records.JudgeRequest` into a :class:`~mmjudge.records.JudgeResponse`, and
says what a failure means (:meth:`JudgeAPI.classify_error`).
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, FatalProviderError
from mmjudge.judges.cut_points import CutPoints
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.distilled_folder import Training
from mmjudge.judges.options import JudgeOptions
from mmjudge.records import JudgeRequest, JudgeResponse, Usage
from mmjudge.speed import Speed

MODALITIES = ("text", "mm", "image")


class ErrorVerdict(NamedTuple):
    """What a failed call means, decided by the judge in one place."""

    retryable: bool = False
    """Whether another attempt could succeed (rate limits, 5xx, dropped connections)."""
    retry_after: float | None = None
    """Seconds the server asked to wait before the next attempt, when it said."""
    fatal: FatalProviderError | None = None
    """The run-stopping error no retry can fix (bad key, unknown model, bad settings)."""


class JudgeAPI(abc.ABC):
    """A judge that grades one request at a time.

    Retries, connection limits, caching, cost and logging are the runner's job, never a
    judge's, so a judge only turns a :class:`JudgeRequest` into a :class:`JudgeResponse`.
    """

    #: The facts of each ``model.provider`` name the class serves, declared beside it; the
    #: registry finds the class by them, and every table of provider facts reads them.
    descriptors: ClassVar[tuple[JudgeDescriptor, ...]] = ()
    #: Whether the judge can look at images.
    supports_images: bool = False
    #: Modalities the judge accepts; a sweep cell outside them is skipped with a reason.
    modalities: tuple[str, ...] = ("text",)
    #: Whether answers are worth keeping in the response cache (not for free local judges).
    cacheable: bool = True
    #: The options the judge reads from ``model.options`` (:mod:`mmjudge.judges.options`).
    Options: ClassVar[type[JudgeOptions]] = JudgeOptions
    options: JudgeOptions

    def __init__(self, model: ModelConfig) -> None:
        self.model = model
        self.options = self.Options.parse(model)

    @classmethod
    def described(cls, provider: str) -> JudgeDescriptor:
        """The facts of ``provider``, one of the names this class serves."""
        for descriptor in cls.descriptors:
            if descriptor.provider == provider:
                return descriptor
        served = ", ".join(d.provider for d in cls.descriptors) or "none"
        raise ConfigError(
            f"model.provider='{provider}' is not served by {cls.__name__} (it serves: {served})"
        )

    @property
    def descriptor(self) -> JudgeDescriptor:
        """The facts of the provider this judge was made for (``model.provider``)."""
        return self.described(self.model.provider)

    @property
    def calls_to_fill(self) -> int | None:
        """Calls in flight this judge works best with when neither ``runner.concurrency`` nor
        ``model.max_concurrency`` says (a local judge that encodes in batches fills them);
        None: the runner's default."""
        return None

    @abc.abstractmethod
    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        """Grade one request."""

    def classify_error(self, error: Exception) -> ErrorVerdict:
        """What ``error``, raised by :meth:`generate` or a batch call, means: retry it (and
        after how long), stop the run, or record it on the item's row (the default)."""
        return ErrorVerdict()

    def check_scale(self, grades: list[int]) -> dict[str, CutPoints] | None:
        """Raise :class:`~mmjudge.errors.ConfigError` when the judge cannot grade on ``grades``.

        A judge that turns a score into grades itself (the local ones) returns how it does so
        on this scale (per modality: its cut points and where they came from), which goes into
        ``summary.json`` as ``grading``; a judge that is asked for the grade returns None.
        """
        return None

    @classmethod
    def refusal(cls, model: ModelConfig, modality: str, include_image: bool) -> str | None:
        """Why this judge cannot serve a cell, known from the config alone; None when it can."""
        if modality not in cls.modalities:
            return (
                f"judge '{model.name}' ({model.provider}) does not accept modality "
                f"'{modality}' (accepts: {', '.join(cls.modalities)})"
            )
        if include_image and not model.supports_images:
            return f"model '{model.name}' does not accept images (supports_images: false)"
        return None

    @classmethod
    def usage_per_call(cls, model: ModelConfig) -> Usage | None:
        """The usage every call of this judge reports, known from its config alone (a replay
        priced as a typical call of a sheet model); None when it is counted from each request,
        as for a provider's model. A forecast takes it as it is, so the forecast, the ledger
        and a race price such a judge alike."""
        return None

    @classmethod
    def usd_per_million_judgments(cls, model: ModelConfig) -> float | None:
        """What a free judge's config charges per million judgments (the distilled judge's
        ``model.options.usd_per_million``: the hardware it runs on, as its owner reckons it);
        None: priced by the sheet alone, nothing when the sheet has no entry. Read only by
        :func:`mmjudge.costs.sheets.price_for`, so the forecast, the ledger, a race and the
        report price such a judge alike."""
        return None

    @classmethod
    def api_key_env(cls, model: ModelConfig) -> str | None:
        """The environment variable this judge reads its API key from: ``model.api_key_env``,
        else its provider's own (:attr:`JudgeDescriptor.key_env`); None when it needs none (a
        free judge never does). Read by the sweep's check before its first call, so that a
        missing key is reported for every cell at once."""
        descriptor = cls.described(model.provider)
        if descriptor.free:
            return None
        return model.api_key_env or descriptor.key_env

    def use_speed(self, speed: Speed) -> None:
        """Told by the runner, before the first call, whether the run uses the speed machinery
        (:mod:`mmjudge.speed`); a judge with a fast path of its own takes it only when on."""
        return None

    def check_images(self, request: JudgeRequest) -> None:
        """Refuse a request with images for a judge configured not to see them."""
        if request.images and not self.supports_images:
            raise ConfigError(
                f"model '{self.model.name}' has supports_images=false but was given "
                f"{len(request.images)} image(s)"
            )

    def describe(self) -> str:
        return type(self).__name__

    def training(self) -> Training | None:
        """Where a judge trained on graded items comes from and which items it learnt
        (``mmjudge distill``'s folder); None for a judge that learnt none of a dataset's items.
        The run records it and leaves those items out of its agreement figures."""
        return None

    async def aclose(self) -> None:
        """Release connections; called once when the run ends."""
        return None


# --------------------------------------------------------------------------- batch contract


@dataclass(frozen=True)
class BatchLimits:
    """The most one batch may hold."""

    max_requests: int
    """Requests per batch."""
    max_bytes: int
    """Bytes of request lines per batch (the input file, or the create request's body)."""


@dataclass
class SubmittedBatch:
    """What the provider said when it accepted a batch."""

    id: str
    """The provider's batch id."""
    status: str
    """Its status right after creation."""
    info: dict[str, Any] = field(default_factory=dict)
    """Provider-specific ids worth keeping (OpenAI: the input file)."""


@dataclass
class BatchPoll:
    """One look at a submitted batch."""

    status: str
    """The provider's status word."""
    ended: bool
    """True once no item will change any more (completed, expired, cancelled, failed)."""
    counts: dict[str, int] = field(default_factory=dict)
    """The provider's request counts."""
    info: dict[str, Any] = field(default_factory=dict)
    """Provider-specific ids needed to read the results (OpenAI: output and error files)."""
    failure: str | None = None
    """Why the whole batch failed, when it did; items without a result get this message."""
    failure_retryable: bool = True
    """Whether items of a failed batch are worth submitting again."""


@dataclass
class BatchItemResult:
    """The result of one item of a batch."""

    custom_id: str
    """The id the item was submitted under."""
    response: JudgeResponse | None
    """The answer, or None when the item failed."""
    error: str | None = None
    """Why the item failed (one line)."""
    retryable: bool = False
    """Whether submitting the item again could succeed (expired, server error, rate limit)."""
    kind: str = ""
    """A short name for the failure, counted in the summary's ``errors_by_kind``."""


@runtime_checkable
class BatchJudge(Protocol):
    """What a judge implements to be used in batch mode."""

    batch_limits: BatchLimits

    def batch_entry(self, custom_id: str, request: JudgeRequest) -> bytes:
        """One request in the provider's batch format, JSON-encoded on one line."""
        ...

    async def batch_submit(self, entries: Sequence[bytes]) -> SubmittedBatch:
        """Create a batch from ``batch_entry`` lines."""
        ...

    async def batch_poll(self, batch_id: str) -> BatchPoll:
        """The batch's current status."""
        ...

    def batch_results(
        self, batch_id: str, poll: BatchPoll, latency_s: float
    ) -> AsyncIterator[BatchItemResult]:
        """The results of an ended batch, in whatever order the provider gives them."""
        ...


def check_batch_judge(judge: JudgeAPI, model: ModelConfig) -> None:
    """Raise :class:`ConfigError` when ``judge`` has no batch API."""
    if not isinstance(judge, BatchJudge):
        raise ConfigError(
            f"model '{model.name}' (provider {model.provider}) has no batch API in mmjudge; "
            "use runner.mode=sync"
        )
