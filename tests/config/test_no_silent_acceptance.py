"""Values that used to be taken without a word, each now refused in one line naming the
setting (or file and line) and the fix: a JSON grade written as text, no output limit for a
judge called over an API, an empty base URL or one with a space, a timeout of 1e308, and an
interpolation that names no setting. Warnings about data read leniently go to stderr, once per
cell."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.config import ModelConfig
from mmjudge.data import load_dataset
from mmjudge.engine.cell import typed_config
from mmjudge.errors import ConfigError, DatasetError
from mmjudge.judges.registry import endpoint_override
from tests.config.test_config_errors_one_line import _one_line_exit_2
from tests.data.test_dataset_no_silent_coercion import jsonl_dataset, row
from tests.helpers import DEMO_DIR, compose_config, run_sweep


@pytest.mark.parametrize("grade", ["2", " 2", "two"])
def test_a_jsonl_grade_written_as_text_is_refused_with_file_and_line(
    tmp_path: Path, grade: str
) -> None:
    cfg = jsonl_dataset(tmp_path, [row(1), row(2, labels={"a": grade})])
    with pytest.raises(DatasetError) as info:
        list(load_dataset(cfg))
    message = str(info.value)
    assert message.endswith(
        f"items.jsonl:2: field 'labels.a' is the text {grade!r}, not a number; write the "
        'grade without quotes, e.g. {"a": 2}'
    )


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["model=gpt4o_mini", "model.max_tokens=0"],
            "model.max_tokens=0 is not allowed; use a whole number of at least 1",
        ),
        (
            ["model=claude_haiku45", "model.max_tokens=0"],
            "model.max_tokens=0 is not allowed; use a whole number of at least 1",
        ),
        (
            ["runner.timeout_s=1e308"],
            "runner.timeout_s=1e+308 is not allowed; use a number of seconds above 0 and at "
            "most 3600 (an hour)",
        ),
        (["runner.timeout_s=3601"], "runner.timeout_s=3601.0 is not allowed"),
    ],
)
def test_settings_taken_silently_are_refused_in_one_line(
    overrides: list[str], expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        typed_config(compose_config(overrides))
    assert str(info.value).startswith(expected)


def test_a_local_judge_still_takes_no_output_limit() -> None:
    typed_config(compose_config(["model=lexical", "model.max_tokens=0"]))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "",
            "model.base_url is empty; give the server's full URL, e.g. http://127.0.0.1:8000/v1 "
            "or https://api.example.com/v1, or leave model.base_url out (null) for the "
            "provider's public endpoint",
        ),
        ("   ", "model.base_url is empty"),
        (
            "http://127.0.0.1:8000/my models/v1",
            "model.base_url='http://127.0.0.1:8000/my models/v1' holds a space or another blank; "
            "remove it, or write a space that belongs in the path as %20",
        ),
        ("http://127.0.0.1:8000/v1 ", "holds a space or another blank"),
    ],
)
def test_an_empty_base_url_or_one_with_a_space_is_refused(url: str, expected: str) -> None:
    model = ModelConfig(name="m", provider="openai", model_id="gpt-4o-mini", base_url=url)
    with pytest.raises(ConfigError) as info:
        endpoint_override(model)
    assert str(info.value).startswith(expected) or expected in str(info.value)


def test_a_base_url_with_an_encoded_space_is_taken() -> None:
    url = "http://127.0.0.1:8000/my%20models/v1"
    model = ModelConfig(name="m", provider="openai", model_id="gpt-4o-mini", base_url=url)
    assert endpoint_override(model) == url


@pytest.mark.slow
def test_an_interpolation_that_names_nothing_is_one_line_naming_the_setting(
    tmp_path: Path,
) -> None:
    line = _one_line_exit_2(
        run_sweep(tmp_path, "runner.concurrency=${nosuch}", "runner.dry_run=true")
    )
    assert line == (
        "mmjudge: runner.concurrency: Interpolation key 'nosuch' not found; fix the value"
    )


@pytest.mark.slow
def test_a_lenient_reading_is_said_once_per_cell_on_stderr(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    rows = [json.loads(line) for line in (DEMO_DIR / "items.jsonl").read_text().splitlines()]
    rows = rows[:4]
    for item in rows:
        item.pop("images", None)
    rows[0]["query_id"] = 7  # read as "7", with a warning
    (data / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run_sweep(
        tmp_path,
        "-m",
        "model=lexical",
        "modality=text",
        f"dataset.path={data}",
        "prompt=default,terse",
        "report.build=false",
    )
    assert result.returncode == 0, result.stderr
    said = "1 line with query_id or result_id given as a number (read as its text)"
    assert result.stderr.count(said) == 2  # once for each of the two cells
    assert said not in result.stdout
