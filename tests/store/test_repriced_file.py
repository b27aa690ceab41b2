"""``repriced_*.json``: a file the last release wrote reads into the typed record, and the one
writer writes it back as it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.errors import MMJudgeError
from mmjudge.records import Usage
from mmjudge.store.repriced_file import read_repriced, write_repriced

#: ``repriced_2026-10-31_batch.json`` as the last release wrote it for a six-row run.
LAST_RELEASE = {
    "schema_version": 1,
    "run_id": "20261201_demo_gpt4o_mini_text_default",
    "dataset": "demo_fashion",
    "model": "gpt4o_mini",
    "model_id": "gpt-4o-mini-2024-07-18",
    "provider": "openai",
    "modality": "text",
    "n_judgments": 6,
    "n_with_usage": 6,
    "n_cached": 1,
    "n_errors": 0,
    "n_repeats": 0,
    "original": {
        "sheet": "2024-08-16",
        "total_usd": 0.000292,
        "usd_per_million": 48.67,
        "image_usd_per_million": 0.0,
        "text_usd_per_million": 48.67,
        "repeats_usd": 0.0,
    },
    "repriced": {
        "sheet": "2026-10-31",
        "batch": True,
        "sync": False,
        "n_batch_priced": 6,
        "as_model": None,
        "price_key": "gpt-4o-mini-2024-07-18",
        "prices": {
            "input": 0.15,
            "output": 0.6,
            "cached_input": 0.075,
            "cache_write": None,
            "cache_read": None,
            "batch_discount": None,
            "image_rule": {"rule": "openai_tile", "base": 2833, "tile": 5667},
            "tiers": [],
            "self_hosted": None,
        },
        "image_size": 512,
        "image_tokens_per_image": None,
        "total_usd": 0.000146,
        "usd_per_million": 24.34,
        "image_usd_per_million": 0.0,
        "text_usd_per_million": 24.34,
        "repeats_usd": 0.0,
        "tokens": {
            "input_tokens": 1755,
            "output_tokens": 48,
            "cached_input_tokens": 0,
            "cache_write_tokens": 0,
            "reasoning_tokens": 0,
            "image_tokens": 0,
        },
        "n_long_context": 0,
    },
    "notes": ["priced from each row's saved usage; no provider was called"],
    "created_at": "2026-12-01T10:00:00+00:00",
}


def test_a_file_the_last_release_wrote_reads_and_is_written_back_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "repriced_2026-10-31_batch.json"
    path.write_text(json.dumps(LAST_RELEASE), encoding="utf-8")
    record = read_repriced(path)
    assert record.original.usd_per_million == 48.67 and record.repriced.total_usd == 0.000146
    assert record.basis.batch and not record.basis.sync and record.basis.n_batch_priced == 6
    assert record.basis.tokens == Usage(input_tokens=1755, output_tokens=48)
    assert record.n_cached == 1 and record.notes == tuple(LAST_RELEASE["notes"])  # type: ignore[arg-type]
    assert record.file_name == path.name
    again = write_repriced(tmp_path / "elsewhere", record)
    assert again == tmp_path / "elsewhere" / path.name
    assert json.loads(again.read_text(encoding="utf-8")) == LAST_RELEASE
    moved = write_repriced(tmp_path, record, tmp_path / "out")
    assert moved == tmp_path / "out" / record.run_id / path.name


def test_a_file_that_is_not_a_repricing_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "repriced_x.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(MMJudgeError, match="cannot be read"):
        read_repriced(path)
    path.write_text('{"schema_version": 2}', encoding="utf-8")
    with pytest.raises(MMJudgeError, match="not a re-pricing this version of mmjudge reads"):
        read_repriced(path)
