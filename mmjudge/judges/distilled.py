"""The distilled judge: a small cross-encoder trained by ``mmjudge distill`` on grades a team
already has, run like any other local judge.

``model=distilled model.options.path=DIR`` names the folder ``mmjudge distill --out DIR``
wrote (:mod:`mmjudge.judges.distilled_folder`): the model scores each (query, result text)
pair from 0 to 1, and the cut points stored beside it turn the score into a grade on the scale
it was trained on. A dataset with another scale is refused before anything runs. It reads
text; a judge trained with a CLIP model (``mmjudge distill --image-model DIR``) also reads the
result's image in cells of modality ``mm`` when ``model.options.image_model`` names that CLIP
model (:mod:`mmjudge.judges.distilled_image`). Without one, a cell of modality ``mm`` is
refused in one line; ``image`` (no text for the cross-encoder) always is.

Options (``model.options``):

- ``path``: the distilled judge's folder (absolute, or relative to the working folder).
- ``device``: ``cpu``, ``cuda``…; by default sentence-transformers picks one.
- ``batch_size``: most requests scored together (default 32).
- ``usd_per_million``: what a million of its judgments cost, for the ledger, the forecast and
  the report's chart (default: free).
- ``image_model``: the CLIP model folder the judge was trained with (``--image-model``); it
  must be the same checkpoint (its fingerprint is in the manifest). Needed for ``mm`` cells.

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
from typing import Any, ClassVar, NamedTuple

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, FatalProviderError
from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.batched_calls import Batcher
from mmjudge.judges.cut_points import CutPoints, grade_for
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.distilled_folder import (
    MANIFEST,
    DistilledManifest,
    ImageHead,
    Training,
    model_path,
    read_manifest,
)
from mmjudge.judges.distilled_image import (
    decoded,
    fingerprint,
    head_scores,
    image_model_path,
    image_similarities,
    load_image_model,
)
from mmjudge.judges.options import JudgeOptions
from mmjudge.locations import resolve_path
from mmjudge.records import JudgeRequest, JudgeResponse, Usage

#: What a score is of, by the modality that graded it.
_WHAT = {"text": "pair", "mm": "pair with its image"}
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
    image_model: str | None = None
    """The CLIP model folder it was trained with; None: it reads text only."""


class Scored(NamedTuple):
    """One request's score and the modality whose cut points grade it."""

    score: float
    """From 0 to 1."""
    modality: str
    """``text`` (the cross-encoder's score) or ``mm`` (the image head's)."""


