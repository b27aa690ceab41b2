"""``summary.json`` read and written through the typed :class:`RunSummary`: summaries written by
earlier versions read back with every field, a summary written now keeps every field the
earlier layout had, and reading and writing change nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mmjudge.engine.cell import run_cell
from mmjudge.store import RunSummary, read_summary
from mmjudge.store.summary import SUMMARY_SCHEMA_VERSION
from tests.helpers import compose_config

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "summaries"
#: Written by version 1 (a sync cell, a skipped one, a panel and a cascade of a demo sweep).
V1 = sorted(FIXTURES.glob("v1_*.json"))
#: Keys of the resolved config that version 2 keeps elsewhere: old path -> new path.
MOVED = {
    "config.results_dir": "config.paths.results",
    "config.reports_dir": "config.paths.reports",
    "config.runner.cache_path": "config.paths.response_cache",
    "config.images.cache_dir": "config.paths.image_cache",
    "config.runner.seed": "config.seed",
    "config.runner.report": "config.report.build",
}
#: Fields version 1 did not write for every kind of run and version 2 does (the forecast
#: names its output-token basis too).
ADDED = {
    "kind",
    "status_reason",
    "exit_code",
    "stopped_because",
    "endpoint",
    "errors",
    "forecast.output_basis",
    "cost.possibly_billed_requests",
    "cost.possibly_billed_usd",
    "calls.maybe_resent",
    "calls.possibly_billed",
    "calls.possibly_billed_usd",
    "calls.abandoned_usd",
    "calls.handed_on",
    "calls.handed_on_usd",
}


def leaves(tree: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (dotted path, value) of a JSON tree, lists as values."""
    if isinstance(tree, dict) and tree:
        for key, value in tree.items():
            yield from leaves(value, f"{path}.{key}" if path else str(key))
    else:
        yield path, tree


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("path", V1, ids=[p.stem for p in V1])
def test_a_version_1_summary_reads_back_with_every_field(path: Path) -> None:
    old = load(path)
    new = dict(leaves(RunSummary.from_json(old).to_json()))
    for key, value in leaves(old):
        if key == "schema_version":
            continue
        where = next((new_key for old_key, new_key in MOVED.items() if key == old_key), key)
        assert where in new, f"{key} lost"
        assert new[where] == value, key
    assert new["schema_version"] == SUMMARY_SCHEMA_VERSION
    assert set(new) - {MOVED.get(k, k) for k in dict(leaves(old))} <= {
        *ADDED,
        "errors.by_kind",
        "errors.first",
    }


@pytest.mark.parametrize("path", V1, ids=[p.stem for p in V1])
def test_reading_and_writing_change_nothing(path: Path) -> None:
    summary = RunSummary.from_json(load(path))
    assert RunSummary.from_json(summary.to_json()) == summary
    again = RunSummary.from_json(json.loads(json.dumps(summary.to_json())))
    assert again == summary


def test_a_summary_from_before_statuses_is_complete() -> None:
    old = load(FIXTURES / "v1_complete.json")
    for key in ("status", "status_reason", "exit_code", "stopped_because", "errors"):
        del old[key]
    summary = RunSummary.from_json(old)
    assert summary.status.status == "complete" and summary.status.exit_code == 0
    assert summary.kind == "single" and summary.errors.by_kind == {}


def test_measures_a_summary_was_not_written_with_read_as_missing_and_others_are_kept() -> None:
    """The metrics block holds whichever measures its run computed: one added since reads as
    missing (and the report scores the cell again), one this version lacks is kept."""
    old = load(FIXTURES / "v1_complete.json")
    del old["metrics"]["mae"]
    old["metrics"]["from_a_later_version"] = 0.25
    old["metrics"]["later_by_annotator"] = {"a": 0.5}
    metrics = RunSummary.from_json(old).metrics
    assert metrics.value("mae") is None and metrics.mae is None
    assert metrics.value("from_a_later_version") == 0.25
    assert metrics.to_json()["later_by_annotator"] == {"a": 0.5}
    assert metrics.kappa == old["metrics"]["kappa"] and metrics.alpha == old["metrics"]["alpha"]
    assert metrics.human_human_kappa == old["metrics"]["human_human_kappa"]


def test_typed_views_of_the_config() -> None:
    summary = RunSummary.from_json(load(FIXTURES / "v1_complete.json"))
    dataset = summary.dataset_config()
    assert dataset is not None and dataset.name == "demo_fashion"
    assert dataset.scale.meanings[2].startswith("relevant")
    model = summary.model_config()
    assert (model.name, model.provider) == ("lexical", "lexical")
    assert summary.relevant_from == 1.0 and summary.name == "lexical/default/text"
    cascade = RunSummary.from_json(load(FIXTURES / "v1_cascade.json"))
    assert cascade.kind == "cascade" and cascade.ensemble is not None
    assert cascade.ensemble.how == "middle+unparseable"
    assert [m.role for m in cascade.ensemble.members] == ["cheap", "expensive"]
    assert cascade.dataset_config() is None


def test_a_summary_written_now_keeps_the_fields_of_version_1(tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "dataset.limit=12",
            f"paths.results={tmp_path}",
            "runner.progress=false",
        ]
    )
    run_dir = tmp_path / "run"
    summary = run_cell(cfg, run_dir)
    assert isinstance(summary, RunSummary)
    written = load(run_dir / "summary.json")
    assert RunSummary.from_json(written) == read_summary(run_dir) == summary
    now = dict(leaves(written))
    for key, _value in leaves(load(FIXTURES / "v1_complete.json")):
        if key.startswith(("config.", "packages.", "metrics.pairwise")):
            continue
        assert key in now, f"{key} is no longer written"
