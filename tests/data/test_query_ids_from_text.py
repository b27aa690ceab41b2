"""A table without a query id column: each query's id comes from its text, safe for TREC qrels
(no blanks) and the same on every run, so `mmjudge export` takes a sweep of it."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from mmjudge.cli.export import main as export_main
from mmjudge.config import DatasetConfig, ScaleConfig
from mmjudge.data import load_dataset
from mmjudge.data.validation import query_id_from_text
from tests.helpers import run_sweep

ROWS = [
    ("red striped t-shirt", "p1", "Red striped tee", 2),
    ("red striped t-shirt", "p2", "Blue dress", 0),
    ("shoes", "p3", "Running shoes", 2),
    ("Navy  Dress!", "p4", "Navy dress", 1),
]


def table(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["query", "id", "title", "grade"])
    writer.writerows(ROWS)
    (root / "items.csv").write_text(out.getvalue(), encoding="utf-8")
    return root


def dataset(root: Path) -> DatasetConfig:
    columns = {"query": "query", "result_id": "id", "text_fields": ["title"]}
    columns["annotators"] = {"a": "grade"}  # type: ignore[assignment]
    return DatasetConfig(
        name="t",
        loader="table",
        path=str(table(root)),
        items="items.csv",
        columns=columns,
        scale=ScaleConfig(grades=[0, 1, 2]),
    )


def test_ids_are_derived_from_the_text_without_blanks_and_the_text_is_kept(
    tmp_path: Path,
) -> None:
    examples = list(load_dataset(dataset(tmp_path / "ds")))
    ids = [e.query_id for e in examples]
    assert [e.query for e in examples] == [row[0] for row in ROWS]
    assert ids[0] == ids[1] == query_id_from_text("red striped t-shirt")
    assert (
        ids[0].startswith("red-striped-t-shirt-") and len(ids[0]) == len("red-striped-t-shirt-") + 8
    )
    assert ids[2] == "shoes"  # no blank: the text itself
    assert ids[3].startswith("navy-dress-")
    assert not any(char.isspace() for qid in ids for char in qid)


@pytest.mark.parametrize(
    ("text", "other"),
    [("red shirt", "red  shirt"), ("Red shirt", "red shirt"), ("a b", "a-b")],
)
def test_ids_are_deterministic_and_tell_texts_apart(text: str, other: str) -> None:
    assert query_id_from_text(text) == query_id_from_text(text)
    assert query_id_from_text(text) != query_id_from_text(other)
    assert query_id_from_text("¿¡ !?").startswith("q-")


@pytest.mark.slow
def test_export_takes_a_sweep_of_a_dataset_without_query_ids(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    out = io.StringIO()
    writer = csv.writer(out)  # the columns of the shipped crowdflower_example, grades 1-4
    writer.writerow(["query", "id", "product_title", "product_description", "median_relevance"])
    writer.writerows((q, rid, title, "", grade + 1) for q, rid, title, grade in ROWS)
    (root / "train.csv").write_text(out.getvalue(), encoding="utf-8")
    result = run_sweep(
        tmp_path,
        "model=lexical",
        "modality=text",
        "dataset=crowdflower_example",
        f"dataset.path={root}",
        f"hydra.run.dir={tmp_path / 'run'}",
        "report.build=false",
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "judge.qrels"
    assert export_main([str(tmp_path / "run"), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == len(ROWS)
    assert all(len(line.split()) == 4 for line in lines)
    assert lines[0].split()[0] == query_id_from_text("red striped t-shirt")
