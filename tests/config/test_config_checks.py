"""Config values out of range and unknown settings are refused before anything runs, in one
line naming the setting and what is valid."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.config.keys import unknown_setting
from mmjudge.engine.cell import run_cell, typed_config
from mmjudge.errors import ConfigError
from mmjudge.locations import CONFIG_DIR
from tests.helpers import compose_config, compose_option, shipped_options

CONF = CONFIG_DIR


@pytest.mark.slow  # every shipped option composed: about 6 s in all
@pytest.mark.parametrize(("group", "option"), shipped_options())
def test_every_shipped_option_passes_validation(group: str, option: str) -> None:
    typed = OmegaConf.to_object(compose_option(group, option))
    assert isinstance(typed, SweepConfig)
    typed.validate()


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        (
            "runner.concurrency=0",
            "runner.concurrency=0 is not allowed; use a whole number of at least 1",
        ),
        ("model.max_concurrency=0", "model.max_concurrency=0 is not allowed"),
        ("model.max_concurrency=-3", "model.max_concurrency=-3 is not allowed"),
        (
            "runner.max_retries=-1",
            "runner.max_retries=-1 is not allowed; use a whole number of at least 0",
        ),
        (
            "runner.timeout_s=0",
            "runner.timeout_s=0.0 is not allowed; use a number of seconds above 0",
        ),
        ("runner.timeout_s=-5", "runner.timeout_s=-5.0 is not allowed"),
        ("runner.timeout_s=nan", "runner.timeout_s=nan is not allowed"),
        ("runner.max_cost_usd=-1", "runner.max_cost_usd=-1.0 is not allowed; use a dollar amount"),
        (
            "runner.backoff_max_s=0.5",
            "runner.backoff_max_s=0.5 is not allowed; use a number of seconds of at least runner.",
        ),
        ("runner.batch_poll_s=0", "runner.batch_poll_s=0.0 is not allowed"),
        (
            "dataset.limit=-1",
            "dataset.limit=-1 is not allowed; use a whole number of at least 1, or null for every",
        ),
        ("dataset.limit=0", "dataset.limit=0 is not allowed"),
        ("dataset.sample_queries=0", "dataset.sample_queries=0 is not allowed"),
        ("dataset.max_images=-1", "dataset.max_images=-1 is not allowed"),
        (
            "dataset.max_text_tokens=0",
            "dataset.max_text_tokens=0 is not allowed; use a whole number of at least 1, or null",
        ),
        ("dataset.encoding=klingon", "dataset.encoding='klingon' is not allowed"),
        (
            "dataset.scale.grades=[]",
            "dataset.scale.grades=[] is not allowed; list at least two grades",
        ),
        ("dataset.scale.grades=[0,1,1]", "grade 1 is listed more than once"),
        ("dataset.scale.grades=[2,1,0]", "list the grades in increasing relevance"),
        (
            "dataset.scale.relevant_from=7",
            "dataset.scale.relevant_from=7 is not allowed; use one of the grades above the lowest",
        ),
        ("dataset.scale.relevant_from=0", "dataset.scale.relevant_from=0 is not allowed"),
        (
            "dataset.grade_rule=median",
            "dataset.grade_rule='median' is not allowed; use one of exact, round, floor, ceil,",
        ),
        (
            "dataset.grade_bins=[0,1,2,3]",
            "dataset.grade_bins=[0.0, 1.0, 2.0, 3.0] is not allowed; it needs dataset.grade_rule",
        ),
        ("model.temperature=3", "model.temperature=3.0 is not allowed"),
        ("model.requests_per_minute=0", "model.requests_per_minute=0.0 is not allowed"),
        ("pricing.batch_discount=0", "pricing.batch_discount=0.0 is not allowed"),
        ("report.human_cost_per_label=0", "report.human_cost_per_label=0.0 is not allowed"),
        ("report.label_budget_usd=-5", "report.label_budget_usd=-5.0 is not allowed"),
        ("modality.include_text=false", "a modality shows the result's text, its image or both"),
        ("prompt.raters=0", "prompt.raters=0: use 1 (one grade) or more"),
        ("images.quality=0", "images.quality=0 must be an integer from 1 to 100"),
        ("images.pad_color=[0,0,300]", "images.pad_color=[0, 0, 300] must be three integers"),
    ],
)
def test_out_of_range_values_are_refused_in_one_line(override: str, expected: str) -> None:
    cfg = compose_config([override])
    with pytest.raises(ConfigError) as info:
        typed_config(cfg)
    message = str(info.value)
    assert expected in message and "\n" not in message


@pytest.mark.parametrize(
    ("bins", "expected"),
    [
        ("[0,1,2]", "give 4 edges, one more than the scale's 3 grades"),
        ("[0,1,2,inf]", "give 4 edges"),
        ("[0,2,1,3]", "the edges must increase"),
    ],
)
def test_grade_bins_are_checked(bins: str, expected: str) -> None:
    cfg = compose_config(["dataset.grade_rule=bins", f"dataset.grade_bins={bins}"])
    with pytest.raises(ConfigError, match=expected):
        typed_config(cfg)
    typed_config(compose_config(["dataset.grade_rule=bins", "dataset.grade_bins=[0,0.5,1.5,2]"]))


def test_image_overrides_reach_the_typed_settings() -> None:
    typed = typed_config(compose_config(["images.size=256", "images.pad_color=[0,0,0]"]))
    assert (typed.images.size, typed.images.pad_color) == (256, (0, 0, 0))


def test_every_entry_point_gets_the_checks(tmp_path: Path) -> None:
    """run_cell validates typed configs too (the batch and launcher paths pass those)."""
    typed = OmegaConf.to_object(compose_config())
    assert isinstance(typed, SweepConfig)
    typed.runner.max_retries = -2
    with pytest.raises(ConfigError, match=r"runner\.max_retries=-2"):
        run_cell(typed, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before anything was written
    typed.runner.max_retries = 0
    typed.dataset.scale.meanings[5] = "great"
    with pytest.raises(ConfigError, match=r"grade\(s\) 5 are not on the scale \[0, 1, 2\]"):
        run_cell(typed, tmp_path / "run")


# --- unknown settings ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["dataset.limt=5"],
            "unknown setting 'dataset.limt'; valid settings of dataset: name, loader, path,",
        ),
        (["+dataset.foo=1"], "unknown setting 'dataset.foo'"),
        (["-m", "runner.timout_s=5,10"], "unknown setting 'runner.timout_s'"),
        (["dataset.scale.grade=[0,1]"], "valid settings of dataset.scale: grades, meanings"),
        (["colour=red"], "unknown setting 'colour'; valid settings at the top level: model,"),
        (["model=gtp4o"], "unknown option 'gtp4o' for model; valid options: claude35_sonnet,"),
        (["-m", "model=lexical,gtp4o"], "unknown option 'gtp4o' for model"),
    ],
)
def test_unknown_settings_name_the_valid_ones(argv: list[str], expected: str) -> None:
    message = unknown_setting(argv, CONF)
    assert message is not None and expected in message and "\n" not in message


def test_an_option_of_your_own_without_its_cd_says_to_add_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    message = unknown_setting(["model=my_judge"], CONF)
    assert message is not None and message.startswith("unknown option 'my_judge' for model;")
    assert message.endswith(
        "; for a config of your own, add -cd DIR, the folder where your model/ folder lives"
    )
    (tmp_path / "mine" / "model").mkdir(parents=True)
    (tmp_path / "mine" / "model" / "my_judge.yaml").write_text("name: my_judge\n")
    message = unknown_setting(["model=my_judge"], CONF)
    assert message is not None and message.endswith(
        "; mine/model/my_judge.yaml is a config of your own: add -cd mine to the command"
    )
    monkeypatch.chdir(tmp_path / "mine")
    message = unknown_setting(["model=my_judge"], CONF)
    assert message is not None and message.endswith("add -cd . to the command")
    assert unknown_setting(["-cd", str(tmp_path / "mine"), "model=my_judge"], CONF) is None


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["-m", "model=lexical,gpt4o", "modality=text,mm", "dataset.limit=5"],
        ["+model.options.k1=1.5", "dataset.columns.anything=1", "dataset.scale.meanings.0=x"],
        ["hydra.verbose=true", "hydra/launcher=basic", "~dataset.limit", "model=glob(gpt*)"],
        ["--cfg", "job", "images.size=256", "paths.results=/tmp/x", "pricing=2024-08-16"],
        ["--help"],
        ["--version"],
        ["--cfg", "bogus", "dataset.limt=1"],  # Hydra's own parse error comes first
    ],
)
def test_valid_command_lines_pass(argv: list[str]) -> None:
    assert unknown_setting(argv, CONF) is None


def test_a_misspelt_key_in_a_group_file_names_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    shutil.copytree(CONF, conf)
    path = conf / "dataset" / "demo_fashion.yaml"
    path.write_text(path.read_text() + "max_imags: 2\n", encoding="utf-8")
    message = unknown_setting([], conf)
    assert message is not None
    assert message.startswith(f"{path}: unknown setting 'dataset.max_imags'; valid settings")
    assert unknown_setting(["dataset=trec_example"], conf) is None  # that file is not used
    scale = conf / "dataset" / "trec_example.yaml"
    scale.write_text(scale.read_text().replace("relevant_from", "relevant_form"))
    message = unknown_setting(["dataset=trec_example"], conf)
    assert message is not None and "'dataset.scale.relevant_form'" in message


@pytest.mark.slow
def test_the_command_line_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    for args, expected in (
        (["dataset.limt=5"], "mmjudge: unknown setting 'dataset.limt'; valid settings of dataset:"),
        (["runner.timeout_s=-1"], "mmjudge: runner.timeout_s=-1.0 is not allowed"),
    ):
        result = subprocess.run(
            [sys.executable, "-m", "mmjudge.sweep", *args, f"paths.results={tmp_path}"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HYDRA_FULL_ERROR": ""},
            check=False,
        )
        assert result.returncode == 2
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(expected), result.stderr
        assert "Traceback" not in result.stderr


def test_the_config_file_check_reads_yaml_as_the_safe_loader_does() -> None:
    """The check of settings in conf/ files parses them with libyaml where PyYAML has it:
    every shipped config file must come out as ``yaml.safe_load`` reads it."""
    import yaml

    from mmjudge.config import keys as config_keys

    files = sorted(CONFIG_DIR.rglob("*.yaml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert config_keys._load_yaml(text) == yaml.safe_load(text), path


def test_a_parsed_override_is_kept_per_text() -> None:
    from mmjudge.keyguard.recognise import parse_override

    first = parse_override("model.temperature=0.5")
    assert parse_override("model.temperature=0.5") is first
    assert first.value() == 0.5 and first.key_or_group == "model.temperature"
    assert parse_override("-m") is None


def test_with_a_folder_of_ones_own_configs_a_misspelt_setting_is_still_named(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "my-conf"
    (mine / "experiment").mkdir(parents=True)
    (mine / "experiment" / "my_grid.yaml").write_text("# @package _global_\n", encoding="utf-8")
    (mine / "model").mkdir()
    (mine / "model" / "my_model.yaml").write_text("name: mine\n", encoding="utf-8")
    for flag in ("-cd", "--config-dir"):
        message = unknown_setting([flag, str(mine), "runner.concurrensy=3"], CONF)
        assert message is not None and "unknown setting 'runner.concurrensy'" in message
    # The folder's own groups and options are Hydra's to check.
    ok = ["-cd", str(mine), "-m", "+experiment=my_grid", "model=my_model", "dataset.limit=5"]
    assert unknown_setting(ok, CONF) is None


def test_a_scale_without_meanings_is_refused_never_lent_another_scales() -> None:
    from mmjudge.config.dataset import BUILT_IN_MEANINGS, ScaleConfig

    cfg = compose_config(["dataset.scale.grades=[0,1,2,3]", "dataset.scale.relevant_from=2"])
    with pytest.raises(ConfigError) as info:
        typed_config(cfg)  # the demo defines 0, 1 and 2; nothing defines 3
    assert str(info.value) == (
        "dataset.scale.meanings has no definition for grade 3 of the scale [0, 1, 2, 3]: give "
        "each grade one in the dataset's config, under scale: meanings: (the built-in "
        "definitions are for the scale [0, 1, 2] only)"
    )
    for grades in ([0, 1], [0, 1, 2, 3], [1, 2, 3]):
        scale = ScaleConfig(grades=grades, relevant_from=grades[1])
        with pytest.raises(ConfigError, match=r"no definition for grade .* of the scale"):
            scale.validate()
        assert scale.definitions() == {}
    built_in = ScaleConfig(grades=[0, 1, 2])
    built_in.validate()
    assert built_in.definitions() == BUILT_IN_MEANINGS
    own = ScaleConfig(grades=[0, 1], meanings={0: "no", 1: "yes"})
    own.validate()
    assert own.definitions() == {0: "no", 1: "yes"}
