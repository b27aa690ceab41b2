"""Rendering a cell's prompts without running the template engine for every item.

Within one cell, two items' prompts differ only in the query, the values of the fields shown
and the number of images; which fields are shown (and so which template branches run) is the
prompt's *shape*. :class:`PromptRenderer` renders each shape once through
:func:`mmjudge.prompts.render` with placeholders in place of the query and the values, and
fills the placeholders for every item of that shape. The text is the same as a full render's
(the first item of each shape is rendered both ways and compared; a shape whose texts differ is
always rendered in full), so cache keys and prompt hashes do not change.
"""

from __future__ import annotations

import dataclasses
import re

from mmjudge.config import DatasetConfig, ModalityConfig, PromptConfig
from mmjudge.data.schema import Example
from mmjudge.prompts import (
    SYSTEM_PROMPT,
    RenderedPrompt,
    instruction_language,
    render,
    render_marked,
    unmarked,
)
from mmjudge.prompts import tidy as tidy

_SLOT = re.compile("\x00(\\d+)\x00")


def _slot(index: int) -> str:
    return f"\x00{index}\x00"


#: Characters ``str.splitlines`` breaks a line at.
_LINE_BREAK = re.compile("[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _plain(value: str) -> bool:
    """Whether filling ``value`` into a tidy skeleton leaves the text tidy.

    :func:`~mmjudge.prompts.tidy` strips the text, strips each line's end and collapses
    runs of blank lines. A value that is not empty, neither starts nor ends with whitespace
    and holds no line break adds no line, empties none and ends none with whitespace, so the
    filled text is tidy already and the pass over it (most of a filled prompt's cost) can be
    skipped; any other value's text is tidied as a full render's is.
    """
    return (
        bool(value)
        and not value[0].isspace()
        and not value[-1].isspace()
        and _LINE_BREAK.search(value) is None
    )


class PromptRenderer:
    """Renders the prompts of one cell (one modality, prompt and dataset)."""

    def __init__(self, modality: ModalityConfig, prompt: PromptConfig, dataset: DatasetConfig):
        self.modality = modality
        self.prompt = prompt
        self.dataset = dataset
        self._skeletons: dict[tuple[object, ...], str | None] = {}
        """Per shape: the skeleton as a :meth:`str.format` template (its literal braces
        doubled, ``{0}`` for the query, ``{1}``... for the values), with the marks of its
        parts (:func:`~mmjudge.prompts.render_marked`), or None for a shape rendered in
        full."""

    def _full(self, example: Example, n_images: int) -> RenderedPrompt:
        return render(example, self.modality, self.prompt, self.dataset, n_images=n_images)

    def render(self, example: Example, n_images: int) -> RenderedPrompt:
        """The same prompt :func:`mmjudge.prompts.render` gives for ``example``."""
        fields = (
            tuple(
                (name, value.strip()) for name, value in example.fields if value and value.strip()
            )
            if self.modality.include_text
            else ()
        )
        values = (example.query, *(value for _name, value in fields))
        if any("\x00" in value for value in values):
            return self._full(example, n_images)
        language = instruction_language(example, self.prompt, self.dataset)
        shape = (tuple(name for name, _value in fields), n_images, language)
        if shape not in self._skeletons:
            return self._learn(shape, example, fields, n_images, values)
        learnt = self._skeletons[shape]
        if learnt is None:
            return self._full(example, n_images)
        text = learnt.format(*values)
        if not all(map(_plain, values)):
            text = tidy(text)
        return unmarked(text, fields, language)

    def _learn(
        self,
        shape: tuple[object, ...],
        example: Example,
        fields: tuple[tuple[str, str], ...],
        n_images: int,
        values: tuple[str, ...],
    ) -> RenderedPrompt:
        """Render the shape's skeleton; keep it only if it reproduces ``example``'s prompt."""
        placeholders = dataclasses.replace(
            example,
            query=_slot(0),
            fields=tuple((name, _slot(i)) for i, (name, _value) in enumerate(fields, start=1)),
        )
        skeleton = render_marked(
            placeholders, self.modality, self.prompt, self.dataset, n_images=n_images
        )
        full = self._full(example, n_images)
        parts = _SLOT.split(skeleton.text)
        template = "".join(
            "{" + part + "}" if index % 2 else part.replace("{", "{{").replace("}", "}}")
            for index, part in enumerate(parts)
        )
        filled = unmarked(tidy(template.format(*values)), fields, full.language)
        ok = full.system == SYSTEM_PROMPT and filled == full
        self._skeletons[shape] = template if ok else None
        return full
