"""What a dataset can serve, counted while it is validated (no extra pass over the data).

The validation pass before the first call reads every example anyway; :func:`survey` counts
on the way what decides whether a cell can run at all (are there result texts? images?) and
what the text cap cuts, for the dry run.

The check may read the items as the loader gives them, before their HTML is converted and
their text cut (:meth:`~mmjudge.engine.examples.ExampleStream.checked`): converting a scraped
catalogue takes far longer than checking it, and is done while the calls go out. Whether any
item has text then converts HTML fields only until one item shows some: an item with a plain
text field settles it at once, and only a dataset whose text is all HTML that shows nothing
is converted through to its end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mmjudge.config import DatasetConfig, ModalityConfig
from mmjudge.data.page_text import html_to_text
from mmjudge.data.schema import Example
from mmjudge.errors import ConfigError, DatasetError


@dataclass
class DatasetSurvey:
    """Counts over a dataset's examples, as the check reads them (see the module)."""

    items: int = 0
    has_text: bool = False
    """Whether any item has a non-empty text field (its HTML converted)."""
    with_images: int = 0
    """Items with at least one image."""
    truncated: int = 0
    """Items whose text was cut to ``dataset.max_text_tokens``."""
    tokens_removed: int = 0
    """Approximate tokens cut from those items."""
    field_names: set[str] = field(default_factory=set)
    """Names of the text fields seen."""
    missing_images: int = 0
    """Items that name an image that does not exist."""
    first_missing_image: str | None = None
    """The first such image's one-line message (file, line, path)."""
    html: frozenset[str] | None = field(default=None, compare=False)
    """The fields whose HTML is converted (every one when empty; None: none), as
    :func:`~mmjudge.data.page_text.html_columns` gives them."""

    def add(self, example: Example) -> None:
        self.items += 1
        if not self.has_text:
            self.has_text = any(self._shows_text(name, value) for name, value in example.fields)
        self.with_images += bool(example.images)
        if example.missing_images:
            self.missing_images += 1
            if self.first_missing_image is None:
                self.first_missing_image = example.missing_images[0].problem
        self.truncated += example.truncated
        self.tokens_removed += example.tokens_removed
        self.field_names.update(name for name, _value in example.fields)

    def _shows_text(self, name: str, value: str) -> bool:
        if not value.strip():
            return False
        if self.html is None or (self.html and name not in self.html):
            return True
        return bool(html_to_text(value).strip())


def survey(examples: Iterable[Example], html: frozenset[str] | None = None) -> DatasetSurvey:
    """The counts over ``examples``; ``html`` names the fields whose HTML the dataset
    converts (:func:`~mmjudge.data.page_text.html_columns`), for items read before that."""
    counts = DatasetSurvey(html=html)
    for example in examples:
        counts.add(example)
    return counts


def check_html_fields(counts: DatasetSurvey, dataset: DatasetConfig) -> None:
    """A field named in ``dataset.html_fields`` that no item has is a typo: refuse it."""
    unknown = [name for name in dataset.html_fields if name not in counts.field_names]
    if unknown and counts.items:
        raise ConfigError(
            f"dataset.html_fields names {', '.join(map(repr, unknown))}, which no item of "
            f"dataset '{dataset.name}' has; its text fields are: "
            f"{', '.join(sorted(counts.field_names)) or '(none)'}"
        )


def check_images(counts: DatasetSurvey, modality: ModalityConfig) -> None:
    """A cell that shows images stops on an image the dataset names and does not have, with
    the file and line of the first (:class:`~mmjudge.errors.DatasetError`, before any call);
    a cell that does not show them never looks at them, and runs."""
    if not modality.include_image or counts.first_missing_image is None:
        return
    others = counts.missing_images - 1
    more = ""
    if others:
        items = f"{others:,} more item names" if others == 1 else f"{others:,} more items name"
        more = f" ({items} an image that is not there)"
    raise DatasetError(
        f"{counts.first_missing_image}{more}; add the file or fix the path "
        f"(modality '{modality.name}' shows the result's image; a text-only cell runs "
        "without it)"
    )


def unserved(counts: DatasetSurvey, modality: ModalityConfig, dataset: DatasetConfig) -> str | None:
    """Why the dataset cannot serve this modality at all, or ``None`` when it can.

    A dataset that serves some items only (a few results lack an image) is served: those
    items become error rows, as any other per-item failure.
    """
    if modality.include_image and not counts.with_images:
        return (
            f"dataset '{dataset.name}' has no images: none of its {counts.items} items has one "
            f"(modality '{modality.name}' shows the result's image)"
        )
    if modality.include_text and not counts.has_text:
        instead = "; modality 'image' judges the image alone" if counts.with_images else ""
        return (
            f"dataset '{dataset.name}' has no result text: none of its {counts.items} items has "
            f"a non-empty text field (modality '{modality.name}' shows the result's text){instead}"
        )
    return None


def unserved_by_config(modality: ModalityConfig, dataset: DatasetConfig) -> str | None:
    """What the config alone rules out, before the dataset is read."""
    if modality.include_image and dataset.max_images == 0:
        return (
            f"dataset '{dataset.name}' shows no images (dataset.max_images is 0; modality "
            f"'{modality.name}' shows the result's image)"
        )
    return None
