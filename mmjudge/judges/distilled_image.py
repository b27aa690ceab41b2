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

#: Ridge penalty on the head's two weights, per pair (keeps the weights finite on pairs the
#: features separate).
RIDGE = 1e-3
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
    (each in [0, 1]) by cross-entropy, with a small ridge on the two weights (so pairs the
    features separate still give finite weights); minimised by SciPy's BFGS from zero, with the
    loss's own gradient, so the same pairs always give the same head."""
    import numpy as np
    from scipy import optimize, special

    x = features(text_scores, cosines)
    y = np.asarray(targets, dtype=float)
    ridge = np.asarray([0.0, RIDGE, RIDGE]) * len(y)

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ beta
        # −[y log σ(z) + (1 − y) log(1 − σ(z))] = log(1 + e^z) − y z, computed without overflow
        value = float(np.sum(np.logaddexp(0.0, z) - y * z) + 0.5 * ridge @ beta**2)
        gradient = x.T @ (special.expit(z) - y) + ridge * beta
        return value, gradient

    found = optimize.minimize(loss, np.zeros(3), jac=True, method="BFGS", options={"gtol": 1e-9})
    bias, text_weight, image_weight = (float(b) for b in found.x)
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
