"""The report reads the dataset's texts from the prepared-items cache its run filled."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mmjudge.data import load_dataset
from mmjudge.data import loading as loading_module
from mmjudge.report.browser import DatasetTexts, prepared_cache
from tests.data.test_prepared import catalogue


def stats_of(config: dict[str, Any]) -> Any:
    """The little of a dataset's statistics the texts need: its cells' summaries."""
    from mmjudge.store.summary import RunSummary

    summary = SimpleNamespace(
        config=config,
        dataset_config=lambda: RunSummary.dataset_config(summary),  # type: ignore[arg-type]
    )
    summary.config_part = lambda part: config.get(part) or {}
    summary.prepared_cache = lambda: RunSummary.prepared_cache(summary)  # type: ignore[arg-type]
    return SimpleNamespace(name="shop", cells=[SimpleNamespace(summary=summary)])


def test_the_runs_prepared_cache_is_found(tmp_path: Path) -> None:
    assert prepared_cache(stats_of({"paths": {"prepared_cache": str(tmp_path)}})) == tmp_path
    assert prepared_cache(stats_of({"paths": {}})) is None
    assert prepared_cache(stats_of({})) is None


def test_texts_come_from_the_cache_without_preparing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    cfg = catalogue(tmp_path / "data")
    cache = tmp_path / "prepared"
    prepared = {example.key: example for example in load_dataset(cfg, cache=cache)}
    config = {
        "dataset": {**dataclasses.asdict(cfg)},
        "paths": {"prepared_cache": str(cache)},
    }

    def refuse(*_args: object) -> None:
        raise AssertionError("prepared again")

    monkeypatch.setattr(loading_module, "_prepared", refuse)
    texts = DatasetTexts(stats_of(config))
    assert texts.note is None
    assert texts.head == prepared
