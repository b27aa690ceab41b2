"""A distilled judge's folder: its manifest written and read back by the one writer and reader,
and each unreadable folder refused in one line (no torch needed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mmjudge.errors import ConfigError
from mmjudge.judges.distilled_folder import (
    MANIFEST,
    DistilledManifest,
    HeldOutFigures,
    ImageHead,
    KappaFigure,
    read_manifest,
    write_manifest,
)


def manifest(**changes: object) -> DistilledManifest:
    figures = HeldOutFigures(
        n_items=12,
        n_queries=2,
        student_vs_source=KappaFigure(0.5, 0.25, 0.75, 12, 2),
        student_vs_people=KappaFigure(math.nan, None, None, 12, 2),
        source_vs_people=None,
    )
    values: dict[str, object] = {
        "grades": [0, 1, 2],
        "cut_points": [0.25, 0.75],
        "source": "runs/sweep",
        "teacher": "judge",
        "teacher_name": "gpt4o_mini",
        "dataset": "demo_fashion",
        "base": "all-MiniLM-L6-v2 (bundled)",
        "seed": 7,
        "epochs": 3,
        "epochs_done": 2,
        "trained_items": ["q1\tp1", "q1\tp2"],
        "held_out_queries": ["q2"],
        "held_out": figures,
        "train_seconds": 1.5,
    }
    values.update(changes)
    return DistilledManifest(**values)  # type: ignore[arg-type]


def test_the_manifest_reads_back_as_written(tmp_path: Path) -> None:
    written = manifest()
    write_manifest(tmp_path, written)
    read = read_manifest(tmp_path)
    # NaN is stored as null, so the undefined κ reads back as None
    expected_people = KappaFigure(None, None, None, 12, 2)
    assert read.held_out.student_vs_people == expected_people
    assert read.held_out.student_vs_source == written.held_out.student_vs_source
    assert read.trained_items == written.trained_items and read.seed == 7
    assert read.trained_item_set == {"q1\tp1", "q1\tp2"}
    data = json.loads((tmp_path / MANIFEST).read_text())
    assert data["schema_version"] == 1 and "trained_item_set" not in data
    assert data["held_out"]["student_vs_people"]["estimate"] is None


def test_provenance_names_teacher_items_seed_and_kappa() -> None:
    line = manifest().provenance()
    assert line == (
        "trained on 2 items of demo_fashion graded by gpt4o_mini (runs/sweep), from "
        "all-MiniLM-L6-v2 (bundled), seed 7, 3 epochs (stopped after 2); held-out κ vs "
        "teacher 0.50 [0.25, 0.75] on 12 items"
    )


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (None, "not a distilled judge's folder"),
        ("{not json", "cannot be read"),
        ('{"schema_version": 9}', "written by a newer mmjudge"),
        ('{"schema_version": 1}', r"cannot be read \(KeyError"),
    ],
)
def test_an_unreadable_folder_is_one_line(tmp_path: Path, damage: str | None, words: str) -> None:
    if damage is not None:
        (tmp_path / MANIFEST).write_text(damage, encoding="utf-8")
    with pytest.raises(ConfigError, match=words) as caught:
        read_manifest(tmp_path)
    assert "\n" not in str(caught.value)


def test_cut_points_must_fit_the_scale(tmp_path: Path) -> None:
    write_manifest(tmp_path, manifest(cut_points=[0.5]))
    with pytest.raises(ConfigError, match="do not fit"):
        read_manifest(tmp_path)


def test_an_image_head_reads_back_and_must_fit(tmp_path: Path) -> None:
    head = ImageHead("/models/clip", "abc123", -0.5, 1.25, 3.0, [0.3, 0.6], 30)
    write_manifest(tmp_path, manifest(modality="mm", image=head))
    read = read_manifest(tmp_path)
    assert read.image == head and read.modality == "mm"
    assert "images through /models/clip" in read.provenance()
    write_manifest(tmp_path, manifest(modality="mm", image=None))
    with pytest.raises(ConfigError, match="its image head do not fit"):
        read_manifest(tmp_path)
    short = ImageHead("/models/clip", "abc123", -0.5, 1.25, 3.0, [0.3], 30)
    write_manifest(tmp_path, manifest(modality="mm", image=short))
    with pytest.raises(ConfigError, match="image head's cut points"):
        read_manifest(tmp_path)
