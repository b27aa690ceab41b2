"""Training's image step (``mmjudge distill --image-model DIR``): once the cross-encoder is
trained on the text, the CLIP model's query–image cosines of the training pairs and the
cross-encoder's scores of them fit the judge's image head
(:mod:`mmjudge.judges.distilled_image`, which says why it is built this way).

Images are read as a run shows them to a judge (:func:`mmjudge.images.preprocess_image` with
the default image settings: oriented, RGB, fitted into 512 pixels), so the cosines the head
learns from are those the judge will see. An image that cannot be read stops training in one
line naming the file.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from mmjudge.distill.pairs import Pair
from mmjudge.distill.train import cut_points, targets
from mmjudge.errors import ConfigError, ImageError, MMJudgeError
from mmjudge.judges.cut_points import grade_for
from mmjudge.judges.distilled_folder import ImageHead
from mmjudge.judges.distilled_image import (
    fingerprint,
    fit_head,
    head_scores,
    image_model_path,
    image_similarities,
    load_image_model,
)


class ImageStep(NamedTuple):
    """The fitted head and the CLIP model it was fitted with (to measure held-out items)."""

    head: ImageHead
    """What goes into the manifest."""
    model: Any
    """The loaded CLIP model."""


def fit_image_head(
    image_model: str,
    pairs: Sequence[Pair],
    text_scores: Sequence[float],
    grades: Sequence[int],
    *,
    device: str | None = None,
    batch_size: int = 32,
) -> ImageStep:
    """The image head fitted on the training ``pairs`` that have an image (their cross-encoder
    ``text_scores`` given in the same order); one-line errors when none has one."""
    folder = checked_image_model(image_model)
    try:
        model = load_image_model(folder, device)
    except Exception as error:
        raise MMJudgeError(
            f"--image-model {image_model}: cannot be loaded as a CLIP model "
            f"({type(error).__name__}: {error})"
        ) from None
    cosines = item_cosines(model, pairs, batch_size)
    shown = [i for i, c in enumerate(cosines) if not math.isnan(c)]
    if len(shown) < 2 or len({pairs[i].grade for i in shown}) < 2:
        raise MMJudgeError(
            f"--image-model: only {len(shown)} training items have an image (of "
            f"{len(pairs)}), with {len({pairs[i].grade for i in shown})} grade(s); a judge "
            "that sees images needs items with images and several grades (or leave out "
            "--image-model)"
        )
    chosen = [pairs[i] for i in shown]
    text = [text_scores[i] for i in shown]
    seen = [cosines[i] for i in shown]
    bias, text_weight, image_weight = fit_head(text, seen, targets(chosen, grades))
    head = ImageHead(
        image_model=str(folder),
        fingerprint=fingerprint(folder),
        bias=round(bias, 6),
        text_weight=round(text_weight, 6),
        image_weight=round(image_weight, 6),
        cut_points=[],
        n_trained=len(chosen),
    )
    # the cut points of the head as stored (rounded), so the judge grades exactly as measured
    weights = (head.bias, head.text_weight, head.image_weight)
    scores = head_scores(weights, text, seen)
    cuts = cut_points(scores, [p.grade for p in chosen], grades)
    return ImageStep(dataclasses.replace(head, cut_points=cuts), model)


def checked_image_model(image_model: str) -> Path:
    """``--image-model`` resolved, or one line saying it is no local CLIP folder (checked
    before training starts)."""
    try:
        return image_model_path("--image-model", image_model)
    except ConfigError as error:
        raise MMJudgeError(str(error)) from None


def graded_with_images(
    step: ImageStep,
    pairs: Sequence[Pair],
    text_scores: Sequence[float],
    text_grades: Sequence[int],
    grades: Sequence[int],
    batch_size: int = 32,
) -> list[int]:
    """Each pair's grade as the judge gives it: the head's where the item has an image, the
    text's (``text_grades``) where it has none."""
    head = step.head
    cosines = item_cosines(step.model, pairs, batch_size)
    scores = head_scores((head.bias, head.text_weight, head.image_weight), text_scores, cosines)
    return [
        given if math.isnan(cosine) else grade_for(score, head.cut_points, grades)
        for given, cosine, score in zip(text_grades, cosines, scores, strict=True)
    ]


def item_cosines(model: Any, pairs: Sequence[Pair], batch_size: int = 32) -> list[float]:
    """The CLIP cosine of each pair's query with its best-matching image (``nan``: none)."""
    return image_similarities(
        model, [p.query for p in pairs], [pictures(p.images) for p in pairs], batch_size
    )


def pictures(paths: Sequence[str]) -> list[Any]:
    """The images at ``paths`` as a run shows them; one line naming a file that cannot be
    read."""
    from mmjudge.images import preprocess_image
    from mmjudge.images.settings import ImageSettings
    from mmjudge.judges.embedding import decode_image

    settings = ImageSettings()
    out = []
    for path in paths:
        try:
            out.append(decode_image(preprocess_image(path, settings)))
        except ImageError as error:
            raise MMJudgeError(
                f"{Path(path)}: this image cannot be read ({error}); fix or remove it"
            ) from None
    return out
