"""Item attributes: what a dataset says about an item that the judge is never shown.

An item's ``language`` (``dataset.language`` for every item, or the column
``dataset.language_field``) and the value of each slice the dataset maps
(``dataset.slices``: slice name → column) are attributes. A loader reads the columns with
the item's text; :func:`with_attributes` then moves them from the text shown to the judge
into :attr:`~mmjudge.data.schema.Example.attributes`, by name. A slice's column that
``dataset.text_fields`` names stays shown as well; the language column never does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mmjudge.config import DatasetConfig
from mmjudge.data.schema import Example

#: The attribute holding an item's language code.
LANGUAGE = "language"


def attribute_columns(cfg: DatasetConfig) -> dict[str, str]:
    """Attribute name → the column it is read from."""
    out = {str(name): str(column) for name, column in cfg.slices.items()}
    if cfg.language_field:
        out[LANGUAGE] = cfg.language_field
    return out


def declares_language(cfg: DatasetConfig) -> bool:
    """Whether the dataset gives its items' language."""
    return bool(cfg.language or cfg.language_field or LANGUAGE in cfg.slices)


def extra_columns(
    cfg: DatasetConfig, row: Mapping[str, Any], shown: tuple[str, ...]
) -> list[tuple[str, str]]:
    """The attribute columns of a raw ``row`` that are not among the ``shown`` fields, as
    (column, text) pairs for a loader to add to the item's fields before the split."""
    out = []
    for column in attribute_columns(cfg).values():
        value = row.get(column)
        if column not in shown and value is not None and not isinstance(value, dict | list):
            out.append((column, str(value)))
    return out


def with_attributes(example: Example, cfg: DatasetConfig) -> Example:
    """``example`` with its attribute columns moved out of its fields into its attributes."""
    columns = attribute_columns(cfg)
    if not columns and not cfg.language:
        return example
    fields = dict(example.fields)
    found = dict(example.attributes)
    for name, column in columns.items():
        value = fields.get(column)
        if value is not None and value.strip():
            found[name] = value.strip()
    if cfg.language:
        found[LANGUAGE] = cfg.language
    hidden = set(columns.values()) - (set(cfg.text_fields) - {cfg.language_field})
    kept = tuple((name, value) for name, value in example.fields if name not in hidden)
    return replace(example, fields=kept, attributes=tuple(sorted(found.items())))
