"""``mmjudge distill`` as a library function: gather the pairs, split the queries, train, measure
on the held-out queries, and write the judge's folder.

The held-out measurement uses the model saved in the folder (the last finished epoch), so the
κ in the manifest is the κ of the judge a sweep will load. κ is the report's headline (Cohen's,
unweighted) with its bootstrap interval over queries, from :func:`mmjudge.metrics.scoring.
score_judge`; the source judge's κ against people is measured on the same held-out items.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from mmjudge.distill.pairs import Pair, PairSet, Split, gather, split
from mmjudge.distill.train import Progress, Trained, TrainSettings, cut_points, train
from mmjudge.distill.with_images import checked_image_model, fit_image_head, graded_with_images
from mmjudge.errors import MMJudgeError
from mmjudge.judges.cut_points import grade_for
from mmjudge.judges.distilled import load_cross_encoder, pair_scores
from mmjudge.judges.distilled_folder import (
    MANIFEST,
    DistilledManifest,
    HeldOutFigures,
    ImageHead,
    KappaFigure,
    model_path,
    write_manifest,
)
from mmjudge.metrics.scoring import score_judge

#: Share of the queries held out by default.
HELD_OUT_SHARE = 0.3


class Distilled(NamedTuple):
    """A distilled judge's folder, what it says, and how the training went."""

    folder: Path
    """The folder written (``--out``)."""
    manifest: DistilledManifest
    """Its manifest, as written."""
    trained: Trained
    """Epochs done, time taken, whether it was stopped."""


def distill(
    source: str | Path,
    out: str | Path,
    *,
    teacher: str = "judge",
    judge: str | None = None,
    labels: str | Path | None = None,
    image_model: str | None = None,
    held_out_share: float = HELD_OUT_SHARE,
    settings: TrainSettings | None = None,
    progress: Progress | None = None,
) -> Distilled:
    """Train a judge on ``source``'s grades from ``teacher`` and write it to ``out``; with
    ``image_model`` (a local CLIP folder), also fit the head that lets it grade the result's
    image beside its text (:mod:`mmjudge.distill.with_images`), and measure it so.

    Raises:
        MMJudgeError: input it cannot learn from, in one line (see :mod:`mmjudge.distill.pairs`).
    """
    settings = settings or TrainSettings()
    folder = Path(out)
    if folder.exists() and any(folder.iterdir()) and not (folder / MANIFEST).is_file():
        raise MMJudgeError(
            f"--out {folder}: a folder with other files in it; give a new folder (or one "
            "`mmjudge distill` wrote, to replace its judge)"
        )
    gathered = gather(source, teacher, judge=judge, labels=labels)
    parts = split(gathered.pairs, held_out_share, settings.seed)
    if image_model is not None:
        checked_image_model(image_model)
    missing = [m for m in ("torch", "sentence_transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise MMJudgeError(
            f"training needs {' and '.join(missing)}: pip install 'mmjudge[local]' (and torch)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    trained = train(parts.train, gathered.grades, settings, model_path(folder), progress)
    graded = grade_held_out(folder, gathered, parts, settings, image_model)
    cuts, head, predicted = graded.cut_points, graded.image, graded.predicted
    manifest = DistilledManifest(
        grades=list(gathered.grades),
        cut_points=cuts,
        source=gathered.source,
        teacher=gathered.teacher,
        teacher_name=gathered.teacher_name,
        dataset=gathered.dataset,
        base=str(settings.base or "all-MiniLM-L6-v2 (bundled)"),
        seed=settings.seed,
        epochs=settings.epochs,
        epochs_done=trained.epochs_done,
        trained_items=[p.key for p in parts.train],
        held_out_queries=parts.held_out_queries,
        held_out=held_out_figures(gathered, parts.held_out, predicted),
        train_seconds=round(trained.seconds, 2),
        modality="text" if head is None else "mm",
        image=head,
    )
    write_manifest(folder, manifest)
    return Distilled(folder, manifest, trained)


class Graded(NamedTuple):
    """How the saved judge grades: its cut points (and image head), and its grades of the
    held-out pairs."""

    cut_points: list[float]
    """The text score's cut points, fitted on the training pairs."""
    image: ImageHead | None
    """The image head (with ``--image-model``)."""
    predicted: list[int]
    """Its grade of each held-out pair, in order."""


def grade_held_out(
    folder: Path,
    gathered: PairSet,
    parts: Split,
    settings: TrainSettings,
    image_model: str | None,
) -> Graded:
    """Fit the cut points (and the image head) on the training pairs with the model saved in
    ``folder``, and grade the held-out pairs as the judge will."""
    model = load_cross_encoder(folder, settings.device)
    fitted = pair_scores(model, [(p.query, p.text) for p in parts.train], settings.batch_size)
    cuts = cut_points(fitted, [p.grade for p in parts.train], gathered.grades)
    scores = pair_scores(model, [(p.query, p.text) for p in parts.held_out], settings.batch_size)
    predicted = [grade_for(s, cuts, gathered.grades) for s in scores]
    if image_model is None:
        return Graded(cuts, None, predicted)
    step = fit_image_head(
        image_model,
        parts.train,
        fitted,
        gathered.grades,
        device=settings.device,
        batch_size=settings.batch_size,
    )
    predicted = graded_with_images(
        step, parts.held_out, scores, predicted, gathered.grades, settings.batch_size
    )
    return Graded(cuts, step.head, predicted)


def held_out_figures(
    gathered: PairSet, held_out: Sequence[Pair], predicted: Sequence[int]
) -> HeldOutFigures:
    """κ of the trained judge against its teacher and against people, and of the teacher
    against people, all on the held-out items."""
    queries = [p.query_id for p in held_out]
    teacher = [float(p.grade) for p in held_out]
    people = [p.human for p in held_out]
    student = [float(g) for g in predicted]
    has_people = any(not math.isnan(h) for h in people)
    humans_taught = gathered.teacher == "humans"
    return HeldOutFigures(
        n_items=len(held_out),
        n_queries=len(set(queries)),
        student_vs_source=kappa(queries, teacher, student, gathered.grades),
        student_vs_people=kappa(queries, people, student, gathered.grades) if has_people else None,
        source_vs_people=(
            kappa(queries, people, teacher, gathered.grades)
            if has_people and not humans_taught
            else None
        ),
    )


def kappa(
    queries: Sequence[str],
    reference: Sequence[float],
    judged: Sequence[float],
    grades: Sequence[int],
) -> KappaFigure:
    """The headline κ of ``judged`` against ``reference`` with its interval."""
    score = score_judge(queries, reference, judged, [float(g) for g in grades])
    value = score.kappa
    return KappaFigure(
        estimate=_number(value.estimate),
        low=_number(value.low),
        high=_number(value.high),
        n_items=score.n_items,
        n_queries=score.n_queries,
    )


def _number(value: float) -> float | None:
    return round(float(value), 4) if math.isfinite(value) else None
