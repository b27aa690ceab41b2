"""The distilled judge: a small cross-encoder trained by ``mmjudge distill`` on grades a team
already has, run like any other local judge.

``model=distilled model.options.path=DIR`` names the folder ``mmjudge distill --out DIR``
wrote (:mod:`mmjudge.judges.distilled_folder`): the model scores each (query, result text)
pair from 0 to 1, and the cut points stored beside it turn the score into a grade on the scale
it was trained on. A dataset with another scale is refused before anything runs. It reads text
only; a cell of modality ``mm`` or ``image`` is refused in one line.

Options (``model.options``):

- ``path``: the distilled judge's folder (absolute, or relative to the working folder).
- ``device``: ``cpu``, ``cuda``…; by default sentence-transformers picks one.
- ``batch_size``: most requests scored together (default 32).
- ``usd_per_million``: what a million of its judgments cost, for the ledger, the forecast and
  the report's chart (default: free).

It needs the ``local`` extra. Requests that arrive while a batch is being scored are gathered
into the next one, as for the embedding judges; answers are not cached, and free unless
``usd_per_million`` prices them. The summary's ``grading`` block records the cut points with
the judge's provenance (what it was trained on, by whom, and its held-out κ); the items it was
trained on are listed in the folder's manifest
(:attr:`~mmjudge.judges.distilled_folder.DistilledManifest.trained_items`).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, FatalProviderError
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.batched_calls import Batcher
from mmjudge.judges.cut_points import CutPoints, grade_for
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.distilled_folder import (
    MANIFEST,
    DistilledManifest,
    Training,
    model_path,
    read_manifest,
)
from mmjudge.judges.options import JudgeOptions
from mmjudge.locations import resolve_path
from mmjudge.records import JudgeRequest, JudgeResponse, Usage

#: Said in the explanation of every grade of an item the judge was trained on.
TRAINED_NOTE = "It was trained on this item: its grade is not a held-out one."


@dataclass(frozen=True)
class DistilledOptions(JudgeOptions):
    """``model.options`` of a distilled judge (see the module's docstring for each)."""

    family: ClassVar[str] = "distilled"
    path: str | None = None
    """The folder ``mmjudge distill --out`` wrote."""
    device: str | None = None
    """``cpu``, ``cuda``…; by default sentence-transformers picks one."""
    batch_size: float = 32
    """Most requests scored together."""
    usd_per_million: float | None = None
    """What a million of its judgments cost (the machine it runs on, as you reckon it); None:
    free."""


def load_cross_encoder(folder: str | Path, device: str | None = None) -> Any:
    """The cross-encoder saved in a distilled judge's folder (blocking)."""
    from sentence_transformers import CrossEncoder

    kwargs: dict[str, Any] = {"device": device} if device else {}
    return CrossEncoder(str(model_path(folder)), num_labels=1, **kwargs)


def pair_scores(model: Any, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> list[float]:
    """Scores from 0 to 1 for (query, result text) pairs: the one way a distilled model's
    output is read, in training's measurements and in the judge alike."""
    if not pairs:
        return []
    # One output: the cross-encoder's default activation is the sigmoid, in every version.
    raw = model.predict(
        [list(pair) for pair in pairs],
        batch_size=batch_size,
        show_progress_bar=False,
        convert_to_numpy=True,
    )
    return [float(value) for value in raw.reshape(-1).tolist()]


def folder_of(model: ModelConfig, path: str | None) -> Path:
    """``model.options.path`` resolved; one line when it is unset."""
    if not path:
        raise ConfigError(
            f"model '{model.name}' needs model.options.path: the folder `mmjudge distill "
            "--out DIR` wrote"
        )
    return resolve_path(path)


class DistilledJudge(JudgeAPI):
    """Grades (query, result text) pairs with a cross-encoder trained by ``mmjudge distill``."""

    descriptors = (
        JudgeDescriptor(
            "distilled",
            free=True,
            needs=("sentence_transformers",),
            extra="local",
            packages=("sentence-transformers",),
        ),
    )
    supports_images = False
    modalities: tuple[str, ...] = ("text",)
    cacheable = False
    Options = DistilledOptions
    options: DistilledOptions

    def __init__(self, model: ModelConfig) -> None:
        super().__init__(model)
        self.name = model.name
        if model.supports_images:
            raise ConfigError(
                f"model '{model.name}' is a distilled judge, which reads text only; set "
                "model.supports_images=false"
            )
        self.folder = folder_of(model, self.options.path)
        self.manifest: DistilledManifest = read_manifest(self.folder)
        batch_size = self.options.batch_size
        if batch_size < 1 or batch_size != int(batch_size):
            raise ConfigError(
                f"model.options.batch_size={batch_size} for '{model.name}' must be a whole "
                "number of at least 1"
            )
        self.batch_size = int(batch_size)
        self.device = self.options.device
        self._model: Any = None
        self._lock = threading.RLock()
        self._loading: asyncio.Task[Any] | None = None
        self._batcher: Batcher[JudgeRequest, float] = Batcher(self._scores, self.batch_size)

    @classmethod
    def refusal(cls, model: ModelConfig, modality: str, include_image: bool) -> str | None:
        if modality != "text":
            return (
                f"judge '{model.name}' (distilled) reads text only and cannot judge modality "
                f"'{modality}': run it with modality=text"
            )
        return super().refusal(model, modality, include_image)

    @classmethod
    def usd_per_million_judgments(cls, model: ModelConfig) -> float | None:
        """``model.options.usd_per_million``, checked: a number of at least 0."""
        price = DistilledOptions.parse(model).usd_per_million
        if price is not None and not 0 <= price < math.inf:
            raise ConfigError(
                f"model.options.usd_per_million={price:g} for '{model.name}' must be a number "
                "of at least 0 (dollars per million judgments; leave it unset for free)"
            )
        return price

    @classmethod
    def usage_per_call(cls, model: ModelConfig) -> Usage | None:
        """No tokens: a judgment costs its price per judgment alone."""
        return Usage()

    @property
    def calls_to_fill(self) -> int | None:
        """Two batches: one scored while the next fills."""
        return 2 * self.batch_size

    def describe(self) -> str:
        return f"distilled judge '{self.name}' ({self.folder}): {self.manifest.provenance()}"

    def check_scale(self, grades: list[int]) -> dict[str, CutPoints]:
        trained = [int(g) for g in self.manifest.grades]
        if sorted(int(g) for g in grades) != trained:
            raise ConfigError(
                f"model '{self.name}' was trained on grades {trained} ({self.folder / MANIFEST}) "
                f"but the dataset's scale is {sorted(grades)}; distil a judge on this dataset's "
                "scale"
            )
        source = f"{self.folder / MANIFEST}: {self.manifest.provenance()}"
        return {"text": CutPoints(list(self.manifest.cut_points), source)}

    def training(self) -> Training:
        """Its folder and manifest: the run records them and leaves the items it learnt out of
        its agreement figures."""
        return Training(self.folder, self.manifest)

    def load(self) -> Any:
        """The cross-encoder, loaded once (blocking; thread-safe)."""
        with self._lock:
            if self._model is None:
                try:
                    self._model = load_cross_encoder(self.folder, self.device)
                except Exception as error:
                    raise FatalProviderError(
                        f"could not load the distilled model in {model_path(self.folder)} for "
                        f"'{self.name}' ({type(error).__name__}: {error}); train it again with "
                        "`mmjudge distill`"
                    ) from error
            return self._model

    def _scores(self, requests: Sequence[JudgeRequest]) -> list[float]:
        pairs = [(r.query, "\n".join(v for _, v in r.fields)) for r in requests]
        with self._lock:
            return pair_scores(self.load(), pairs, self.batch_size)

    def grade(self, score: float, grades: Sequence[int]) -> int:
        """The grade a score earns under the stored cut points."""
        return grade_for(score, self.manifest.cut_points, grades)

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        started = time.perf_counter()
        if request.images:
            raise ConfigError(f"'{self.name}' is a distilled judge and reads text only")
        if self._model is None:
            before = time.perf_counter()
            loop = asyncio.get_running_loop()
            if self._loading is None or self._loading.get_loop() is not loop:
                self._loading = loop.create_task(asyncio.to_thread(self.load))
            await asyncio.shield(self._loading)
            started += time.perf_counter() - before  # the one-off load is not this call's
        score = await self._batcher.submit(request)
        grade = self.grade(score, request.grades)
        seen = request.item_key in self.manifest.trained_item_set
        note = f" {TRAINED_NOTE}" if seen else ""
        return JudgeResponse(
            text=f"{grade}\nThe distilled model scores the pair {score:.3f}.{note}",
            latency_s=time.perf_counter() - started,
            model=self.name,
            stop_reason="stop",
        )
