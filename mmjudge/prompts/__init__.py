"""Prompt templates (package data) and their rendering.

A prompt is one design (what is shown, what is asked) in one wording. The design comes from
:class:`~mmjudge.config.PromptConfig`: role statement, dataset description and guidelines,
strictness note, aspect grades, simulated raters, a stated confidence, an explanation. The
wording is ``_wording<N>.j2`` for ``prompt.paraphrase = N``: each wording file phrases every
sentence of the design differently, so comparing wordings measures how much agreement moves
with wording alone. Rendering is a pure function of the example and the configs.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from mmjudge.config import DatasetConfig, ModalityConfig, PromptConfig
from mmjudge.data.schema import Example
from mmjudge.errors import ConfigError

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("mmjudge", "prompts"),
    autoescape=False,
    keep_trailing_newline=False,
    undefined=jinja2.StrictUndefined,
)

SYSTEM_PROMPT = "You grade search results for relevance. Answer in the format you are asked for."


DEFAULT_MEANINGS = {
    0: "not relevant: the result does not match what the query asks for",
    1: "partly relevant: the result matches some of the query but misses part of it",
    2: "relevant: the result matches everything the query asks for",
}


@dataclass(frozen=True)
class RenderedPrompt:
    system: str
    text: str
    fields: tuple[tuple[str, str], ...]
    """The fields shown (empty ones dropped; none at all for image-only)."""


def scale_meanings(dataset: DatasetConfig) -> list[tuple[int, str]]:
    """The grade definitions shown to the judge, from the dataset config."""
    meanings = {int(k): v for k, v in dataset.scale.meanings.items()}
    out = []
    for grade in dataset.scale.grades:
        meaning = meanings.get(grade) or DEFAULT_MEANINGS.get(grade)
        if not meaning:
            raise ConfigError(
                f"dataset '{dataset.name}': scale.meanings has no definition for grade {grade}; "
                "add one to its config"
            )
        out.append((grade, meaning))
    return out


def render(
    example: Example,
    modality: ModalityConfig,
    prompt: PromptConfig,
    dataset: DatasetConfig,
    n_images: int,
) -> RenderedPrompt:
    """Render the prompt one judge reads for one example."""
    grades = sorted(dataset.scale.grades)
    fields = (
        tuple((name, value.strip()) for name, value in example.fields if value and value.strip())
        if modality.include_text
        else ()
    )
    prompt.validate()
    template_name = f"{prompt.template}_{modality.name}.j2"
    try:
        template = _ENV.get_template(template_name)
    except jinja2.TemplateNotFound:
        raise ConfigError(
            f"prompt.template='{prompt.template}' has no template for modality "
            f"'{modality.name}' (looked for mmjudge/prompts/{template_name})"
        ) from None
    text = template.render(
        wording=f"_wording{prompt.paraphrase}.j2",
        role=prompt.role,
        description=dataset.description if prompt.role else "",
        scale=scale_meanings(dataset),
        strictness_note=prompt.strictness_note and len(grades) > 2,
        middle_grades=grades[1:-1],
        top=grades[-1],
        bottom=grades[0],
        guidelines=dataset.guidelines.strip() if prompt.guidelines else "",
        query=example.query,
        fields=fields,
        n_images=n_images,
        shows_image=modality.include_image,
        shows_text=modality.include_text,
        explanation=prompt.explanation,
        aspects=prompt.aspects,
        raters=prompt.raters,
        final_key="final" if prompt.raters > 1 else "overall",
        confidence=prompt.confidence,
    )
    return RenderedPrompt(system=SYSTEM_PROMPT, text=tidy(text), fields=fields)


def tidy(text: str) -> str:
    """Collapse runs of blank lines left by optional template sections."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    out: list[str] = []
    for line in lines:
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    return "\n".join(out)
