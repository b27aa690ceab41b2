"""Panels and cascades of cells judged with ``runner.samples``: one row per item from the
members' first samples, and samples of their own, each formed from the members' answers of
that sample, with the ensemble's own stability figures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from mmjudge.api.sweep_end import finish_sweep
from mmjudge.engine.cell import run_cell
from mmjudge.ensembles.cascades import build_cascade
from mmjudge.ensembles.panels import build_panel
from mmjudge.metrics.aggregate import aggregate
from mmjudge.store import load_run
from tests.engine.test_samples import ITEMS, Wavering
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import compose_config

SAMPLES = 3


@pytest.mark.slow
def test_a_sweep_with_samples_builds_ensembles_with_samples_of_their_own(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep"
    for prompt in ("default", "terse"):
        cfg = compose_config(
            [
                "model=lexical",
                f"prompt={prompt}",
                "runner.samples=2",
                "runner.progress=false",
                f"paths.prepared_cache={tmp_path / 'prepared'}",
            ]
        )
        run_cell(cfg, sweep / f"demo_fashion.lexical.text.{prompt}")
    done = finish_sweep(sweep, tmp_path / "reports", ensembles=True)
    assert done.ensembles and done.report is not None
    for folder in done.ensembles:
        rows = (folder / "judgments.jsonl").read_text().splitlines()
        keys = {(json.loads(r)["query_id"], json.loads(r)["result_id"]) for r in rows}
        assert len(rows) == len(keys) == 240  # one row per item, not one per sample
        repeats = [json.loads(r) for r in (folder / "samples.jsonl").read_text().splitlines()]
        assert len(repeats) == 240 and {r["sample"] for r in repeats} == {1}
        block = load_run(folder).summary.stability
        assert block is not None and block.samples == 2 and block.n_unstable == 0
    page = (done.report / "index.html").read_text(encoding="utf-8")
    assert "Does each judge agree with itself?" in page


def _cell(tmp_path: Path, server: LoopbackServer, prompt: str) -> Path:
    cfg = compose_config(
        [
            "model=gpt4o_mini",
            "modality=text",
            f"prompt={prompt}",
            f"model.base_url={server.openai_base_url}",
            f"dataset.limit={ITEMS}",
            "runner.progress=false",
            f"runner.samples={SAMPLES}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.prepared_cache={tmp_path / 'prepared'}",
            f"paths.image_cache={tmp_path / 'images'}",
        ]
    )
    out = tmp_path / "sweep" / prompt
    run_cell(cfg, out)
    return out


def _unstable(labels: list[np.ndarray]) -> int:
    table = np.vstack(labels)
    return sum(len({v for v in column if not math.isnan(v)}) > 1 for column in table.T)


@pytest.mark.slow
def test_panel_and_cascade_samples_come_from_the_members_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    with LoopbackServer(responder=Wavering(moving=6)) as server:
        members = [_cell(tmp_path, server, prompt) for prompt in ("default", "terse")]
    panel_dir, cascade_dir = tmp_path / "ens" / "panel", tmp_path / "ens" / "cascade"
    panel = build_panel(members, panel_dir, how="majority-max")
    cascade = build_cascade(members[0], members[1], cascade_dir, rules=("middle",))
    views = [load_run(m).samples() for m in members]
    assert [len(v) for v in views] == [SAMPLES, SAMPLES]
    keys = list(views[0][0].rows)
    grades = views[0][0].grades
    low, high = min(grades), max(grades)
    for k in range(SAMPLES):
        votes = np.vstack([v[k].labels(keys) for v in views])
        own = load_run(panel_dir).samples()[k].labels(keys)
        assert np.array_equal(own, aggregate(votes, "majority-max", grades, 0), equal_nan=True)
        cheap, dear = votes
        middle = ~np.isnan(cheap) & (cheap > low) & (cheap < high)
        expected = np.where(middle & ~np.isnan(dear), dear, cheap)
        own = load_run(cascade_dir).samples()[k].labels(keys)
        assert np.array_equal(own, expected, equal_nan=True)
    repeats_paid = sum(load_run(m).summary.stability.total_usd for m in members)
    for folder, summary in ((panel_dir, panel), (cascade_dir, cascade)):
        block = summary.stability
        assert block is not None and block.samples == SAMPLES and block.spent_usd == 0
        labels = [run.labels(keys) for run in load_run(folder).samples()]
        assert block.n_unstable == _unstable(labels) > 0
        assert block.kappa.estimate < 1
        assert block.total_usd <= repeats_paid + 1e-12
    assert panel.stability is not None
    assert panel.stability.total_usd == pytest.approx(repeats_paid)  # every member, each item
