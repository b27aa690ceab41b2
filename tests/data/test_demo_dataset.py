"""The shipped synthetic demo_fashion dataset: reproducible and sane."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest
from PIL import Image

from tests.helpers import DEMO_DIR, REPO_ROOT

DATASET = DEMO_DIR
GENERATOR = REPO_ROOT / "scripts" / "generate_demo_fashion.py"
ANNOTATORS = ("annotator_a", "annotator_b")
FIELD_ORDER = ["name", "product_type", "colour", "pattern", "description"]


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    name = "demo_fashion_generate"
    spec = importlib.util.spec_from_file_location(name, GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file runs
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


@pytest.fixture(scope="module")
def regenerated(generator: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo_fashion")
    generator.main(out, quiet=True)
    return out


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    lines = (DATASET / "items.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.slow
def test_regenerating_reproduces_items_and_readme(regenerated: Path) -> None:
    for name in ("items.jsonl", "README.md", "testbank_nuggets.jsonl", "testbank_questions.jsonl"):
        assert (regenerated / name).read_bytes() == (DATASET / name).read_bytes(), (
            f"{name} differs from a fresh run; rerun scripts/generate_demo_fashion.py"
        )


@pytest.mark.slow
def test_regenerating_reproduces_images(regenerated: Path) -> None:
    fresh = sorted(p.name for p in (regenerated / "images").glob("*.png"))
    shipped = sorted(p.name for p in (DATASET / "images").glob("*.png"))
    assert fresh == shipped
    for name in shipped:
        new, old = regenerated / "images" / name, DATASET / "images" / name
        with Image.open(new) as a, Image.open(old) as b:
            same_pixels = (
                a.mode == b.mode
                and a.size == b.size
                and a.getpalette() == b.getpalette()
                and a.tobytes() == b.tobytes()
            )
        # Pixels, not PNG bytes: the compressed bytes depend on the zlib build Pillow uses.
        assert same_pixels, f"{name}: the drawing changed; rerun the generator"


def test_rows_have_the_canonical_shape(rows: list[dict]) -> None:
    assert rows
    for row in rows:
        assert set(row) == {"query_id", "query", "result_id", "fields", "images", "labels"}
        for key in ("query_id", "query", "result_id"):
            assert isinstance(row[key], str) and row[key].strip()
        assert list(row["fields"]) == FIELD_ORDER
        assert all(isinstance(v, str) for v in row["fields"].values())
        assert row["fields"]["name"]
        assert isinstance(row["images"], list) and len(row["images"]) == 1
        assert set(row["labels"]) == set(ANNOTATORS)
        for grade in row["labels"].values():
            assert type(grade) is int and grade in (0, 1, 2)


def test_pairs_are_unique_and_products_consistent(rows: list[dict]) -> None:
    pairs = Counter((row["query_id"], row["result_id"]) for row in rows)
    assert max(pairs.values()) == 1
    by_product: dict[str, tuple] = {}
    for row in rows:
        seen = (json.dumps(row["fields"]), row["images"])
        assert by_product.setdefault(row["result_id"], seen) == seen
    queries = {row["query_id"]: row["query"] for row in rows}
    assert len(queries) == len(set(queries.values()))
    assert 80 <= len(by_product) <= 120


def test_image_paths_exist_inside_the_dataset(rows: list[dict]) -> None:
    root = DATASET.resolve()
    for row in rows:
        for raw in row["images"]:
            assert not Path(raw).is_absolute()
            path = (root / raw).resolve()
            assert path.is_relative_to(root), raw
            assert path.is_file(), raw


def test_every_grade_occurs_for_both_annotators(rows: list[dict]) -> None:
    for annotator in ANNOTATORS:
        counts = Counter(row["labels"][annotator] for row in rows)
        assert all(counts[g] >= len(rows) // 10 for g in (0, 1, 2)), (annotator, counts)


def test_annotators_mostly_but_not_always_agree(rows: list[dict], generator) -> None:
    a = [row["labels"]["annotator_a"] for row in rows]
    b = [row["labels"]["annotator_b"] for row in rows]
    agreement = sum(x == y for x, y in zip(a, b, strict=True)) / len(rows)
    assert 0.70 <= agreement <= 0.95
    assert 0.6 <= generator.cohen_kappa(a, b) <= 0.85


def test_kappa_helper_on_known_values(generator) -> None:
    assert generator.cohen_kappa([0, 1, 2, 0], [0, 1, 2, 0]) == pytest.approx(1.0)
    # observed 0.5, chance 0.5 -> 0
    assert generator.cohen_kappa([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0)


def test_some_fields_are_empty(rows: list[dict]) -> None:
    empty = Counter(k for row in rows for k, v in row["fields"].items() if v == "")
    assert sum(empty.values()) > 0
    assert empty["name"] == 0


def test_some_text_contradicts_the_image(generator, rows: list[dict]) -> None:
    truth = generator.ground_truth()
    assert set(truth) == {row["result_id"] for row in rows}
    contradicting = [pid for pid, info in truth.items() if info["contradicts"]]
    assert 0.08 <= len(contradicting) / len(truth) <= 0.18
    fields = {row["result_id"]: row["fields"] for row in rows}
    for pid in contradicting:
        info = truth[pid]
        for attribute in info["contradicts"]:
            assert info["stated"][attribute] != info["drawn"][attribute]
            assert fields[pid][attribute], f"{pid}: a contradicting field must not be empty"


def test_strict_labels_follow_the_drawing(generator, rows: list[dict]) -> None:
    """annotator_a grades the drawing; only its small seeded slip rate departs from it."""
    products = {p.pid: p for p in generator.build().products}
    queries = {q.qid: q for q in generator.QUERIES}
    departures = sum(
        row["labels"]["annotator_a"]
        != generator.truth_grade(queries[row["query_id"]], products[row["result_id"]])
        for row in rows
    )
    assert departures <= 0.05 * len(rows)
