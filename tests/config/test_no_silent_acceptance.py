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


# --- issue 46: values taken without a word, and files and folders that ended in tracebacks ----


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["runner.cache=2"], "runner.cache=2 is not allowed; runner.cache takes true or false"),
        (["runner.cache=yes"], "runner.cache='yes' is not allowed; runner.cache takes true"),
        (["-m", "report.build=true,0"], "report.build=0 is not allowed; report.build takes"),
    ],
)
def test_a_number_or_a_word_for_a_true_or_false_setting_is_refused(
    argv: list[str], expected: str
) -> None:
    from mmjudge.config.keys import unknown_setting
    from mmjudge.locations import CONFIG_DIR

    problem = unknown_setting(argv, CONFIG_DIR)
    assert problem is not None and problem.startswith(expected)
    assert (
        unknown_setting(["runner.cache=false", "report.build=${runner.cache}"], CONFIG_DIR) is None
    )


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["model=gpt4o_mini", "model.max_tokens=1000000000000"],
            "model.max_tokens=1000000000000 is not allowed; use a whole number of at most "
            "model.context_tokens (128000)",
        ),
        (
            ["model=gpt4o_mini", "model.image_detail=ultra"],
            "model.image_detail='ultra' is not allowed; use one of low, high, auto",
        ),
        (["model.name="], "model.name='' is not allowed; give a name"),
        (["model=gpt4o_mini", "model.model_id=' '"], "model.model_id=' ' is not allowed"),
        (["paths.results="], "paths.results is empty; give a folder"),
    ],
)
def test_values_sent_to_the_provider_or_used_as_names_are_checked(
    overrides: list[str], expected: str
) -> None:
    with pytest.raises(ConfigError) as info:
        typed_config(compose_config(overrides))
    assert str(info.value).startswith(expected)


@pytest.mark.parametrize(
    ("setting", "value"),
    [("prompt.id", "strict\nv2"), ("dataset.name", "demo\tfashion"), ("model.name", "a\rb")],
)
def test_a_name_holding_a_newline_or_a_tab_is_refused(setting: str, value: str) -> None:
    from omegaconf import OmegaConf

    cfg = compose_config([])
    OmegaConf.update(cfg, setting, value)
    with pytest.raises(ConfigError, match=f"^{setting}=.* is not allowed; a name is one line"):
        typed_config(cfg)


def test_a_base_url_variable_ending_in_a_newline_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = ModelConfig(name="m", provider="openai", model_id="gpt-4o-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1\n")
    with pytest.raises(ConfigError, match=r"^OPENAI_BASE_URL=.* holds a space or another blank"):
        endpoint_override(model)
    monkeypatch.setenv("OPENAI_BASE_URL", "  ")  # blank: unset, the public endpoint
    assert endpoint_override(model) is None


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("../../x", "demo_fashion_----x_text_default"),
        ("a/b", "demo_fashion_a-b_text_default"),
        ("..", "demo_fashion_-_text_default"),
        ("gpt-4.1", "demo_fashion_gpt-4.1_text_default"),
    ],
)
def test_a_name_used_in_a_folder_name_is_made_safe(name: str, folder: str) -> None:
    from mmjudge.config.names import run_folder_name

    made = run_folder_name("demo_fashion", name, "text", "default")
    assert made == folder
    assert "/" not in made and ".." not in made


def test_a_report_over_many_folders_has_a_name_a_file_system_takes() -> None:
    from mmjudge.config.names import NAME_BYTES, report_folder_name

    names = [f"2026-11-28_21-31-{n:02d}_demo_fashion_gpt4o_mini_text_default" for n in range(16)]
    made = report_folder_name(names)
    assert len(made.encode()) <= NAME_BYTES and made.startswith(names[0] + "+")
    assert "+more-" not in made and made.count("more-") == 1
    assert report_folder_name(names[:15]) != made  # the hash tells them apart
    assert report_folder_name(names[:2]) == "+".join(names[:2])
    assert report_folder_name(names, "weekly/../x") == "weekly---x"


