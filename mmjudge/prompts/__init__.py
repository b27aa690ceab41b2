"""Prompt templates (package data) and their rendering.

A prompt is one design (what is shown, what is asked) in one wording. The design comes from
:class:`~mmjudge.config.PromptConfig`: role statement, dataset description and guidelines,
strictness note, aspect grades, simulated raters, a stated confidence, an explanation. The
wording is ``_wording<N>.j2`` for ``prompt.paraphrase = N``: each wording file phrases every
sentence of the design differently, so comparing wordings measures how much agreement moves
with wording alone. Rendering is a pure function of the example and the configs.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import jinja2

from mmjudge.config import DatasetConfig, ModalityConfig, PromptConfig
from mmjudge.data.attributes import LANGUAGE
from mmjudge.data.schema import Example, dataset_root
from mmjudge.errors import ConfigError


def _translation_file(name: str) -> str | None:
    """A translation's wording, found by its absolute path (see :func:`wording_for`)."""
    path = Path(name)
    return path.read_text(encoding="utf-8") if path.is_absolute() and path.is_file() else None


_ENV = jinja2.Environment(
    loader=jinja2.ChoiceLoader(
        [jinja2.PackageLoader("mmjudge", "prompts"), jinja2.FunctionLoader(_translation_file)]
    ),
    autoescape=False,
    keep_trailing_newline=False,
    undefined=jinja2.StrictUndefined,
)

SYSTEM_PROMPT = "You grade search results for relevance. Answer in the format you are asked for."

#: Rendered where the static part of a judge prompt ends, where the result's block starts
#: and where the answer's instructions start, and taken out again (characters from Unicode's
#: private use area, which no wording or dataset text holds).
_STATIC_END = "\ue000"
_RESULT_START = "\ue001"
_ANSWER_START = "\ue002"
_MARKS = (_STATIC_END, _RESULT_START, _ANSWER_START)


@dataclass(frozen=True)
class RenderedPrompt:
    system: str
    text: str
    fields: tuple[tuple[str, str], ...]
    """The fields shown (empty ones dropped; none at all for image-only)."""
    language: str = "en"
    """The language of the instructions: ``en``, or the item's language whose translation
    was used (``prompt.language=data``)."""
    static_chars: int = 0
    """How many leading characters of ``text`` are the same for every item of the cell
    (instructions, scale, guidelines: everything before the query); 0 when the template
    marks no such part."""
    result_chars: int = 0
    """Where the result's block starts in ``text`` (after the query's line); 0 when the
    template marks none."""
    answer_chars: int = 0
    """Where the instructions for the answer start in ``text`` (after the result's block);
    0 when the template marks none. ``text[result_chars:answer_chars]`` is what shows the
    result, which a call about several results repeats for each
    (:mod:`mmjudge.prompts.passages`)."""


def package_template(name: str) -> jinja2.Template:
    """A template shipped under ``mmjudge/prompts`` by its file name."""
    return _ENV.get_template(name)


def instruction_language(example: Example, prompt: PromptConfig, dataset: DatasetConfig) -> str:
    """The language the item's instructions are in: with ``prompt.language=data`` its own
    language where ``dataset.translations`` gives one, else ``en``."""
    if prompt.language != "data":
        return "en"
    code = example.attribute(LANGUAGE)
    return code if code is not None and code in dataset.translations else "en"


def wording_for(language: str, prompt: PromptConfig, dataset: DatasetConfig) -> str:
    """The wording template of instructions in ``language``: the prompt's own
    (``_wording<N>.j2``) for ``en``, else the dataset's translation, by its absolute path."""
    if language == "en":
        return f"_wording{prompt.paraphrase}.j2"
    path = dataset_root(dataset) / dataset.translations[language]
    if not path.is_file():
        raise ConfigError(
            f"dataset.translations.{language}: {path} is not a file; write the translated "
            "wording there (the macros of mmjudge/prompts/_wording0.j2) or fix the path"
        )
    return str(path.resolve())


def scale_meanings(dataset: DatasetConfig) -> list[tuple[int, str]]:
    """The grade definitions shown to the judge, from the dataset config
    (:meth:`~mmjudge.config.dataset.ScaleConfig.definitions`)."""
    definitions = dataset.scale.definitions()
    missing = [grade for grade in dataset.scale.grades if grade not in definitions]
    if missing:  # a config not validated (validate() refuses it in the same words)
        raise ConfigError(dataset.scale.undefined(missing))
    return [(grade, definitions[grade]) for grade in dataset.scale.grades]


def render(
    example: Example,
    modality: ModalityConfig,
    prompt: PromptConfig,
    dataset: DatasetConfig,
    n_images: int,
) -> RenderedPrompt:
    """Render the prompt one judge reads for one example."""
    marked = render_marked(example, modality, prompt, dataset, n_images)
    return unmarked(marked.text, marked.fields, marked.language)


def render_marked(
    example: Example,
    modality: ModalityConfig,
    prompt: PromptConfig,
    dataset: DatasetConfig,
    n_images: int,
) -> RenderedPrompt:
    """The prompt of :func:`render` with the marks of its parts still in its text (its
    ``*_chars`` left at 0): :func:`unmarked` takes them out."""
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
    language = instruction_language(example, prompt, dataset)
    render_in = functools.partial(_render_in, template, language)
    text = render_in(
        wording=wording_for(language, prompt, dataset),
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
        static_end=_STATIC_END,
        result_start=_RESULT_START,
        answer_start=_ANSWER_START,
    )
    return RenderedPrompt(system=SYSTEM_PROMPT, text=tidy(text), fields=fields, language=language)


def unmarked(
    text: str, fields: tuple[tuple[str, str], ...], language: str = "en"
) -> RenderedPrompt:
    """The prompt whose text, as :func:`render_marked` gives it, holds the marks of its
    parts: the text without them, and where each stood in the text left (0 for a mark the
    template does not render)."""
    places = [text.find(mark) for mark in _MARKS]
    found = sorted(at for at in places if at >= 0)
    # Each mark's place once the marks before it are taken out.
    static_chars, result_chars, answer_chars = (
        at - found.index(at) if at >= 0 else 0 for at in places
    )
    for mark in _MARKS:
        if mark in text:
            text = text.replace(mark, "")
    return RenderedPrompt(
        system=SYSTEM_PROMPT,
        text=text,
        fields=fields,
        language=language,
        static_chars=static_chars,
        result_chars=result_chars,
        answer_chars=answer_chars,
    )


def _render_in(template: jinja2.Template, language: str, **variables: object) -> str:
    """``template`` rendered; a translation that lacks a macro the prompt uses is named."""
    try:
        return template.render(**variables)
    except jinja2.UndefinedError as error:
        if language == "en":
            raise
        raise ConfigError(
            f"dataset.translations.{language}: {error.message}; the translation must define "
            "every macro of mmjudge/prompts/_wording0.j2 that this prompt uses"
        ) from None


def tidy(text: str) -> str:
    """Collapse runs of blank lines left by optional template sections."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    out: list[str] = []
    for line in lines:
        if line == "" and out and out[-1] == "":
            continue
        out.append(line)
    return "\n".join(out)
