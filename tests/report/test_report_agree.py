"""The report and ``mmjudge agree`` agree on every number they share.

A sweep report is built from saved records; the same labels are exported as TREC qrels (the
annotators' consensus as the human file, each judge's answered items as its file) and scored
by ``agree`` with its defaults. κ with its interval, the weighted κ, α and accuracy must be
identical, item counts included.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mmjudge.cli import agree
from mmjudge.data.qrels import write_qrels
from mmjudge.report import build_report
from mmjudge.report.analysis import analyse
from mmjudge.report.load import cell_table
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

DATASET = FakeDataset("shop", n_queries=25, grades=(0, 1, 2, 3), images=0, human_agreement=0.7)
JUDGES = [
    FakeJudge("steady", accuracy=0.75, usd_per_judgment=0.002),
    FakeJudge("flaky", accuracy=0.6, usd_per_judgment=0.0005, unparseable=0.15),
    FakeJudge("coin", accuracy=0.25),
]


def export_qrels(run_dirs: list[Path], out: Path) -> tuple[Path, dict[str, Path]]:
    """The consensus of every item any judge answered, and each judge's grades, as qrels."""
    human: dict[str, dict[str, int]] = {}
    judges: dict[str, Path] = {}
    for run_dir in run_dirs:
        labels: dict[str, dict[str, int]] = {}
        model = ""
        for line in (run_dir / "judgments.jsonl").read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            model = row["model"]
            grades = sorted(row["human_labels"].values())
            consensus = grades[(len(grades) - 1) // 2]  # the lower median
            human.setdefault(row["query_id"], {})[row["result_id"]] = consensus
            if row["error"] is None and row["label"] is not None:
                labels.setdefault(row["query_id"], {})[row["result_id"]] = row["label"]
        judges[model] = out / f"{model}.qrels"
        write_qrels(labels, judges[model])
    write_qrels(human, out / "human.qrels")
    return out / "human.qrels", judges


def fmt(value: float) -> str:
    return f"{value:.3f}".replace("-", "−")


@pytest.mark.slow  # over half a second
def test_report_and_agree_agree_on_every_shared_number(tmp_path: Path, capsys) -> None:
    sweep = write_sweep(tmp_path / "sweeps" / "s", [DATASET], JUDGES)
    page = (build_report(sweep.root, tmp_path / "reports") / "index.html").read_text()
    (stats,) = analyse(cell_table(sweep.root)).datasets

    human, judges = export_qrels(sweep.runs, tmp_path)
    assert agree.main([str(human), *map(str, judges.values()), "--format", "json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)["runs"]}

    for cell in stats.cells:
        score, row = cell.score, rows[cell.judge.model]
        assert score is not None
        assert (row["n"], row["n_queries"], row["off_scale"]) == (
            score.n_items,
            score.n_queries,
            0,
        )
        for key in ("kappa", "kappa_linear", "kappa_quadratic"):
            assert row[key] == getattr(score, key).as_dict(), (cell.judge.model, key)
        assert (row["alpha"], row["accuracy"]) == (score.alpha, score.accuracy)
        # the page shows the same numbers in the judge's row
        table_row = re.search(rf"<td class=\"l\">{cell.judge.model}</td>.*?</tr>", page, flags=re.S)
        assert table_row is not None
        shown = table_row.group(0)
        kappa = row["kappa"]
        assert f"{fmt(kappa['estimate'])} [{fmt(kappa['low'])}, {fmt(kappa['high'])}]" in shown
        for key in ("alpha", "accuracy"):
            assert f"<td>{fmt(row[key])}</td>" in shown
        assert f"<td>{fmt(row['kappa_linear']['estimate'])}</td>" in shown
        assert f"<td>{row['n']:,}</td>" in shown
    flaky = rows["flaky"]
    assert flaky["missing"] > 0 and flaky["n"] < stats.items.n  # failed answers left out
    assert abs(rows["coin"]["alpha"]) < 0.2 < rows["steady"]["alpha"]


@pytest.mark.parametrize("order", ["reversed", "shuffled"])
def test_agree_intervals_do_not_depend_on_the_order_of_lines(tmp_path: Path, order, capsys):
    sweep = write_sweep(tmp_path / "sweeps" / "s", [DATASET], JUDGES[:1])
    human, judges = export_qrels(sweep.runs, tmp_path)
    assert agree.main([str(human), str(judges["steady"]), "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)["runs"][0]
    lines = human.read_text().splitlines()
    lines = (
        lines[::-1] if order == "reversed" else list(np.random.default_rng(1).permutation(lines))
    )
    human.write_text("\n".join(lines) + "\n")
    assert agree.main([str(human), str(judges["steady"]), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"][0] == first
