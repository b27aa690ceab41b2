"""mmjudge.compose: the command line's overrides, one-line errors, a user's config folder."""

from __future__ import annotations

from pathlib import Path

import pytest

import mmjudge
from mmjudge.api.compose import compose
from mmjudge.cli import testbank as command
from mmjudge.config import SweepConfig
from mmjudge.errors import ConfigError


def test_overrides_compose_the_typed_config() -> None:
    cfg = mmjudge.compose(["model=lexical", "modality=mm", "dataset.limit=5", "seed=3"])
    assert isinstance(cfg, SweepConfig)
    assert (cfg.model.name, cfg.modality.name, cfg.dataset.limit, cfg.seed) == (
        "lexical",
        "mm",
        5,
        3,
    )


def test_no_overrides_give_the_shipped_defaults() -> None:
    cfg = mmjudge.compose()
    assert (cfg.model.name, cfg.modality.name, cfg.dataset.name) == (
        "lexical",
        "text",
        "demo_fashion",
    )


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("model=nosuch", "unknown option 'nosuch' for model; valid options: "),
        ("runner.concurency=4", "unknown setting 'runner.concurency'; valid settings of runner"),
        ("runner.concurrency=many", "runner.concurrency"),
    ],
)
def test_a_bad_setting_fails_in_one_line(override: str, expected: str) -> None:
    with pytest.raises(ConfigError) as error:
        mmjudge.compose([override])
    assert expected in str(error.value)
    assert "\n" not in str(error.value)


def test_a_key_in_an_override_is_refused() -> None:
    with pytest.raises(ConfigError, match="key"):
        mmjudge.compose(["model.api_key=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"])


def test_a_users_folder_extends_the_shipped_groups(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "strict.yaml").write_text(
        "defaults:\n  - lexical\n  - _self_\nname: strict\noptions:\n  score_span: [0.5, 0.9]\n",
        encoding="utf-8",
    )
    cfg = mmjudge.compose(["model=strict", "modality=text"], config_dir=tmp_path)
    assert (cfg.model.name, cfg.model.provider) == ("strict", "lexical")
    assert list(cfg.model.options["score_span"]) == [0.5, 0.9]
    # the shipped options stay available beside the user's
    assert mmjudge.compose(["model=gpt4o_mini"], config_dir=tmp_path).model.name == "gpt4o_mini"


def test_an_unknown_option_in_a_users_folder_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        mmjudge.compose(["model=absent"], config_dir=tmp_path)
    assert "absent" in str(error.value) and "\n" not in str(error.value)


def test_a_missing_config_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        mmjudge.compose([], config_dir=tmp_path / "nowhere")


def test_the_testbank_command_composes_with_the_same_function() -> None:
    assert command.compose is compose