#: A request and its decoded pictures (decoded before batching, so a bad image fails its row).
_Job = tuple[JudgeRequest, list[Any]]


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
        self.folder = folder_of(model, self.options.path)
        self.manifest: DistilledManifest = read_manifest(self.folder)
        self.head: ImageHead | None = None
        self.image_model: Path | None = None
        if self.options.image_model:
            self.image_model, self.head = self._image_side(model, self.options.image_model)
            self.supports_images = True
            self.modalities = ("text", "mm")
        elif model.supports_images:
            raise ConfigError(
                f"model '{model.name}' is a distilled judge, which reads text only unless "
                "model.options.image_model names the CLIP model it was trained with; set "
                "model.supports_images=false"
            )
        batch_size = self.options.batch_size
        if batch_size < 1 or batch_size != int(batch_size):
            raise ConfigError(
                f"model.options.batch_size={batch_size} for '{model.name}' must be a whole "
                "number of at least 1"
            )
        self.batch_size = int(batch_size)
        self.device = self.options.device
        self._model: Any = None
        self._clip: Any = None
        self._lock = threading.RLock()
        self._loading: asyncio.Task[Any] | None = None
        self._batcher: Batcher[_Job, Scored] = Batcher(self._scores, self.batch_size)

    def _image_side(self, model: ModelConfig, given: str) -> tuple[Path, ImageHead]:
        """The CLIP folder ``model.options.image_model`` names and the manifest's head; one
        line when the judge was trained without images or with another CLIP model."""
        path = image_model_path("model.options.image_model", given)
        head = self.manifest.image
        if head is None:
            raise ConfigError(
                f"model.options.image_model is set for '{model.name}', but {self.folder} was "
                "trained on text only; train it with `mmjudge distill --image-model DIR`, or "
                "leave image_model unset"
            )
        if fingerprint(path) != head.fingerprint:
            raise ConfigError(
                f"model.options.image_model={given} for '{model.name}' is not the CLIP model "
                f"the judge was trained with ({head.image_model}, fingerprint "
                f"{head.fingerprint}); give that model"
            )
        return path, head

    @classmethod
    def refusal(cls, model: ModelConfig, modality: str, include_image: bool) -> str | None:
        if modality == "image":
            return (
                f"judge '{model.name}' (distilled) reads text only (with the image beside it "
                "where model.options.image_model is set) and cannot judge modality 'image': run "
                "it with modality=text, or modality=mm"
            )
        if modality == "mm":
            if DistilledOptions.parse(model).image_model:
                return None  # the judge sees images through its CLIP model
            return (
                f"judge '{model.name}' (distilled) reads text only and cannot judge modality "
                "'mm': run it with modality=text, or train it with `mmjudge distill "
                "--image-model DIR` and set model.options.image_model=DIR"
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
        cuts = {"text": CutPoints(list(self.manifest.cut_points), source)}
        if self.head is not None:
            cuts["mm"] = CutPoints(list(self.head.cut_points), f"{source} (image head)")
        return cuts

    def training(self) -> Training:
        """Its folder and manifest: the run records them and leaves the items it learnt out of
        its agreement figures."""
        return Training(self.folder, self.manifest)

    def load(self) -> Any:
        """The cross-encoder (and the CLIP model, when it reads images), loaded once (blocking;
        thread-safe)."""
        with self._lock:
            if self._model is None:
                try:
                    if self.image_model is not None:
                        self._clip = load_image_model(self.image_model, self.device)
                    self._model = load_cross_encoder(self.folder, self.device)
                except Exception as error:
                    raise FatalProviderError(
                        f"could not load the distilled model in {model_path(self.folder)} "
                        f"(or its CLIP model {self.image_model}) for '{self.name}' "
                        f"({type(error).__name__}: {error}); train it again with "
                        "`mmjudge distill`"
                    ) from error
            return self._model

    def _scores(self, jobs: Sequence[_Job]) -> list[Scored]:
        requests = [request for request, _ in jobs]
        pairs = [(r.query, "\n".join(v for _, v in r.fields)) for r in requests]
        with self._lock:
            text = pair_scores(self.load(), pairs, self.batch_size)
            seen = [i for i, (_, pictures) in enumerate(jobs) if pictures]
            if not seen or self.head is None:
                return [Scored(score, "text") for score in text]
            cosines = image_similarities(
                self._clip,
                [requests[i].query for i in seen],
                [jobs[i][1] for i in seen],
                self.batch_size,
            )
        head = self.head
        weights = (head.bias, head.text_weight, head.image_weight)
        joined = head_scores(weights, [text[i] for i in seen], cosines)
        out = [Scored(score, "text") for score in text]
        for i, score in zip(seen, joined, strict=True):
            out[i] = Scored(score, "mm")
        return out

    def grade(self, score: float, grades: Sequence[int], modality: str = "text") -> int:
        """The grade a score earns under the stored cut points of ``modality`` (``mm``: the
        image head's)."""
        if modality == "mm" and self.head is not None:
            return grade_for(score, self.head.cut_points, grades)
        return grade_for(score, self.manifest.cut_points, grades)

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        started = time.perf_counter()
        if request.images and self.head is None:
            raise ConfigError(f"'{self.name}' is a distilled judge and reads text only")
        # decoded per request, so one unreadable image fails its own row and not a batch
        pictures = await asyncio.to_thread(decoded, request.images) if request.images else []
        if self._model is None:
            before = time.perf_counter()
            loop = asyncio.get_running_loop()
            if self._loading is None or self._loading.get_loop() is not loop:
                self._loading = loop.create_task(asyncio.to_thread(self.load))
            await asyncio.shield(self._loading)
            started += time.perf_counter() - before  # the one-off load is not this call's
        scored = await self._batcher.submit((request, pictures))
        grade = self.grade(scored.score, request.grades, scored.modality)
        score = scored.score
        seen = request.item_key in self.manifest.trained_item_set
        note = f" {TRAINED_NOTE}" if seen else ""
        return JudgeResponse(
            text=f"{grade}\nThe distilled model scores the {_WHAT[scored.modality]} "
            f"{score:.3f}.{note}",
            latency_s=time.perf_counter() - started,
            model=self.name,
            stop_reason="stop",
        )
