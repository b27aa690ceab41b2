"""Item attributes: what a dataset says about an item that the judge is never shown.

An item's ``language`` (``dataset.language`` for every item, or the column
``dataset.language_field``) and the value of each slice the dataset maps
(``dataset.slices``: slice name → column) are attributes. A loader reads the attribute columns
that are not among the item's text (:func:`extra_columns`, kept by column in the item's
attributes); :func:`with_attributes` then gathers every attribute by name, from the text or
from those columns.

Mapping a slice never changes what the judge reads: a column shown without the slice stays
shown (and the cell keeps its prompts and cache keys), one that was not stays out. The
language column is the exception: it is metadata about the text, and never shown.
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
    (column, text) pairs for a loader to keep in the item's attributes (by column, until
    :func:`with_attributes` names them)."""
    out = []
    for column in attribute_columns(cfg).values():
        value = row.get(column)
        if column not in shown and value is not None and not isinstance(value, dict | list):
            out.append((column, str(value)))
    return out


def with_attributes(example: Example, cfg: DatasetConfig) -> Example:
    """``example`` with its attributes by name, read from its shown fields or from the
    columns its loader kept beside them; the language column leaves the fields shown."""
    columns = attribute_columns(cfg)
    if not columns and not cfg.language:
        return example
    shown = dict(example.fields)
    unshown = dict(example.attributes)
    found: dict[str, str] = {}
    for name, column in columns.items():
        value = shown.get(column, unshown.get(column))
        if value is not None and value.strip():
            found[name] = value.strip()
    if cfg.language:
        found[LANGUAGE] = cfg.language
    kept = tuple((name, value) for name, value in example.fields if name != cfg.language_field)
    return replace(example, fields=kept, attributes=tuple(sorted(found.items())))