def test_a_folder_that_cannot_be_made_is_one_line_naming_its_setting(tmp_path: Path) -> None:
    from mmjudge.config.run import unwritable_problem

    (tmp_path / "afile").write_text("")
    problem = unwritable_problem("paths.results", tmp_path / "afile" / "results" / "runs")
    assert problem == (
        f"paths.results: {tmp_path}/afile/results/runs cannot be made, as {tmp_path}/afile is "
        "a file, not a folder; set paths.results to a folder you can write to"
    )
    assert unwritable_problem("paths.results", tmp_path / "new" / "results") is None


@pytest.mark.slow
@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (
            ["hydra.run.dir="],
            "mmjudge: hydra.run.dir is empty; give a folder (a relative path is taken in the "
            "working folder), or leave hydra.run.dir out for its default",
        ),
        (["paths.results=afile/results"], "mmjudge: paths.results: "),
        (["-m", "paths.results=afile/results"], "mmjudge: paths.results: "),
        (["hydra.run.dir=afile/run"], "mmjudge: hydra.run.dir: "),
        (["paths.reports=afile/reports"], "mmjudge: paths.reports: "),
        (["runner.cache=2"], "mmjudge: runner.cache=2 is not allowed"),
    ],
)
def test_a_folder_that_cannot_be_written_or_an_empty_one_is_one_line(
    tmp_path: Path, overrides: list[str], expected: str
) -> None:
    (tmp_path / "afile").write_text("")
    line = _one_line_exit_2(run_sweep(tmp_path, *overrides, "dataset.limit=3"))
    assert line.startswith(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]  # nothing written


@pytest.mark.slow
def test_names_with_separators_stay_inside_the_results_folder(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path,
        "model=lexical",
        "model.name=../../escaped",
        "dataset.limit=3",
        "report.build=false",
        f"paths.results={tmp_path / 'work' / 'results'}",
    )
    assert result.returncode == 0, result.stderr
    (run_dir,) = (tmp_path / "work" / "results" / "runs").iterdir()
    assert run_dir.name.endswith("_demo_fashion_----escaped_text_default")
    assert not list(tmp_path.glob("escaped*")) and not list(tmp_path.glob("*/escaped*"))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            b"name: mine\nprovider: [openai\n",
            "mmjudge: config file {path}, line 3, column 1: expected ',' or ']', but got "
            "'<stream end>'; fix the YAML there",
        ),
        (
            b"name: mine\n\tprovider: openai\n",
            "mmjudge: config file {path}, line 2, column 1: found character '\\t' that cannot "
            "start any token; indent with spaces",
        ),
        (
            b"name: mine\nmodel_id: caf\xe9\n",
            "mmjudge: config file {path} is not UTF-8 text (byte 0xe9 at position 24); save it "
            "as UTF-8",
        ),
    ],
    ids=["bad-mapping", "tab", "latin-1"],
)
def test_a_config_file_that_is_not_yaml_or_not_utf8_is_one_line(
    tmp_path: Path, text: bytes, expected: str
) -> None:
    (tmp_path / "mine" / "model").mkdir(parents=True)
    path = tmp_path / "mine" / "model" / "mine.yaml"
    path.write_bytes(text)
    line = _one_line_exit_2(run_sweep(tmp_path, "-cd", str(tmp_path / "mine"), "model=mine"))
    assert line.startswith(expected.format(path=path))


def test_the_library_refuses_a_run_folder_it_cannot_make_in_one_line(tmp_path: Path) -> None:
    from mmjudge.engine.cell import run_cell

    (tmp_path / "afile").write_text("")
    with pytest.raises(ConfigError) as info:
        run_cell(compose_config(["dataset.limit=2"]), tmp_path / "afile" / "run")
    assert str(info.value) == (
        f"run folder: {tmp_path}/afile/run cannot be made, as {tmp_path}/afile is a file, not "
        "a folder; give the run a folder you can write to"
    )
