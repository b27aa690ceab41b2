"""The distilled judge's checks, made from its folder's manifest alone (no model is loaded,
so no torch is needed): a missing or unreadable folder, another scale, images, and the
provenance recorded beside the cut points."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmjudge.config import ModelConfig
from mmjudge.costs.ledger import cost_of
from mmjudge.costs.sheets import FREE, price_for
from mmjudge.engine.cell import forecast
from mmjudge.errors import ConfigError
from mmjudge.judges.distilled import DistilledJudge
from mmjudge.judges.distilled_folder import ImageHead, write_manifest
from mmjudge.judges.distilled_image import fingerprint
from mmjudge.records import Usage
from tests.helpers import compose_config, installed
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


def fake_clip(folder: Path, size: int = 10) -> Path:
    """A folder that looks like a CLIP checkpoint to the fingerprint (no weights to load)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "clip"}', encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"0" * size)
    return folder


def with_images(folder: Path, clip: Path) -> Path:
    head = ImageHead(str(clip), fingerprint(clip), 0.1, 1.5, 3.0, [0.3, 0.6], 2)
    folder.mkdir(parents=True, exist_ok=True)
    write_manifest(folder, manifest(modality="mm", image=head))
    return folder


def test_a_judge_trained_with_images_grades_mm_by_its_head(tmp_path: Path) -> None:
    clip = fake_clip(tmp_path / "clip")
    folder = with_images(tmp_path / "judge", clip)
    given = model(folder, f"model.options.image_model={clip}")
    assert DistilledJudge.refusal(given, "mm", True) is None
    judge = DistilledJudge(given)
    assert judge.supports_images and judge.modalities == ("text", "mm")
    cuts = judge.check_scale([0, 1, 2])
    assert cuts["text"].values == [0.25, 0.75] and cuts["mm"].values == [0.3, 0.6]
    assert f"images through {clip}" in cuts["mm"].source
    assert [judge.grade(s, [0, 1, 2], "mm") for s in (0.29, 0.3, 0.59, 0.6)] == [0, 1, 1, 2]
    assert [judge.grade(s, [0, 1, 2]) for s in (0.24, 0.3, 0.6, 0.75)] == [0, 1, 1, 2]
    reason = DistilledJudge.refusal(given, "image", True)
    assert reason is not None and "cannot judge modality 'image'" in reason and "\n" not in reason


def test_images_without_an_image_model_stay_refused(tmp_path: Path) -> None:
    folder = with_images(tmp_path / "judge", fake_clip(tmp_path / "clip"))
    reason = DistilledJudge.refusal(model(folder), "mm", True)
    assert reason is not None and "model.options.image_model" in reason and "\n" not in reason


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("text-only judge", "was trained on text only"),
        ("another CLIP", "is not the CLIP model the judge was trained with"),
        ("no model", "not a local CLIP model folder"),
    ],
)
def test_a_wrong_image_model_is_one_line(tmp_path: Path, case: str, words: str) -> None:
    clip = fake_clip(tmp_path / "clip")
    if case == "text-only judge":
        folder, given = tmp_path / "judge", clip
        folder.mkdir()
        write_manifest(folder, manifest())
    elif case == "another CLIP":
        folder, given = with_images(tmp_path / "judge", clip), fake_clip(tmp_path / "other", 11)
    else:
        folder, given = with_images(tmp_path / "judge", clip), tmp_path / "empty"
        given.mkdir()
    with pytest.raises(ConfigError, match=words) as caught:
        DistilledJudge(model(folder, f"model.options.image_model={given}"))
    assert "\n" not in str(caught.value)


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


# ----------------------------------------------------------------------------- its price


def test_it_is_free_unless_its_config_prices_it(folder: Path) -> None:
    sheet = compose_config(["model=distilled"]).pricing
    assert price_for(sheet, model(folder)) is FREE
    priced = price_for(sheet, model(folder, "model.options.usd_per_million=40"))
    # One judgment reports no tokens: it costs 40 dollars a million, 0.00004 dollars.
    assert cost_of(Usage(), priced).total_usd == pytest.approx(40e-6)
    assert price_for(sheet, model(folder, "model.options.usd_per_million=0")) is FREE


def test_a_gpu_hour_entry_in_the_sheet_prices_it_per_judgment(folder: Path) -> None:
    """``model.price_key`` names a sheet entry timed in judgments a second: $0.90 an hour at
    250 judgments a second is 0.9 / 900,000 dollars a judgment, $1 a million."""
    sheet = compose_config(
        ["model=distilled", "+pricing.models.gpu-box={gpu_hour: 0.9, judgments_per_s: 250}"]
    ).pricing
    priced = price_for(sheet, model(folder, "model.price_key=gpu-box"))
    assert priced.per_judgment == pytest.approx(1.0)
    assert cost_of(Usage(), priced).total_usd == pytest.approx(1e-6)


@pytest.mark.parametrize("value", ["-1", "abc", "inf"])
def test_a_bad_price_is_one_line_naming_the_setting(folder: Path, value: str) -> None:
    with pytest.raises(ConfigError, match=r"model\.options\.usd_per_million") as caught:
        price_for(
            compose_config(["model=distilled"]).pricing,
            model(folder, f"model.options.usd_per_million={value}"),
        )
    assert "\n" not in str(caught.value)


@pytest.mark.needs_extra
@pytest.mark.skipif(
    not installed("sentence_transformers"),
    reason="a cell of the distilled judge needs the local extra (pip install -e '.[local]')",
)
def test_a_dry_run_forecasts_its_price_per_judgment(folder: Path, tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "model=distilled",
            f"model.options.path={folder}",
            "model.options.usd_per_million=40",
            "modality=text",
            "dataset.limit=12",
            "runner.dry_run=true",
            "runner.progress=false",
            f"paths.results={tmp_path / 'results'}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.image_cache={tmp_path / 'images'}",
        ]
    )
    ahead = forecast(cfg, tmp_path / "dry")
    # 12 judgments at 40 dollars a million: 12 × 40 / 10⁶ = 0.00048 dollars, no tokens.
    assert ahead.sync.calls == 12
    assert ahead.sync.usd == pytest.approx(12 * 40 / 1e6)
    assert ahead.sync.input_tokens == 0 and ahead.sync.output_tokens == 0


def test_no_batch_discount_touches_a_price_per_judgment(folder: Path) -> None:
    priced = price_for(
        compose_config(["model=distilled"]).pricing,
        model(folder, "model.options.usd_per_million=40"),
    )
    batch = cost_of(Usage(), priced, batch=True, sheet_batch_discount=0.5)
    assert batch.total_usd == pytest.approx(40e-6) and batch.image_usd == 0.0
