"""The folder a trained (distilled) judge lives in: its weights and one manifest, with the one
writer and the one reader of that manifest.

``mmjudge distill`` writes the folder; the ``distilled`` judge reads it. It holds:

- ``model/``: a sentence-transformers cross-encoder (one relevance score per pair, 0 to 1);
- ``distilled.json``: the :class:`DistilledManifest` — the grade scale and the cut points that
  turn the score into a grade, where the grades it learnt came from, the items it was trained
  on (by key), the seed, the base model, and its κ on the held-out queries; for a judge
  trained with images, the :class:`ImageHead` that joins the text score with a CLIP model's
  image–query similarity (the CLIP model itself stays where it is: the head names it and
  its fingerprint).

The manifest is read only here (:func:`read_manifest`); a folder without one, or with one this
version cannot read, is a one-line :class:`~mmjudge.errors.ConfigError` naming the fix.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.errors import ConfigError
from mmjudge.files import write_atomic

#: The manifest's file name inside the folder.
MANIFEST = "distilled.json"
#: The model's sub-folder (a sentence-transformers cross-encoder).
MODEL_DIR = "model"
#: Bumped when the manifest's fields change in a way an older reader cannot follow.
MANIFEST_SCHEMA_VERSION = 1
#: What the judge learnt from: the dataset's people, a judge's grades, or a label file's.
TEACHER_KINDS = ("humans", "judge", "labels")
#: What a judge reads: text alone, or text and the result's image.
MODALITIES = ("text", "mm")


@dataclass(frozen=True)
class KappaFigure:
    """Cohen's κ (unweighted, the report's headline) with its 95 % bootstrap interval over
    queries, on held-out items; ``None`` where it is undefined."""

    estimate: float | None
    """κ on every held-out item both sides graded."""
    low: float | None
    """Lower end of the interval."""
    high: float | None
    """Upper end of the interval."""
    n_items: int
    """Items it is measured on."""
    n_queries: int
    """Queries among them (what the bootstrap resamples)."""

    def text(self) -> str:
        """``0.41 [0.30, 0.52] on 120 items`` (``undefined`` without a value)."""
        if self.estimate is None or not math.isfinite(self.estimate):
            return f"undefined on {self.n_items} items"
        if self.low is None or self.high is None:
            return f"{self.estimate:.2f} on {self.n_items} items"
        return f"{self.estimate:.2f} [{self.low:.2f}, {self.high:.2f}] on {self.n_items} items"


@dataclass(frozen=True)
class HeldOutFigures:
    """How the trained judge agrees on the queries it never saw in training."""

    n_items: int
    """Held-out items (every item of a held-out query that has a grade to learn)."""
    n_queries: int
    """Held-out queries."""
    student_vs_source: KappaFigure
    """The trained judge against the grades it learnt from (the teacher's)."""
    student_vs_people: KappaFigure | None
    """The trained judge against the people's consensus (None: the dataset has no human
    grades)."""
    source_vs_people: KappaFigure | None
    """The teacher against the people's consensus on the same items (None when the teacher
    is the people, or there are none)."""


@dataclass(frozen=True)
class ImageHead:
    """How a judge trained with images grades a (query, text, image) item: a logistic head over
    the cross-encoder's text logit and the CLIP image–query cosine, and the cut points of its
    score (:func:`mmjudge.judges.distilled_image.head_scores`)."""

    image_model: str
    """The CLIP checkpoint it was trained with (resolved path, as given to ``--image-model``)."""
    fingerprint: str
    """:func:`mmjudge.judges.distilled_image.fingerprint` of that checkpoint: a run must use the
    same model (another CLIP's cosines sit on another scale)."""
    bias: float
    """The head's intercept."""
    text_weight: float
    """Weight of the cross-encoder's logit (the log-odds of its 0–1 text score)."""
    image_weight: float
    """Weight of the cosine between the query's and the image's CLIP embeddings (the largest
    over the item's images)."""
    cut_points: list[float]
    """Head scores (0 to 1) from which each grade above the lowest is given, increasing;
    fitted on the training pairs with an image."""
    n_trained: int
    """Training pairs with an image the head was fitted on."""


@dataclass(frozen=True)
class DistilledManifest:
    """What a distilled judge's folder says about the model in it (``distilled.json``)."""

    grades: list[int]
    """The grade scale it was trained on, lowest first."""
    cut_points: list[float]
    """Scores (0 to 1) from which each grade above the lowest is given, increasing."""
    source: str
    """The run or sweep folder the items came from, as given."""
    teacher: str
    """Where the grades learnt came from: ``humans``, ``judge`` or ``labels``."""
    teacher_name: str
    """The teacher in words: the judge's name, the label file's path, or ``humans``."""
    dataset: str
    """The dataset the items' texts were read from."""
    base: str
    """The checkpoint training started from."""
    seed: int
    """Seed of the query split, the head's initial weights and the order of the pairs."""
    epochs: int
    """Epochs asked for."""
    epochs_done: int
    """Epochs finished and kept (fewer than :attr:`epochs` when training was stopped)."""
    trained_items: list[str]
    """Keys (``query_id<TAB>result_id``) of every item trained on."""
    held_out_queries: list[str]
    """Queries kept out of training, sorted."""
    held_out: HeldOutFigures
    """Agreement on the held-out queries."""
    train_seconds: float
    """Wall time of the training epochs."""
    modality: str = "text"
    """What it reads: ``text`` (the query and the result's text fields), or ``mm`` (also the
    result's image, through :attr:`image`)."""
    image: ImageHead | None = None
    """The image head of a judge trained with ``--image-model`` (None: text only)."""
    schema_version: int = MANIFEST_SCHEMA_VERSION
    """Version of this manifest's layout."""
    trained_item_set: frozenset[str] = field(
        default=frozenset(), init=False, repr=False, compare=False
    )
    """:attr:`trained_items` as a set, for look-ups."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "trained_item_set", frozenset(self.trained_items))

    def provenance(self) -> str:
        """One line on where the judge comes from, for a run's description and the report."""
        stopped = "" if self.epochs_done == self.epochs else f" (stopped after {self.epochs_done})"
        images = "" if self.image is None else f", images through {self.image.image_model}"
        return (
            f"trained on {len(self.trained_items)} items of {self.dataset} graded by "
            f"{self.teacher_name} ({self.source}), from {self.base}{images}, seed {self.seed}, "
            f"{self.epochs} epochs{stopped}; held-out κ vs teacher "
            f"{self.held_out.student_vs_source.text()}"
        )


class Training(NamedTuple):
    """A trained judge's folder and what its manifest says
    (:meth:`mmjudge.judges.base.JudgeAPI.training`)."""

    folder: Path
    """The folder ``mmjudge distill --out`` wrote."""
    manifest: DistilledManifest
    """Its manifest."""


def manifest_path(folder: str | Path) -> Path:
    """Where ``folder``'s manifest is."""
    return Path(folder) / MANIFEST


def model_path(folder: str | Path) -> Path:
    """Where ``folder``'s model is."""
    return Path(folder) / MODEL_DIR


def write_manifest(folder: str | Path, manifest: DistilledManifest) -> Path:
    """Write ``manifest`` into ``folder`` atomically; the path written."""
    data = dataclasses.asdict(manifest)
    data.pop("trained_item_set")
    return write_atomic(
        manifest_path(folder), json.dumps(_finite(data), indent=2, ensure_ascii=False) + "\n"
    )


def read_manifest(folder: str | Path) -> DistilledManifest:
    """The manifest of a distilled judge's folder; one-line ConfigError when it is missing,
    unreadable or of a newer layout."""
    path = manifest_path(folder)
    if not path.is_file():
        raise ConfigError(
            f"{folder}: not a distilled judge's folder (no {MANIFEST}); give the --out folder "
            "of `mmjudge distill` as model.options.path"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        version = int(data.get("schema_version", 0))
        if version > MANIFEST_SCHEMA_VERSION:
            raise ConfigError(
                f"{path}: written by a newer mmjudge (layout {version}, this one reads up to "
                f"{MANIFEST_SCHEMA_VERSION}); upgrade mmjudge"
            )
        held = data["held_out"]
        figures = HeldOutFigures(
            n_items=int(held["n_items"]),
            n_queries=int(held["n_queries"]),
            student_vs_source=_kappa(held["student_vs_source"]),
            student_vs_people=_kappa(held.get("student_vs_people")),
            source_vs_people=_kappa(held.get("source_vs_people")),
        )
        fields = {f.name for f in dataclasses.fields(DistilledManifest) if f.init}
        values = {k: v for k, v in data.items() if k in fields and k not in ("held_out", "image")}
        head = data.get("image")
        image = None if head is None else ImageHead(**head)
        manifest = DistilledManifest(held_out=figures, image=image, **values)
    except ConfigError:
        raise
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise ConfigError(
            f"{path}: cannot be read ({type(error).__name__}: {error}); train the judge again "
            "with `mmjudge distill`"
        ) from None
    _check(path, manifest)
    return manifest


def _kappa(data: Any) -> Any:
    if data is None:
        return None
    return KappaFigure(
        estimate=data.get("estimate"),
        low=data.get("low"),
        high=data.get("high"),
        n_items=int(data["n_items"]),
        n_queries=int(data["n_queries"]),
    )


def _check(path: Path, manifest: DistilledManifest) -> None:
    grades = [int(g) for g in manifest.grades]
    if len(grades) < 2 or len(manifest.cut_points) != len(grades) - 1:
        raise ConfigError(
            f"{path}: grades {grades} and cut points {manifest.cut_points} do not fit (one cut "
            "point fewer than grades); train the judge again with `mmjudge distill`"
        )
    head = manifest.image
    if (manifest.modality == "mm") != (head is not None) or manifest.modality not in MODALITIES:
        raise ConfigError(
            f"{path}: modality {manifest.modality!r} and its image head do not fit (text: none, "
            "mm: one); train the judge again with `mmjudge distill`"
        )
    if head is not None and len(head.cut_points) != len(grades) - 1:
        raise ConfigError(
            f"{path}: the image head's cut points {head.cut_points} do not fit grades {grades}; "
            "train the judge again with `mmjudge distill`"
        )
    if manifest.teacher not in TEACHER_KINDS:
        raise ConfigError(
            f"{path}: teacher {manifest.teacher!r} is none of {', '.join(TEACHER_KINDS)}"
        )


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float as ``None`` (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
