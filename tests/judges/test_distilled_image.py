"""The image head of a distilled judge (no torch needed): its score computed by hand, its fit
against a general-purpose optimiser of the same loss, and the CLIP folder's fingerprint."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mmjudge.errors import ConfigError
from mmjudge.judges.distilled_image import (
    RIDGE,
    fingerprint,
    fit_head,
    head_scores,
    image_model_path,
)


def test_the_head_score_is_the_logistic_of_the_weighted_features() -> None:
    # bias 0, text weight 1, image weight 0: the head gives back the text score
    assert head_scores((0.0, 1.0, 0.0), [0.2, 0.9], [0.5, -0.1]) == pytest.approx([0.2, 0.9])
    # sigmoid(0.5 + 2·logit(0.8) − 3·0.25) = sigmoid(0.5 + 2·1.386294 − 0.75)
    z = 0.5 + 2 * math.log(0.8 / 0.2) - 0.75
    assert head_scores((0.5, 2.0, -3.0), [0.8], [0.25]) == pytest.approx([1 / (1 + math.exp(-z))])
    assert head_scores((0.0, 1.0, 1.0), [], []) == []


def test_the_fit_minimises_the_penalised_cross_entropy() -> None:
    scipy_optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(4)
    text = rng.uniform(0.05, 0.95, 80)
    cosine = rng.uniform(-0.2, 0.4, 80)
    truth = 1 / (1 + np.exp(-(-0.3 + 1.2 * np.log(text / (1 - text)) + 4.0 * cosine)))
    targets = np.clip(truth + rng.normal(0, 0.1, 80), 0, 1)
    x = np.column_stack([np.ones(80), np.log(text / (1 - text)), cosine])

    def loss(beta: np.ndarray) -> float:
        p = np.clip(1 / (1 + np.exp(-(x @ beta))), 1e-12, 1 - 1e-12)
        cross = -np.sum(targets * np.log(p) + (1 - targets) * np.log(1 - p))
        return float(cross + 0.5 * RIDGE * 80 * (beta[1] ** 2 + beta[2] ** 2))

    reference = scipy_optimize.minimize(
        loss,
        np.zeros(3),
        method="Nelder-Mead",
        options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 20000},
    )
    assert fit_head(text.tolist(), cosine.tolist(), targets.tolist()) == pytest.approx(
        tuple(reference.x), abs=1e-4
    )


def test_the_fit_stays_finite_on_pairs_it_separates() -> None:
    weights = fit_head([0.1, 0.2, 0.8, 0.9], [0.0, 0.1, 0.3, 0.4], [0.0, 0.0, 1.0, 1.0])
    assert all(math.isfinite(w) for w in weights) and weights[1] > 0 and weights[2] > 0


def test_the_fingerprint_follows_the_files_not_the_place(tmp_path: Path) -> None:
    one = tmp_path / "one"
    one.mkdir()
    (one / "config.json").write_text('{"model_type": "clip"}', encoding="utf-8")
    (one / "model.safetensors").write_bytes(b"0" * 100)
    two = tmp_path / "two"
    two.mkdir()
    for path in one.iterdir():
        (two / path.name).write_bytes(path.read_bytes())
    assert fingerprint(one) == fingerprint(two)
    (two / "model.safetensors").write_bytes(b"0" * 101)
    assert fingerprint(one) != fingerprint(two)


def test_a_folder_without_a_model_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model\.options\.image_model=.*not a local CLIP") as e:
        image_model_path("model.options.image_model", str(tmp_path))
    assert "\n" not in str(e.value)
