"""A distilled judge that sees images: trained with a tiny CLIP model (random weights, built
here) beside a tiny cross-encoder, stored in its folder, and run on modality ``mm``, where
every grade is the one the stored head gives, computed here by hand from the two models.

Needs torch and the ``local`` extra (skipped without them); trains for an epoch, so slow.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

NEEDS_EXTRA = "needs torch and the local extra: pip install 'mmjudge[local]'"
pytestmark = [pytest.mark.needs_extra, pytest.mark.slow]

pytest.importorskip("torch", reason=NEEDS_EXTRA)
pytest.importorskip("sentence_transformers", reason=NEEDS_EXTRA)

from mmjudge.cli import distill as distill_cli  # noqa: E402  (after the skips)
from mmjudge.distill import Distilled, TrainSettings, distill  # noqa: E402
from mmjudge.distill.pairs import gather  # noqa: E402
from mmjudge.distill.with_images import pictures  # noqa: E402
from mmjudge.engine.cell import run_cell  # noqa: E402
from mmjudge.judges.distilled import load_cross_encoder, pair_scores  # noqa: E402
from mmjudge.judges.distilled_folder import read_manifest  # noqa: E402
from mmjudge.judges.distilled_image import fingerprint, load_image_model  # noqa: E402
from tests.fixtures.tiny_models import write_tiny_bert, write_tiny_clip  # noqa: E402
from tests.helpers import compose_config  # noqa: E402

ITEMS = 48


class Trained:
    """The source run, the two tiny models and the judge trained with images."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clip = write_tiny_clip(root / "clip")
        self.bert = write_tiny_bert(root / "bert")
        self.paths = [
            f"dataset.limit={ITEMS}",
            f"paths.results={root / 'results'}",
            f"paths.reports={root / 'reports'}",
            f"paths.response_cache={root / 'cache.sqlite'}",
            f"paths.image_cache={root / 'images'}",
            "runner.progress=false",
            "report.build=false",
        ]
        run_cell(compose_config(["model=lexical", *self.paths]), root / "lexical")
        self.settings = TrainSettings(base=str(self.bert), epochs=1, batch_size=16, seed=3)
        self.result: Distilled = distill(
            root / "lexical",
            root / "judge",
            teacher="humans",
            image_model=str(self.clip),
            held_out_share=0.34,
            settings=self.settings,
        )


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Trained:
    return Trained(tmp_path_factory.mktemp("images"))


def test_the_folder_stores_the_image_head_and_names_its_clip_model(trained: Trained) -> None:
    manifest = trained.result.manifest
    head = manifest.image
    assert manifest.modality == "mm" and head is not None
    assert head.image_model == str(trained.clip.resolve())
    assert head.fingerprint == fingerprint(trained.clip)
    assert len(head.cut_points) == len(manifest.grades) - 1
    assert head.cut_points == sorted(head.cut_points)
    assert head.n_trained == len(manifest.trained_items)  # every demo item has an image
    assert all(math.isfinite(w) for w in (head.bias, head.text_weight, head.image_weight))
    assert read_manifest(trained.result.folder) == manifest
    assert f"images through {trained.clip.resolve()}" in manifest.provenance()


def test_the_same_seed_fits_the_same_head(trained: Trained, tmp_path: Path) -> None:
    again = distill(
        trained.root / "lexical",
        tmp_path / "again",
        teacher="humans",
        image_model=str(trained.clip),
        held_out_share=0.34,
        settings=trained.settings,
    )
    assert again.manifest.image == trained.result.manifest.image
    assert again.manifest.held_out == trained.result.manifest.held_out


def by_hand(trained: Trained, keys: list[tuple[str, str]]) -> list[int]:
    """Each item's grade from the two models and the stored head, computed here (the texts
    and image files as training read them)."""
    import numpy as np

    manifest = trained.result.manifest
    head = manifest.image
    assert head is not None
    pairs = {(p.query_id, p.result_id): p for p in gather(trained.root / "lexical", "humans").pairs}
    encoder = load_cross_encoder(trained.result.folder)
    clip = load_image_model(trained.clip)
    out = []
    for key in keys:
        pair = pairs[key]
        score = pair_scores(encoder, [(pair.query, pair.text)])[0]
        q = clip.encode([pair.query], convert_to_numpy=True)[0]
        v = clip.encode(pictures(pair.images), convert_to_numpy=True)[0]
        cosine = float(q @ v / (np.linalg.norm(q) * np.linalg.norm(v)))
        s = min(max(score, 1e-6), 1 - 1e-6)
        z = head.bias + head.text_weight * math.log(s / (1 - s)) + head.image_weight * cosine
        joined = 1 / (1 + math.exp(-z))
        out.append(manifest.grades[sum(joined >= c for c in head.cut_points)])
    return out


def test_a_mm_cell_grades_text_and_image_through_the_head(trained: Trained) -> None:
    cfg = compose_config(
        [
            "model=distilled",
            f"model.options.path={trained.result.folder}",
            f"model.options.image_model={trained.clip}",
            "modality=mm",
            *trained.paths,
        ]
    )
    summary = run_cell(cfg, trained.root / "mm")
    assert summary.n_judgments == ITEMS and summary.n_errors == 0
    grading = summary.parts.grading
    assert grading is not None
    cuts = grading.to_json()
    assert "mm" in json.dumps(cuts) and "(image head)" in json.dumps(cuts)
    lines = (trained.root / "mm" / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert all("with its image" in str(r["explanation"]) for r in rows)
    keys = [(str(r["query_id"]), str(r["result_id"])) for r in rows]
    assert [r["label"] for r in rows] == by_hand(trained, keys)


def test_the_command_takes_the_image_model(trained: Trained, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    status = distill_cli.main(
        [
            str(trained.root / "lexical"),
            "--teacher",
            "humans",
            "--image-model",
            str(trained.clip),
            "--base",
            str(trained.bert),
            "--epochs",
            "1",
            "--holdout",
            "0.34",
            "--seed",
            "3",
            "--out",
            str(tmp_path / "cli"),
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "training items with an image through" in out
    assert f"model.options.image_model={trained.clip.resolve()} modality=mm" in out


def test_an_image_model_that_is_no_model_is_one_line(trained: Trained, tmp_path: Path) -> None:
    from mmjudge.errors import MMJudgeError

    with pytest.raises(MMJudgeError, match="not a local CLIP model folder") as caught:
        distill(
            trained.root / "lexical",
            tmp_path / "bad",
            teacher="humans",
            image_model=str(tmp_path),
            held_out_share=0.34,
            settings=trained.settings,
        )
    assert "\n" not in str(caught.value)
