"""Q3: does seeing the image help a model?

A model with the image (image + text, or image only) is compared with the same model and
prompt given the text only, paired on the items both graded on the same dataset."""

from __future__ import annotations

from markupsafe import Markup

from mmjudge.report.analysis import (
    IMAGE_MODALITIES,
    MODALITY_NAMES,
    Analysis,
    Comparison,
    Unfinished,
)
from mmjudge.report.findings.answer import Answer, add_points, left_out
from mmjudge.report.findings.prose import (
    FIG_IMAGE,
    NOT_DISTINGUISHABLE,
    TABLE_IMAGE,
    difference,
    join,
    link,
)

#: (model, prompt, modality) → (dataset, its comparison with text only) per dataset.
Effects = dict[tuple[str, str, str], list[tuple[str, Comparison]]]


def image_effect(analysis: Analysis) -> Answer:
    """Q3: does seeing the image help each model?"""
    answer = Answer(
        "q3",
        "Does seeing the image help this model?",
        sources=[link(TABLE_IMAGE, "Δκ table"), link(FIG_IMAGE, "Δκ figure")],
    )
    grouped = _effects_by_model(analysis)
    failed = [u for u in analysis.not_analysed if _would_pair(analysis, u)]
    if not grouped:
        _no_comparison(analysis, answer, failed)
        return answer
    counts = {"helps": 0, "hurts": 0, NOT_DISTINGUISHABLE: 0}
    points = [
        _model_point(analysis, key, entries, counts) for key, entries in sorted(grouped.items())
    ]
    add_points(answer, points, "the Δκ table")
    note = left_out(analysis, lambda u: u in failed)
    if note is not None:
        answer.points.append(note)
    total = sum(counts.values())
    answer.lead = join(
        f"Of {total} comparison{'s' if total != 1 else ''} of a model with and without the "
        f"image (paired on the same items): the image helps in {counts['helps']}, hurts in "
        f"{counts['hurts']}, and is {NOT_DISTINGUISHABLE} from text only in "
        f"{counts[NOT_DISTINGUISHABLE]}."
    )
    return answer


def _effects_by_model(analysis: Analysis) -> Effects:
    grouped: Effects = {}
    for stats in analysis.datasets:
        for c in stats.modality_effects:
            key = (c.a.judge.model, c.a.judge.prompt_id, c.a.judge.modality)
            grouped.setdefault(key, []).append((stats.name, c))
    return grouped


def _no_comparison(analysis: Analysis, answer: Answer, failed: list[Unfinished]) -> None:
    """The answer when no model has both kinds of cell on one dataset: say whether cells
    that would have made the comparison failed, or none was run."""
    answer.sources = []
    if failed:
        answer.lead = join(
            "No model completed both a text-only cell and a cell with the image on the "
            "same dataset: the cells that would make this comparison failed or were "
            "stopped, so it cannot be answered from this sweep."
        )
        answer.points.append(left_out(analysis, lambda u: u in failed) or join())
        return
    answer.lead = join(
        "No model ran both with and without the image on the same dataset, so this "
        "cannot be answered here; sweep a vision model over modality=text,mm,image."
    )


def _effect_verdict(c: Comparison) -> str:
    if not c.distinguishable:
        return NOT_DISTINGUISHABLE
    return "the image helps" if c.difference > 0 else "the image hurts"


def _model_point(
    analysis: Analysis,
    key: tuple[str, str, str],
    entries: list[tuple[str, Comparison]],
    counts: dict[str, int],
) -> tuple[int, Markup]:
    """One model's effect of the image on each dataset (counted into ``counts``), keyed so
    that models with more clear effects come first."""
    model, prompt, modality = key
    parts = []
    for name, c in entries:
        verdict = _effect_verdict(c)
        counts[verdict.split()[-1] if c.distinguishable else NOT_DISTINGUISHABLE] += 1
        parts.append(f"on {name} {difference(c)} — {verdict}")
    label = model + (f" ({prompt})" if analysis.with_prompt else "")
    kind = MODALITY_NAMES.get(modality, modality)
    clear = sum(c.distinguishable for _, c in entries)
    return -clear, join(f"{label}, {kind} vs text only: ", "; ".join(parts), ".")


def _would_pair(analysis: Analysis, cell: Unfinished) -> bool:
    """Whether an unfinished cell was one side of a with/without-image comparison: the same
    model and prompt was also run (or tried) on the same dataset with the other kind of
    input."""
    tried = {
        (stats.name, c.judge.model, c.judge.prompt_id, c.judge.modality)
        for stats in analysis.datasets
        for c in stats.cells
    }
    tried |= {
        (u.dataset, u.judge.model, u.judge.prompt_id, u.judge.modality)
        for u in analysis.not_analysed
    }
    sees_image = cell.judge.modality in IMAGE_MODALITIES
    wanted = ("text",) if sees_image else IMAGE_MODALITIES
    return any(
        (cell.dataset, cell.judge.model, cell.judge.prompt_id, modality) in tried
        for modality in wanted
    )
