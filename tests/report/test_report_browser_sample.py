"""The disagreement browser's sample: the same items on every build of the same sweep,
whatever order its rows were written in, and drawn from the run's seed."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from mmjudge.report import build_report
from mmjudge.report.browser import item_rank, sample_order
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep


def _payload(report: Path) -> dict:
    html = (report / "index.html").read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="browser-data">(.*?)</script>', html)
    assert found
    return dict(json.loads(found.group(1)))


def _shuffle_rows(sweep: Path, seed: int) -> None:
    """Rewrite every judgments file with its rows in another order, as a run with many
    calls in flight writes them (answers come back in any order)."""
    for path in sweep.glob("*/judgments.jsonl"):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        random.Random(seed).shuffle(lines)
        path.write_text("".join(lines), encoding="utf-8")


def _set_seed(sweep: Path, seed: int) -> None:
    for path in sweep.glob("*/summary.json"):
        summary = json.loads(path.read_text(encoding="utf-8"))
        summary["config"]["seed"] = seed
        path.write_text(json.dumps(summary), encoding="utf-8")


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser-sample")
    dataset = FakeDataset("shop", n_queries=40, images=2)
    judges = [FakeJudge("weak", accuracy=0.4), FakeJudge("fair", accuracy=0.6)]
    return write_sweep(root / "sweeps" / "a", [dataset], judges).root


def test_the_sample_does_not_depend_on_the_order_of_rows(sweep: Path, tmp_path: Path) -> None:
    # Each build from shuffled rows gives the first build's payload, so building again from
    # the same rows does too.
    first = _payload(
        build_report(sweep, tmp_path / "reports", "first", max_disagreements=5, n_boot=20)
    )
    shuffled = tmp_path / "sweeps" / "shuffled"
    shutil.copytree(sweep, shuffled)
    for seed in (1, 2):
        _shuffle_rows(shuffled, seed)
        name = f"shuffled{seed}"
        payload = _payload(
            build_report(shuffled, tmp_path / "reports", name, max_disagreements=5, n_boot=20)
        )
        assert payload == first
    assert len(first["rows"]) == 10  # 5 per judge: a sample, not every disagreement


def test_the_sample_is_drawn_from_the_runs_seed(sweep: Path, tmp_path: Path) -> None:
    base = _payload(
        build_report(sweep, tmp_path / "reports", "seed0", max_disagreements=5, n_boot=20)
    )
    other = tmp_path / "sweeps" / "seed7"
    shutil.copytree(sweep, other)
    _set_seed(other, 7)
    moved = _payload(
        build_report(other, tmp_path / "reports", "seed7", max_disagreements=5, n_boot=20)
    )
    assert {tuple(i[:3]) for i in moved["items"]} != {tuple(i[:3]) for i in base["items"]}


def test_items_at_the_head_of_the_dataset_come_first() -> None:
    keys = [f"q{i // 10}\tr{i}" for i in range(100)]
    codes = np.arange(100)[::-1]  # the rows in any order
    in_window = np.arange(100) < 20
    picked = codes[sample_order(keys, codes, in_window, 0, 30)]
    assert set(picked[:20].tolist()) == set(range(20))
    head = sorted(range(20), key=lambda c: item_rank(0, *keys[c].split("\t")))
    assert picked[:20].tolist() == head
    rest = sorted(range(20, 100), key=lambda c: item_rank(0, *keys[c].split("\t")))
    assert picked[20:].tolist() == rest[:10]
    assert codes[sample_order(keys, codes, in_window, 0, 5)].tolist() == head[:5]


def test_item_rank_is_stable() -> None:
    """A fixed value: the order must not change between processes or versions of Python."""
    assert item_rank(0, "q1", "r1") == item_rank(0, "q1", "r1")
    assert item_rank(0, "q1", "r1") != item_rank(1, "q1", "r1")
    assert item_rank(0, "q1", "r1") == 0x89E9E7B219097E97  # blake2b, not hash(): not salted
