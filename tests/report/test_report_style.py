"""How the report colours judges: free judges share one grey family, found from what the run
cost (a judge says it is free, the run prices it at nothing), and the others by the maker of
their models (the judge's descriptor, else the model id), never from a list of providers kept
in the report."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mmjudge.engine.cell import run_cell
from mmjudge.judges import registry
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.lexical import LexicalJudge
from mmjudge.report.analysis import analyse
from mmjudge.report.load import cell_table
from mmjudge.report.style import FREE_FAMILY, Palette, model_family
from tests.helpers import compose_config


def test_a_free_judge_is_in_the_free_family_whatever_its_provider() -> None:
    assert model_family("gpt-4o-2024-08-06", "openai") == "OpenAI"
    assert model_family("gpt-4o-2024-08-06", "openai", free=True) == FREE_FAMILY
    assert model_family("bm25", "lexical") == "lexical"
    assert model_family("my-model", "my_provider", free=True) == FREE_FAMILY


def test_a_paid_judge_is_coloured_by_the_maker_of_its_models() -> None:
    # OpenAI's API serves OpenAI's models whatever their id (a fine-tuned one included)
    assert model_family("ft:gpt-4o-mini:acme::abc123", "openai") == "OpenAI"
    assert model_family("claude-haiku-4-5", "anthropic") == "Anthropic"
    # a server that speaks OpenAI's API serves many makers' models: known by their id
    assert model_family("meta-llama/Llama-3.3-70B-Instruct", "openai_compatible") == "Meta"
    assert model_family("gemini-2.5-flash", "openai_compatible") == "Google"
    assert model_family("my-finetune", "openai_compatible") == "openai_compatible"
    # a provider nobody describes here (a run from elsewhere): its id, else its name
    assert model_family("qwen-2.5-7b", "somewhere") == "Qwen"
    assert model_family("x-1", None) == "other"


def test_a_model_is_free_only_when_every_one_of_its_cells_cost_nothing() -> None:
    palette = Palette.build(
        [
            ("bm25", "bm25", "lexical", True),
            ("bm25", "bm25", "lexical", True),
            ("mixed", "qwen-2", "openai_compatible", True),
            ("mixed", "qwen-2", "openai_compatible", False),
            ("gpt", "gpt-4o", "openai", False),
        ]
    )
    assert palette.family == {"bm25": FREE_FAMILY, "mixed": "Qwen", "gpt": "OpenAI"}
    assert list(palette.families) == ["OpenAI", "Qwen", FREE_FAMILY]  # free judges last


@pytest.fixture
def new_local_provider() -> Iterator[str]:
    """A local provider the report has never heard of: a free judge class under a new name."""

    class QuietLocal(LexicalJudge):
        descriptors = (JudgeDescriptor("quiet_local", free=True),)

    registry.register(QuietLocal)
    yield "quiet_local"
    registry.unregister(QuietLocal)


def test_a_new_local_provider_is_coloured_free_without_an_edit_in_the_report(
    tmp_path: Path, new_local_provider: str
) -> None:
    sweep = tmp_path / "sweep"
    cfg = compose_config(
        [
            f"model.provider={new_local_provider}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            "runner.progress=false",
        ]
    )
    run_cell(cfg, sweep / "cell")
    analysis = analyse(cell_table(sweep), n_boot=20)
    (cell,) = [c for stats in analysis.datasets for c in stats.cells]
    assert cell.summary.cell.provider == new_local_provider
    assert cell.free and cell.usd_per_million == 0
    assert analysis.palette.family[cell.judge.model] == FREE_FAMILY
