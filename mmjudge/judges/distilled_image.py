"""The image half of a distilled judge trained with ``--image-model``: a CLIP model's similarity
between the query and the result's image, joined with the cross-encoder's text score by a small
logistic head.

The design: the cross-encoder learns from the text alone (what it was built for), and the CLIP
checkpoint is used as it is, untouched — its cosine between the query's text embedding and the
image's embedding says how well the picture matches the query. A head with three numbers
(:class:`~mmjudge.judges.distilled_folder.ImageHead`) then learns how much each of the two
signals is worth on the training pairs::

    score = sigmoid(bias + text_weight · logit(text score) + image_weight · cosine)

fitted by logistic regression against each pair's place on the grade scale (0 lowest, 1
highest; the cross-entropy the cross-encoder is trained with), and its own cut points turn the
score into a grade. Three numbers fit on a few hundred pairs without overfitting, need no
GPU, and keep the CLIP model shared with the ``clip`` judge rather than copied into the judge's
folder; the folder names the CLIP checkpoint and its :func:`fingerprint`, and a run with
another checkpoint is refused (its cosines sit on another scale).

One caveat, said in the manual: the head is fitted on the training pairs, whose text scores the
cross-encoder has seen, so it may lean on the text more than new items warrant; its held-out κ
(measured on queries neither part saw) is the honest figure.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmjudge.errors import ConfigError
from mmjudge.judges.embedding import decode_image
from mmjudge.judges.sentence_models import open_model, unit_rows
from mmjudge.locations import resolve_path

if TYPE_CHECKING:
    from PIL import Image

#: Ridge penalty on the head's two weights (keeps Newton's steps finite on separable pairs).
RIDGE = 1e-3
#: Newton steps of the head's fit (it converges in far fewer on any real data).
NEWTON_STEPS = 50
#: Text scores are clipped this far from 0 and 1 before their log-odds are taken.
EDGE = 1e-6


def image_model_path(setting: str, value: str) -> Path:
    """``value`` (a CLIP checkpoint folder) resolved; one line naming ``setting`` when it is not
    a local model folder."""
    path = resolve_path(value)
    if not ((path / "config.json").is_file() or (path / "modules.json").is_file()):
        raise ConfigError(
            f"{setting}={value}: not a local CLIP model folder (no config.json or modules.json); "
            "give a sentence-transformers CLIP folder or a Hugging Face CLIP checkpoint"
        )
    return path


def fingerprint(folder: str | Path) -> str:
    """A short hash of a model folder: its ``config.json`` (and ``modules.json``) contents and
    every file's name and size, so the same checkpoint copied elsewhere matches and another
    one does not, without reading the weights."""
    root = Path(folder)
    digest = hashlib.sha256()
    for name in ("config.json", "modules.json"):
        if (root / name).is_file():
            digest.update(name.encode() + b"\0" + (root / name).read_bytes())
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(root).as_posix()}\0{path.stat().st_size}\n".encode())
    return digest.hexdigest()[:16]


def load_image_model(folder: str | Path, device: str | None = None) -> Any:
    """The CLIP model in ``folder`` (blocking), loaded as the ``clip`` judge loads it."""
    return open_model(str(folder), clip=True, device=device)


def image_similarities(
    model: Any,
    queries: Sequence[str],
    images: Sequence[Sequence[Image.Image]],
    batch_size: int = 32,
) -> list[float]:
    """For each item, the largest cosine between its query's CLIP text embedding and one of its
    images' embeddings; ``nan`` for an item without an image."""
    import numpy as np

    flat = [picture for pictures in images for picture in pictures]
    if not flat:
        return [math.nan] * len(queries)
    kwargs = {"batch_size": batch_size, "show_progress_bar": False, "convert_to_numpy": True}
    asked = unit_rows(model.encode(list(queries), **kwargs))
    shown = unit_rows(model.encode(flat, **kwargs))
    out: list[float] = []
    start = 0
    for i, pictures in enumerate(images):
        count = len(pictures)
        out.append(float(np.max(shown[start : start + count] @ asked[i])) if count else math.nan)
        start += count
    return out


def features(text_scores: Sequence[float], cosines: Sequence[float]) -> Any:
    """The head's design matrix: a column of ones, the text score's log-odds, the cosine."""
    import numpy as np

    text = np.clip(np.asarray(text_scores, dtype=float), EDGE, 1 - EDGE)
    logit = np.log(text / (1 - text))
    return np.column_stack([np.ones(len(logit)), logit, np.asarray(cosines, dtype=float)])


def fit_head(
    text_scores: Sequence[float], cosines: Sequence[float], targets: Sequence[float]
) -> tuple[float, float, float]:
    """(bias, text weight, image weight) of the logistic head that best predicts ``targets``
    (each in [0, 1]) by cross-entropy, by Newton's method with a small ridge on the weights.

    Written out rather than taken from a library: it is ten lines of NumPy, deterministic, and
    keeps scikit-learn out of the ``local`` extra.
    """
    import numpy as np

    x = features(text_scores, cosines)
    y = np.asarray(targets, dtype=float)
    penalty = np.diag([0.0, RIDGE, RIDGE]) * len(y)
    beta = np.zeros(3)
    for _ in range(NEWTON_STEPS):
        p = 1 / (1 + np.exp(-(x @ beta)))
        gradient = x.T @ (p - y) + penalty @ beta
        hessian = (x * (p * (1 - p))[:, None]).T @ x + penalty + np.eye(3) * 1e-9
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    bias, text_weight, image_weight = (float(b) for b in beta)
    return bias, text_weight, image_weight


def head_scores(
    weights: tuple[float, float, float], text_scores: Sequence[float], cosines: Sequence[float]
) -> list[float]:
    """The head's score (0 to 1) of each item from its text score and its image cosine: the one
    place the head is applied, in training's measurements and in the judge alike."""
    import numpy as np

    if not len(text_scores):
        return []
    z = features(text_scores, cosines) @ np.asarray(weights, dtype=float)
    return [float(v) for v in 1 / (1 + np.exp(-z))]


def decoded(images: Sequence[Any]) -> list[Image.Image]:
    """The pictures of a request's encoded images (:func:`~mmjudge.judges.embedding.
    decode_image`)."""
    return [decode_image(image) for image in images]
