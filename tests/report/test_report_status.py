"""The report with cells that failed or were stopped: left out of the numbers, listed with
their errors, and named by the answers that miss them."""

from __future__ import annotations

import json
from pathlib import Path

from mmjudge.report.analysis import analyse
from mmjudge.report.build import build_report
from mmjudge.report.findings import answers
from mmjudge.report.load import cell_table
from tests.fake_runs import make_run

KEYS = [(f"q{i // 5}", f"r{i}") for i in range(20)]
HUMAN = {key: {"a": i % 3, "b": (i + i // 7) % 3} for i, key in enumerate(KEYS)}


def run(root: Path, name: str, modality: str, dataset: str = "shop", **summary: object) -> Path:
    labels = {key: HUMAN[key]["a"] for key in KEYS}
    errors = None
    if summary.get("status") == "failed":
        errors = {key: "BadRequestError: Invalid image" for key in KEYS}
        labels = dict.fromkeys(KEYS)
    run_dir = make_run(
        root, name, labels, HUMAN, dataset=dataset, model="vision", modality=modality, errors=errors
    )
    path = run_dir / "summary.json"
    data = json.loads(path.read_text())
    data.update(summary)
    if errors:
        data["errors"] = {"by_kind": {"BadRequestError": 20}, "first": errors[KEYS[0]]}
    path.write_text(json.dumps(data))
    return run_dir


def test_failed_cells_are_left_out_listed_and_named_by_the_answers(tmp_path: Path) -> None:
    root = tmp_path / "sweeps" / "s"
    run(root, "text", "text")
    run(root, "mm", "mm", status="failed", status_reason="20 of 20 judgments failed")
    run(root, "other", "text", dataset="photos", status="interrupted", status_reason="SIGINT")
    cells = cell_table(root)
    analysis = analyse(cells, n_boot=50)
    assert [d.name for d in analysis.datasets] == ["shop"]
    assert [c.judge.modality for c in analysis.datasets[0].cells] == ["text"]
    assert {(u.dataset, u.judge.modality, u.status) for u in analysis.not_analysed} == {
        ("shop", "mm", "failed"),
        ("photos", "text", "interrupted"),
    }
    use_case, _, image, _ = answers(analysis)
    assert "Only shop has completed cells" in use_case.lead
    assert "cannot be answered from this sweep" in image.lead
    assert "sweep a vision model" not in image.lead
    assert "vision · image + text on shop (failed)" in str(image.points[0])

    out = build_report(root, tmp_path / "reports", n_boot=50)
    html = (out / "index.html").read_text()
    assert "3 judge cells (1 complete, 1 failed, 1 interrupted), of which 1 is analysed" in html
    assert "Failed or stopped cells" in html
    assert "20 of 20" in html and "BadRequestError 20" in html and "Invalid image" in html
    summary = json.loads((root / "sweep_summary.json").read_text())
    assert summary["by_status"] == {"complete": 1, "failed": 1, "interrupted": 1}
    assert summary["exit_code"] == 130


def test_a_partial_cell_is_analysed_and_listed(tmp_path: Path) -> None:
    root = tmp_path / "sweeps" / "s"
    run(root, "text", "text", status="partial", status_reason="1 of 20 judgments failed (5%)")
    analysis = analyse(cell_table(root), n_boot=50)
    assert [c.judge.modality for c in analysis.datasets[0].cells] == ["text"]
    html = (build_report(root, tmp_path / "reports", n_boot=50) / "index.html").read_text()
    assert "yes, without its failed rows" in html


def test_the_sweep_summarys_counts_add_up_with_panels_and_skipped_cells(tmp_path: Path) -> None:
    root = tmp_path / "sweeps" / "s"
    run(root, "text", "text")
    run(root, "image", "image", status="skipped", skip_reason="no images")
    run(root, "mm", "mm", status="failed", status_reason="20 of 20 judgments failed")
    run(root, "panel", "text", kind="panel")
    build_report(root, tmp_path / "reports", n_boot=20)
    summary = json.loads((root / "sweep_summary.json").read_text())
    assert summary["n_cells"] == 4
    assert sum(summary["by_status"].values()) == summary["n_cells"]
    assert summary["by_status"] == {"complete": 2, "failed": 1, "skipped": 1}


def test_a_sweep_with_nothing_judged_builds_no_report(tmp_path: Path) -> None:
    from mmjudge.api.sweep_end import finish_sweep

    root = tmp_path / "sweeps" / "s"
    run(root, "mm", "mm", status="failed", status_reason="20 of 20 judgments failed")
    run(root, "image", "image", status="skipped", skip_reason="no images")
    done = finish_sweep(root, tmp_path / "reports", ensembles=False)
    assert done.report is None
    assert not (tmp_path / "reports").exists()
    assert done.by_status == {"failed": 1, "skipped": 1}  # still counted and summarised
    assert (root / "sweep_summary.json").is_file()
