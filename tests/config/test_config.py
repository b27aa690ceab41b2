from pathlib import Path

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from mmjudge.config import SweepConfig
from mmjudge.keyguard import check_config, check_overrides
from tests.helpers import (
    DEMO_DIR,
    OPTION_GROUPS,
    compose_config,
    compose_option,
    shipped_options,
)


def options(group: str) -> list[str]:
    assert group in OPTION_GROUPS
    return [option for g, option in shipped_options() if g == group]


def test_default_config_is_the_offline_demo() -> None:
    typed = OmegaConf.to_object(compose_config())
    assert isinstance(typed, SweepConfig)
    assert typed.model.provider == "lexical"
    assert typed.dataset.name == "demo_fashion"
    assert typed.modality.name == "text"


def test_misspelt_key_fails_at_compose_time() -> None:
    with pytest.raises(ConfigCompositionException, match="temprature"):
        compose_config(["model.temprature=0.5"])


def test_unknown_option_lists_the_choices() -> None:
    with pytest.raises(ConfigCompositionException) as info:
        compose_config(["model=gtp4o"])
    message = str(info.value)
    assert "gpt4o" in message and "lexical" in message


def test_wrong_type_fails_at_compose_time() -> None:
    with pytest.raises(ConfigCompositionException, match="max_tokens"):
        compose_config(["model.max_tokens=many"])


def test_model_configs_pin_snapshots_and_name_key_variables() -> None:
    for option in options("model"):
        typed = OmegaConf.to_object(compose_option("model", option))
        assert isinstance(typed, SweepConfig)
        model = typed.model
        if model.provider in ("openai", "anthropic"):
            assert model.api_key_env and model.api_key_env.endswith("_API_KEY")
            assert any(ch.isdigit() for ch in model.model_id), model.model_id


@pytest.mark.parametrize(
    "arg",
    [
        "model.api_key_env=sk-abcdefghijklmnopqrstuvwx",
        "+model.options.api_key=hello",
        "model.base_url=http://x/?k=sk-ant-abcdefghijklmnopqrstu",
    ],
)
def test_overrides_holding_keys_are_refused(arg: str) -> None:
    problem = check_overrides([arg])
    assert problem is not None and "environment variable" in problem
    assert "abcdefghijklmnop" not in problem


def test_ordinary_overrides_pass_the_secret_check() -> None:
    assert check_overrides(["model=gpt4o", "model.api_key_env=MY_KEY", "-m"]) is None


def test_paths_do_not_depend_on_the_working_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = compose_config()
    typed = OmegaConf.to_object(cfg)
    assert isinstance(typed, SweepConfig)
    from mmjudge.data.schema import dataset_root

    assert dataset_root(typed.dataset) == DEMO_DIR


def test_config_values_holding_keys_are_refused() -> None:
    overrides = ["model.base_url='http://127.0.0.1:9/v1?k=sk-abcdefghijklmnopqrstuvwxyz'"]
    cfg = OmegaConf.to_container(compose_config(overrides))
    problem = check_config(cfg)
    assert problem is not None and "model.base_url" in problem
    assert "abcdefghijklmnop" not in problem
    assert check_config(OmegaConf.to_container(compose_config())) is None


@pytest.mark.slow  # over a second
def test_the_reference_study_is_one_experiment_file() -> None:
    """``+experiment=reference_study``: the study's five models × three modalities at its
    prices, as the sweeper's grid."""
    from hydra import compose, initialize_config_dir

    from tests.helpers import CONF_DIR

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose(
            config_name="config",
            overrides=["+experiment=reference_study"],
            return_hydra_config=True,
        )
    grid = cfg.hydra.sweeper.params
    assert cfg.pricing.date == "2024-08-16"
    assert grid.model.split(",") == [
        "gpt4v",
        "gpt4o",
        "gpt4o_mini",
        "claude35_sonnet",
        "claude3_haiku",
    ]
    assert grid.modality.split(",") == ["text", "mm", "image"]
    for model in grid.model.split(","):  # every model of the grid is priced in the sheet
        typed = OmegaConf.to_object(compose_config([f"model={model}", "pricing=2024-08-16"]))
        assert isinstance(typed, SweepConfig)
        assert typed.model.model_id in typed.pricing.models


def test_locations_seed_and_report_have_their_own_nodes() -> None:
    typed = OmegaConf.to_object(
        compose_config(["paths.results=/tmp/x", "seed=3", "report.build=false"])
    )
    assert isinstance(typed, SweepConfig)
    assert typed.paths.results == "/tmp/x" and typed.paths.response_cache.endswith(".sqlite")
    assert typed.seed == 3 and typed.report.build is False
