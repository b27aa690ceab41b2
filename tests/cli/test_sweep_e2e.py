"""The whole flow as a user runs it: python -m mmjudge.sweep, single runs and multiruns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import DEMO_DIR, run_sweep

RECORD_FIELDS = {
    "run_id",
    "dataset",
    "query_id",
    "result_id",
    "modality",
    "provider",
    "model",
    "prompt_id",
    "prompt_hash",
    "image_sha256s",
    "raw_output",
    "label",
    "parse_error",
    "human_labels",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_s",
    "cached",
    "error",
    "timestamp",
}


pytestmark = pytest.mark.slow  # every test here starts python -m mmjudge.sweep


def only(paths: list[Path]) -> Path:
    assert len(paths) == 1, paths
    return paths[0]


def test_default_run_writes_records_summary_and_report(tmp_path: Path) -> None:
    result = run_sweep(tmp_path)
    assert result.returncode == 0, result.stderr
    run_dir = only(list((tmp_path / "results" / "runs").iterdir()))
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]
    items = (DEMO_DIR / "items.jsonl").read_text().splitlines()
    assert len(rows) == len(items)
    assert set(rows[0]) >= RECORD_FIELDS
    assert all(row["cost_usd"] == 0.0 and row["provider"] == "lexical" for row in rows)
    assert {row["label"] for row in rows} <= {0, 1, 2}
    summary = json.loads((run_dir / "summary.json").read_text())
    for key in ("schema_version", "config", "packages", "git_commit", "n_judgments", "n_errors"):
        assert key in summary
    assert summary["n_judgments"] == len(items)
    assert -1.0 <= summary["metrics"]["kappa"] <= 1.0
    assert summary["cost"]["total_usd"] == 0.0 and summary["cost"]["usd_per_million"] == 0.0
    report = only(list((tmp_path / "reports").iterdir()))
    assert (report / "index.html").stat().st_size > 1000
    assert (report / "kappa_vs_cost.png").stat().st_size > 1000
    assert "κ=" in result.stderr
    # the page leads with its answer: a card naming the judge to use on the demo dataset
    html = (report / "index.html").read_text(encoding="utf-8")
    card = html[html.index('<section class="card"') : html.index('id="chart"')]
    assert ">demo_fashion</a>" in card and "<b>lexical · text only</b>" in card
    assert html.index('<section class="card"') < html.index('id="answers"')


def test_multirun_skips_cells_the_judge_cannot_do(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path, "-m", "model=lexical", "modality=text,mm,image", "dataset=demo_fashion"
    )
    assert result.returncode == 0, result.stderr
    sweep_dir = only(list((tmp_path / "results" / "sweeps").iterdir()))
    data = json.loads((sweep_dir / "sweep_summary.json").read_text())
    status = {cell["modality"]: cell for cell in data["cells"]}
    assert status["text"]["status"] == "complete"
    for modality in ("mm", "image"):
        assert status[modality]["status"] == "skipped"
        assert "lexical" in status[modality]["skip_reason"]
    html = (tmp_path / "reports" / sweep_dir.name / "index.html").read_text()
    assert "Skipped cells" in html and "image only" in html


def test_dataset_error_is_one_line_without_traceback(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    root.mkdir()
    (root / "items.jsonl").write_text(
        '{"query_id": "q", "query": "x", "result_id": "r", "labels": {"annotator_a": 7}}\n'
    )
    result = run_sweep(tmp_path, f"dataset.path={root}")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "items.jsonl:1: field 'labels.annotator_a' is 7" in result.stderr
    assert run_folders(tmp_path) == []


def run_folders(tmp_path: Path) -> list[Path]:
    runs = tmp_path / "results" / "runs"
    return sorted(runs.iterdir()) if runs.is_dir() else []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("model=lexical", "model.thresholds=[0.1,0.2,0.3]"), "model.thresholds=[0.1, 0.2, 0.3]"),
        (("runner.mode=nonsense",), "runner.mode='nonsense' is not allowed; use one of sync"),
        # A model the sheet has no price for; the address is a closed loopback port, in case.
        (
            ("model=gpt5_mini", "pricing=2024-08-16", "model.base_url=http://127.0.0.1:9/v1"),
            "has no price in the 2024-08-16 sheet",
        ),
    ],
)
def test_a_run_that_stops_before_its_first_call_leaves_no_folder(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    result = run_sweep(tmp_path, *args, env={"OPENAI_API_KEY": "sk-test-never-sent"})
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert run_folders(tmp_path) == []
    assert not (tmp_path / "results").exists()  # nor the empty folders Hydra made above it


def test_a_failed_resume_keeps_the_folder_it_resumes(tmp_path: Path) -> None:
    first = run_sweep(tmp_path, "dataset.limit=4", "report.build=false")
    assert first.returncode == 0, first.stderr
    (run_dir,) = run_folders(tmp_path)
    rows = (run_dir / "judgments.jsonl").read_text()
    again = run_sweep(
        tmp_path, "dataset.limit=4", "runner.mode=nonsense", f"hydra.run.dir={run_dir}"
    )
    assert again.returncode == 2
    assert run_folders(tmp_path) == [run_dir]
    assert (run_dir / "judgments.jsonl").read_text() == rows
    assert (run_dir / "summary.json").is_file()


def test_dry_run_forecasts_without_calls(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path,
        "model=gpt4o",
        "modality=mm",
        "runner.dry_run=true",
        env={"OPENAI_API_KEY": "test"},
    )
    assert result.returncode == 0, result.stderr
    assert "forecast" in result.stdout and "per million judgments" in result.stdout
    run_dir = only(list((tmp_path / "results" / "runs").iterdir()))
    forecast = json.loads((run_dir / "forecast.json").read_text())["forecast"]
    assert forecast["calls"] > 0
    assert forecast["image_tokens"] == 85 * forecast["calls"]
    assert not (run_dir / "judgments.jsonl").exists()


@pytest.mark.parametrize("arg", ["model.api_key_env=sk-abcdefghijklmnopqrstuvwxyz012345"])
def test_keys_on_the_command_line_are_refused_before_anything_is_written(
    tmp_path: Path, arg: str
) -> None:
    result = run_sweep(tmp_path, arg)
    assert result.returncode == 2
    assert "environment variable" in result.stderr
    assert not (tmp_path / "results").exists()


def test_a_grid_with_a_missing_key_is_refused_before_any_cell_is_judged(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path,
        "-m",
        "model=lexical,gpt4o,claude_sonnet45",
        env={"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""},
    )
    assert result.returncode == 2
    [line] = [text for text in result.stderr.splitlines() if text.startswith("mmjudge:")]
    assert "OPENAI_API_KEY (needed by gpt4o)" in line
    assert "ANTHROPIC_API_KEY (needed by claude_sonnet45)" in line
    assert result.stderr.endswith("\n")
    assert not (tmp_path / "results").exists()  # the lexical cell was not judged either
