"""The report by slice: a free judge's cell on the demo dataset, broken down by a field the
dataset maps and by query length; the slices partition the items and each slice's κ is the
κ of its items computed by hand from the rows."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mmjudge.engine.cell import run_cell
from mmjudge.errors import ConfigError
from mmjudge.metrics import cohen_kappa, consensus
from mmjudge.report.analysis import analyse
from mmjudge.report.build import build_report
from mmjudge.report.load import cell_table
from mmjudge.report.slice_section import by_slice, query_length
from tests.helpers import compose_config

pytestmark = pytest.mark.slow  # a whole cell and a report


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    cfg = compose_config(
        [
            "model=lexical",
            "+dataset.slices.category=product_type",
            "report.slices=[category,query_length]",
            "runner.progress=false",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        ]
    )
    run_cell(cfg, tmp_path / "sweep" / "run")
    return tmp_path / "sweep" / "run"


def test_slices_partition_the_items_and_match_a_hand_count(run_dir: Path) -> None:
    analysis = analyse(cell_table(run_dir.parent), n_boot=100)
    found = by_slice(analysis, ["category", "query_length"])["demo_fashion"]
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").open()]
    items = json.loads((run_dir / "summary.json").read_text())["metrics"]["n_scored"]
    for entry in found:
        scores = entry.scores.scores
        if entry.slice == "query_length":
            # every item has a query: the buckets hold every scored item once
            assert sum(score.n_items for score in scores.values()) == items
        for value, score in scores.items():
            mine = [r for r in rows if _value(r, entry.slice, run_dir) == value]
            human = consensus(
                {
                    name: np.asarray([r["human_labels"][name] for r in mine], dtype=float)
                    for name in mine[0]["human_labels"]
                }
            )
            judge = np.asarray([r["label"] for r in mine], dtype=float)
            assert score.n_items == len(mine)
            expected = cohen_kappa(human, judge, labels=(0.0, 1.0, 2.0))
            assert score.kappa.estimate == pytest.approx(expected, nan_ok=True)
            assert entry.unparseable[value] == 0.0


_ITEMS: dict[str, dict] = {}


def _value(row: dict, name: str, run_dir: Path) -> str | None:
    """The slice of a row's item, read from the dataset file itself."""
    if not _ITEMS:
        path = Path(__file__).resolve().parents[2] / "datasets" / "demo_fashion"
        for line in (path / "items.jsonl").open():
            item = json.loads(line)
            _ITEMS[f"{item['query_id']}\t{item['result_id']}"] = item
    item = _ITEMS[f"{row['query_id']}\t{row['result_id']}"]
    if name == "query_length":
        return query_length(item["query"])
    return item["fields"].get("product_type") or None


def test_the_page_shows_the_slices_and_the_worst_on_the_card(run_dir: Path) -> None:
    out = build_report(run_dir.parent, run_dir.parent.parent / "reports", n_boot=100)
    page = (out / "index.html").read_text()
    assert 'id="slices"' in page and "category=" in page and "query_length=1-2" in page
    assert "<dt>Worst slice</dt>" in page


def test_an_unmapped_slice_names_the_setting(run_dir: Path) -> None:
    analysis = analyse(cell_table(run_dir.parent), n_boot=100)
    with pytest.raises(ConfigError, match=r"dataset.slices.language=<field>"):
        by_slice(analysis, ["language"])
    # Asked for by a run rather than the user: a dataset that does not map it goes without.
    assert by_slice(analysis, ["language"], strict=False) == {}


def test_tokens_per_thousand_characters_are_the_rows_tokens_over_the_items_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fixtures.loopback_server import LoopbackServer
    from tests.perturb.test_wire import cell, picture_dataset

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    data = picture_dataset(tmp_path / "data")
    with LoopbackServer() as server:
        cell(server, tmp_path, data, "none")
    (run,) = tmp_path.glob("run-none-*")
    (entry,) = by_slice(analyse(cell_table(run), n_boot=50), ["has_image"])["tiny"]
    rows = [json.loads(line) for line in (run / "judgments.jsonl").open()]
    items = {
        f"{i['query_id']}\t{i['result_id']}": i
        for i in map(json.loads, (data / "items.jsonl").open())
    }
    chars = sum(
        len(item["query"]) + sum(len(v) for v in item["fields"].values())
        for item in (items[f"{r['query_id']}\t{r['result_id']}"] for r in rows)
    )
    tokens = sum(r["input_tokens"] for r in rows)
    assert tokens > 0
    assert entry.tokens_per_k_chars["yes"] == pytest.approx(1000 * tokens / chars)
    assert entry.usd_per_million["yes"] == pytest.approx(
        json.loads((run / "summary.json").read_text())["cost"]["usd_per_million"]
    )
