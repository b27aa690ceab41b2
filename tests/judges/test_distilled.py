"""The distilled judge's checks, made from its folder's manifest alone (no model is loaded,
so no torch is needed): a missing or unreadable folder, another scale, images, and the
provenance recorded beside the cut points."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmjudge.config import ModelConfig
from mmjudge.errors import ConfigError
from mmjudge.judges.distilled import DistilledJudge
from mmjudge.judges.distilled_folder import write_manifest
from tests.helpers import compose_config
from tests.judges.test_distilled_folder import manifest


def model(path: Path | None, *more: str) -> ModelConfig:
    options = [] if path is None else [f"model.options.path={path}"]
    cfg = compose_config(["model=distilled", *options, *more])
    return cfg.model  # type: ignore[no-any-return]


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    write_manifest(tmp_path, manifest())
    return tmp_path


def test_the_cell_is_named_after_the_folder(folder: Path) -> None:
    assert model(folder).name == f"distilled-{folder.name}"


def test_the_stored_cut_points_grade_with_their_provenance(folder: Path) -> None:
    judge = DistilledJudge(model(folder))
    cuts = judge.check_scale([0, 1, 2])["text"]
    assert cuts.values == [0.25, 0.75]
    assert "distilled.json: trained on 2 items of demo_fashion graded by gpt4o_mini" in cuts.source
    assert [judge.grade(s, [0, 1, 2]) for s in (0.1, 0.25, 0.5, 0.75, 0.9)] == [0, 1, 1, 2, 2]


def test_another_scale_is_refused_in_one_line(folder: Path) -> None:
    judge = DistilledJudge(model(folder))
    with pytest.raises(ConfigError, match=r"trained on grades \[0, 1, 2\]") as caught:
        judge.check_scale([1, 2, 3, 4])
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("modality", ["mm", "image"])
def test_images_are_refused_in_one_line(folder: Path, modality: str) -> None:
    reason = DistilledJudge.refusal(model(folder), modality, modality != "text")
    assert reason is not None and "reads text only" in reason and "\n" not in reason
    assert DistilledJudge.refusal(model(folder), "text", False) is None


@pytest.mark.parametrize(
    ("where", "words"),
    [("unset", "needs model.options.path"), ("empty", "not a distilled judge's folder")],
)
def test_a_missing_folder_is_one_line(tmp_path: Path, where: str, words: str) -> None:
    path = None if where == "unset" else tmp_path
    with pytest.raises(ConfigError, match=words) as caught:
        DistilledJudge(model(path))
    assert "\n" not in str(caught.value)


def test_a_config_that_claims_images_is_refused(folder: Path) -> None:
    with pytest.raises(ConfigError, match="reads text only"):
        DistilledJudge(model(folder, "model.supports_images=true"))
