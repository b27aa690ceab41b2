"""A new provider is one module (its judge class, with the descriptor of its provider's facts)
and one config file: nothing else in the package changes. A module kept outside
:mod:`mmjudge.judges` (a plugin's, this test's) registers its class; one inside it is found. The
test writes the module and the config in a temporary folder and runs a cell with them."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from mmjudge.engine.cell import run_cell
from mmjudge.judges import registry
from tests.helpers import compose_config

MODULE = '''
from dataclasses import dataclass
from typing import ClassVar

from mmjudge.judges.base import JudgeAPI
from mmjudge.judges.descriptor import JudgeDescriptor
from mmjudge.judges.options import JudgeOptions
from mmjudge.records import JudgeRequest, JudgeResponse, Usage


@dataclass(frozen=True)
class ConstantOptions(JudgeOptions):
    family: ClassVar[str] = "constant"
    grade: float = 1


class ConstantJudge(JudgeAPI):
    """Gives every item the same grade, for free."""

    descriptors = (JudgeDescriptor("constant", free=True),)
    cacheable = False
    Options = ConstantOptions

    async def generate(self, request: JudgeRequest) -> JudgeResponse:
        grade = int(self.options.grade)
        return JudgeResponse(text=f"{grade}\\nalways {grade}", usage=Usage())
'''

CONFIG = """\
name: constant
provider: constant
model_id: constant-1
supports_images: false
max_tokens: 0
options:
  grade: 2
"""


@pytest.fixture
def constant_provider(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pieces: a module on the path, its class registered, its config file."""
    (tmp_path / "constant_judge.py").write_text(MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    judge = importlib.import_module("constant_judge").ConstantJudge
    registry.register(judge)
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "constant.yaml").write_text(CONFIG, encoding="utf-8")
    yield tmp_path / "conf"
    registry.unregister(judge)
    sys.modules.pop("constant_judge", None)


def test_a_registered_module_and_a_config_file_make_a_working_judge(
    constant_provider: Path, tmp_path: Path
) -> None:
    cfg = compose_config(
        [
            f"hydra.searchpath=[file://{constant_provider}]",
            "model=constant",
            f"paths.results={tmp_path / 'results'}",
            "runner.progress=false",
        ]
    )
    summary = run_cell(cfg, tmp_path / "run")
    assert summary.n_judgments > 0 and summary.n_errors == 0
    assert summary.cost.total_usd == 0.0  # free: no price sheet entry was needed
    rows = (tmp_path / "run" / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(row)["label"] for row in rows} == {2}


def test_an_option_the_judge_does_not_declare_fails_in_one_line(
    constant_provider: Path, tmp_path: Path
) -> None:
    from mmjudge.errors import ConfigError

    cfg = compose_config(
        [
            f"hydra.searchpath=[file://{constant_provider}]",
            "model=constant",
            "+model.options.grde=2",
            f"paths.results={tmp_path / 'results'}",
        ]
    )
    with pytest.raises(ConfigError, match=r"\['grde'\] for 'constant' are not constant options"):
        run_cell(cfg, tmp_path / "run")
