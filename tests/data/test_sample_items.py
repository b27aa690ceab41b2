"""dataset.sample_items: N graded items in one seeded order, the order a race judges in."""

from __future__ import annotations

from pathlib import Path

import mmjudge
from mmjudge.data.loading import load_dataset
from mmjudge.data.sample import item_rank, sample_item_keys
from mmjudge.data.schema import Example
from mmjudge.errors import ConfigError
from mmjudge.studies.race_rule import race_order


def example(q: str, r: str, graded: bool = True) -> Example:
    return Example(q, f"query {q}", r, (("name", r),), labels={"a": 1} if graded else {})


def test_a_larger_sample_keeps_every_item_of_a_smaller_one_and_never_an_ungraded_item() -> None:
    items = [example(f"q{i % 7}", f"d{i}", graded=i % 5 != 0) for i in range(200)]
    samples = [sample_item_keys(items, n, seed=3) for n in (10, 40, 90, 500)]
    assert [len(s) for s in samples] == [10, 40, 90, 160]
    assert samples[0] < samples[1] < samples[2] < samples[3]
    assert all(int(r[1:]) % 5 for _, r in samples[3])
    assert sample_item_keys(reversed(items), 40, seed=3) == samples[1]  # file order is no matter
    assert sample_item_keys(items, 40, seed=4) != samples[1]


def test_the_sample_is_the_race_orders_first_items() -> None:
    items = [example(f"q{i % 4}", f"d{i}") for i in range(60)]
    order = race_order(9, [e.query_id for e in items], [e.result_id for e in items])
    first = {(items[i].query_id, items[i].result_id) for i in order[:25]}
    assert sample_item_keys(items, 25, seed=9) == first
    ranks = [item_rank(9, items[i].query_id, items[i].result_id) for i in order]
    assert ranks == sorted(ranks)


def test_the_loader_keeps_the_sampled_items(tmp_path: Path) -> None:
    cfg = mmjudge.compose(["dataset.sample_items=30", "seed=5"])
    kept = list(load_dataset(cfg.dataset, seed=cfg.seed, prepare=False))
    everything = list(load_dataset(mmjudge.compose([]).dataset, prepare=False))
    assert len(kept) == 30
    assert {(e.query_id, e.result_id) for e in kept} == sample_item_keys(everything, 30, 5)


def test_a_sample_of_no_items_is_refused_in_one_line() -> None:
    try:
        mmjudge.compose(["dataset.sample_items=0"])
    except ConfigError as error:
        assert "dataset.sample_items" in str(error) and "\n" not in str(error)
    else:
        raise AssertionError("dataset.sample_items=0 was accepted")
