"""An item's language and its slices' values are attributes, read from the dataset config or
from a column. The language column is taken out of the text the judge is shown; mapping a
slice changes nothing the judge is shown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.config import DatasetConfig
from mmjudge.data.loading import load_dataset
from mmjudge.errors import ConfigError


def tiny(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rows = [
        {
            "query_id": "q1",
            "query": "sapatos pretos",
            "result_id": "r1",
            "lang": "pt",
            "aisle": "footwear",
            "fields": {"title": "Sapatos pretos", "category": "shoes"},
            "labels": {"a": 2},
        },
        {
            "query_id": "q2",
            "query": "black shoes",
            "result_id": "r2",
            "aisle": "footwear",
            "fields": {"title": "Black shoes", "category": "shoes", "lang": "en"},
            "labels": {"a": 1},
        },
    ]
    (root / "items.jsonl").write_text("\n".join(map(json.dumps, rows)) + "\n")
    return root


def config(root: Path, **kwargs: object) -> DatasetConfig:
    cfg = DatasetConfig(name="tiny", path=str(root), **kwargs)  # type: ignore[arg-type]
    cfg.validate()
    return cfg


def test_one_language_for_every_item_from_the_config(tmp_path: Path) -> None:
    items = list(load_dataset(config(tiny(tmp_path), language="tet")))
    assert [e.attribute("language") for e in items] == ["tet", "tet"]
    # Nothing the judge is shown changes.
    assert dict(items[0].fields) == {"title": "Sapatos pretos", "category": "shoes"}


def test_a_language_per_item_from_a_column_is_not_shown(tmp_path: Path) -> None:
    # The column may be a top-level key or one of the fields: either way it is not shown.
    items = list(load_dataset(config(tiny(tmp_path), language_field="lang")))
    assert [e.attribute("language") for e in items] == ["pt", "en"]
    assert all("lang" not in dict(e.fields) for e in items)


def test_a_slice_is_an_attribute_and_leaves_what_the_judge_reads_as_it_was(
    tmp_path: Path,
) -> None:
    root = tiny(tmp_path)
    plain = list(load_dataset(config(root)))
    sliced = list(load_dataset(config(root, slices={"category": "category", "aisle": "aisle"})))
    assert [e.attribute("category") for e in sliced] == ["shoes", "shoes"]
    assert [e.attribute("aisle") for e in sliced] == ["footwear", "footwear"]
    # A shown field stays shown, a column that was not shown stays out: same prompts, same
    # cache keys as the cell without the slice.
    assert [e.fields for e in sliced] == [e.fields for e in plain]
    assert all("category" in dict(e.fields) and "aisle" not in dict(e.fields) for e in sliced)


def test_attributes_survive_the_prepared_items_cache(tmp_path: Path) -> None:
    cfg = config(tiny(tmp_path / "data"), language_field="lang")
    first = list(load_dataset(cfg, cache=tmp_path / "prepared"))
    again = list(load_dataset(cfg, cache=tmp_path / "prepared"))
    assert any((tmp_path / "prepared").iterdir())
    assert first == again and again[0].attribute("language") == "pt"


def test_language_and_language_field_together_name_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"dataset\.language_field"):
        config(tmp_path, language="pt", language_field="lang")
