"""An audit's files: the production labels read (qrels or JSON lines) and the period's sample
written and read back, a sample the last release wrote included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.errors import DatasetError
from mmjudge.store.audit_files import SAMPLE, SampledLabel, read_labels, read_sample, write_sample


def test_a_sample_round_trips_and_one_the_last_release_wrote_still_reads(tmp_path: Path) -> None:
    sample = [SampledLabel("q1", "a", 0, 3.0), SampledLabel("q 2", "é", 2, 1.5)]
    write_sample(tmp_path / "new", sample)
    assert read_sample(tmp_path / "new") == sample
    lines = (tmp_path / "new" / SAMPLE).read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "schema_version": 1,
        "query_id": "q1",
        "result_id": "a",
        "label": 0,
        "weight": 3.0,
    }
    old = tmp_path / "old"
    old.mkdir()
    (old / SAMPLE).write_text(
        '{"query_id": "q1", "result_id": "a", "label": 0, "weight": 3.0}\n'
        '{"query_id": "q 2", "result_id": "\\u00e9", "label": 2, "weight": 1.5}\n',
        encoding="utf-8",
    )
    assert read_sample(old) == sample


def test_a_line_that_is_not_a_sampled_label_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / SAMPLE).write_text('{"query_id": "q"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"sample.jsonl:1: not a sampled label"):
        read_sample(tmp_path)


def test_labels_come_from_qrels_or_json_lines(tmp_path: Path) -> None:
    qrels = tmp_path / "labels.qrels"
    qrels.write_text("q1 0 a 2\nq1 0 b 0\n", encoding="utf-8")
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text(
        '{"query_id": "q1", "result_id": "a", "label": 2}\n'
        '{"query_id": "q1", "result_id": "b", "label": 0.0}\n'
        '{"query_id": "q1", "result_id": "c", "label": null}\n',
        encoding="utf-8",
    )
    assert read_labels(qrels) == read_labels(jsonl) == {"q1": {"a": 2, "b": 0}}
    with pytest.raises(DatasetError, match="no such labels file"):
        read_labels(tmp_path / "missing.jsonl")
