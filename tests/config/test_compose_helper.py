"""The tests' quick composition (``tests/helpers.compose_config``: the chosen groups composed
once, value overrides applied to a copy) gives exactly the config Hydra's ``compose`` gives,
and Hydra's own errors."""

from __future__ import annotations

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from tests.helpers import compose_config, hydra_compose

CASES = [
    [],
    ["model=gpt4o", "dataset.limit=3"],
    ["dataset=crowdflower_example", "dataset.path=/tmp/some where", "runner.concurrency=64"],
    ["model=claude_haiku45", "modality=mm", "model.base_url=http://127.0.0.1:9/v1"],
    ["dataset.annotators=[a,b]", "runner.max_cost_usd=null", "seed=7"],
    ["dataset.scale.meanings={0: none, 1: some}", "prompt=paraphrase1", "perturb=stuff_query"],
    ["paths.results=${oc.env:HOME}/r", "runner.timeout_s=5"],
    ["+dataset.extra_setting=1"],
]


@pytest.mark.parametrize("overrides", CASES, ids=lambda o: " ".join(o) or "defaults")
def test_the_quick_way_composes_what_hydra_composes(overrides: list[str]) -> None:
    try:
        expected = hydra_compose(overrides)
    except ConfigCompositionException as error:
        with pytest.raises(ConfigCompositionException) as raised:
            compose_config(overrides)
        assert str(raised.value) == str(error)
        return
    got = compose_config(overrides)
    assert OmegaConf.to_yaml(got) == OmegaConf.to_yaml(expected)
    assert OmegaConf.is_struct(got) == OmegaConf.is_struct(expected)
    assert OmegaConf.is_readonly(got) == OmegaConf.is_readonly(expected)


def test_a_copy_is_returned_each_time() -> None:
    first = compose_config(["dataset.limit=3"])
    first.dataset.limit = 5
    assert compose_config(["dataset.limit=3"]).dataset.limit == 3


@pytest.mark.parametrize(
    "overrides", [["model.temprature=0.5"], ["model.max_tokens=many"], ["model=gtp4o"]]
)
def test_errors_are_hydras_own(overrides: list[str]) -> None:
    with pytest.raises(ConfigCompositionException) as expected:
        hydra_compose(overrides)
    with pytest.raises(ConfigCompositionException) as raised:
        compose_config(overrides)
    assert str(raised.value) == str(expected.value)
