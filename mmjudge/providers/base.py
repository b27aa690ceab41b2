"""The provider contract: one async ``generate``; everything generic lives in the runner."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from mmjudge.config import ModelConfig
from mmjudge.records import JudgeRequest, JudgeResponse

MODALITIES = ("text", "mm", "image")


class JudgeAPI(abc.ABC):
    """A judge that grades one request at a time.

    Retries, connection limits, caching, cost and logging are the runner's job, never a
    provider's, so a provider only turns a :class:`JudgeRequest` into a :class:`JudgeResponse`.
    """

    provider: ClassVar[str] = ""
    #: Whether the judge can look at images.
    supports_images: bool = False
    #: Modalities the judge accepts; a sweep cell outside them is skipped with a reason.
    modalities: tuple[str, ...] = ("text",)
    #: Whether answers are worth keeping in the response cache (not for free local judges).
    cacheable: bool = True

    def __init__(self, model: ModelConfig) -> None:
        self.model = model

    @abc.abstractmethod
    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        """Grade one request."""

    def is_retryable(self, error: Exception) -> bool:
        """Whether another attempt could succeed (rate limits, 5xx, timeouts)."""
        return False

    def retry_after(self, error: Exception) -> float | None:
        """Seconds the server asked us to wait before retrying, when it said."""
        return None

    def check_scale(self, grades: list[int]) -> dict[str, Any] | None:
        """Raise :class:`~mmjudge.errors.ConfigError` when the judge cannot grade on ``grades``.

        A judge that turns a score into grades itself (the local ones) returns how it does so
        on this scale (per modality: cut points and where they came from), which goes into
        ``summary.json`` as ``grading``; a judge that is asked for the grade returns None.
        """
        return None

    def describe(self) -> str:
        return type(self).__name__

    async def aclose(self) -> None:
        """Release connections; called once when the run ends."""
        return None
