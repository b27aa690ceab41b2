"""A new measure is its module, its test and its row in the docs: nothing else in the package
changes. The test takes all three from docs/agreement.md ("Adding a measure"), registers the
module's measure for its own length, and finds it in ``summary.json``, ``mmjudge agree``'s
table, CSV and JSON, the report's per-dataset table and ``judges.csv``."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mmjudge.cli import agree
from mmjudge.metrics import catalogue, scoring
from mmjudge.metrics.catalogue import Measure
from mmjudge.report.build import build_report
from mmjudge.store import Agreement, read_summary
from tests.fake_runs import make_run
from tests.helpers import REPO_ROOT
from tests.metrics.measure_docs import docs_row

GUIDE = REPO_ROOT / "docs" / "agreement.md"


def guide_blocks() -> dict[str, list[str]]:
    """The fenced blocks of the guide's "Adding a measure", by language."""
    section = GUIDE.read_text(encoding="utf-8").split("### Adding a measure", 1)[1]
    section = section.split("\n## ", 1)[0]
    found: dict[str, list[str]] = {}
    for language, body in re.findall(r"```(\w+)\n(.*?)```", section, flags=re.DOTALL):
        found.setdefault(language, []).append(body)
    return found


@pytest.fixture
def within_one() -> Iterator[Measure]:
    """The guide's measure module, run as the package would import it, for one test."""
    module, _test = guide_blocks()["python"]
    with catalogue.restored():
        namespace: dict[str, object] = {"__name__": "mmjudge.metrics.measures.within_one"}
        exec(compile(module, "within_one.py", "exec"), namespace)
        yield catalogue.measure("within_one")
    assert "within_one" not in [m.name for m in catalogue.measures()]


def test_the_guides_test_and_docs_row_are_the_measures(within_one: Measure) -> None:
    _module, test = guide_blocks()["python"]
    namespace: dict[str, object] = {"__name__": "test_within_one"}
    exec(compile(test, "test_within_one.py", "exec"), namespace)
    namespace["test_value_by_hand"]()  # type: ignore[operator]
    (row,) = guide_blocks()["text"]
    assert row.strip() == docs_row(within_one)


HUMANS = {
    "ann": np.array([0, 1, 2, 3, 3, 2, 1, 0, 2, 3], dtype=float),
    "bob": np.array([0, 1, 2, 3, 2, 2, 1, 1, 2, 3], dtype=float),
}
JUDGE = np.array([0, 3, 2, 1, 3, 0, 1, 0, 3, 3], dtype=float)
QUERIES = np.repeat(["q1", "q2"], 5)


def test_summary_json_has_it_with_its_interval(within_one: Measure) -> None:
    summary = scoring.agreement_summary(
        JUDGE, HUMANS, grades=[0, 1, 2, 3], query_ids=QUERIES, n_boot=50
    )
    # consensus (lower median of two) 0 1 2 3 2 2 1 0 2 3; grades apart 0 2 0 2 1 2 0 0 1 0
    assert summary.value("within_one") == pytest.approx(0.7)
    interval = summary.intervals["within_one"]
    assert interval["low"] <= 0.7 <= interval["high"]
    block = Agreement.from_json(json.loads(json.dumps(summary.to_json())))
    assert block.value("within_one") == pytest.approx(0.7) and block.within_one == block.value(
        "within_one"
    )
    assert block.to_json() == json.loads(json.dumps(summary.to_json()))


def _qrels(path: Path, labels: np.ndarray) -> Path:
    lines = [f"{q} 0 d{i} {int(g)}" for i, (q, g) in enumerate(zip(QUERIES, labels, strict=True))]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_agree_prints_it_in_every_format(within_one: Measure, tmp_path: Path, capsys) -> None:
    human = _qrels(tmp_path / "human.qrels", HUMANS["ann"])
    judge = _qrels(tmp_path / "judge.qrels", JUDGE)
    # grades apart from ann: 0 2 0 2 0 2 0 0 1 0 → 7 of 10 within one
    args = [str(human), str(judge), "--n-boot", "50"]
    assert agree.main(args) == 0
    header, _, line = (
        re.split(r"\s{2,}", text) for text in capsys.readouterr().out.splitlines()[:3]
    )
    shown = dict(zip(header, line, strict=True))
    assert shown["within_one [95% CI]"].startswith("0.700 [")
    assert agree.main([*args, "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert float(row["within_one"]) == pytest.approx(0.7)
    assert float(row["within_one_low"]) <= 0.7 <= float(row["within_one_high"])
    assert agree.main([*args, "--format", "json"]) == 0
    (found,) = json.loads(capsys.readouterr().out)["runs"]
    assert found["within_one"]["estimate"] == pytest.approx(0.7)


@pytest.mark.slow
def test_the_report_shows_it_in_its_table_and_csv(within_one: Measure, tmp_path: Path) -> None:
    keys = [(q, f"d{i}") for i, q in enumerate(QUERIES)]
    human = {key: {n: int(HUMANS[n][i]) for n in HUMANS} for i, key in enumerate(keys)}
    sweep = tmp_path / "sweep"
    for model, labels in (("near", JUDGE), ("exact", HUMANS["bob"])):
        judged = {key: int(labels[i]) for i, key in enumerate(keys)}
        make_run(sweep, f"toy.{model}", judged, human, model=model, grades=(0, 1, 2, 3))
    assert read_summary(sweep / "toy.near").metrics.value("within_one") == pytest.approx(0.7)
    out = build_report(sweep, tmp_path / "reports", n_boot=50)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<th data-sort>within one</th>" in page and "<td>0.700</td>" in page
    rows = {r["model"]: r for r in csv.DictReader((out / "judges.csv").open(encoding="utf-8"))}
    assert float(rows["near"]["within_one"]) == pytest.approx(0.7)
    assert float(rows["exact"]["within_one"]) == pytest.approx(1.0)
    assert rows["near"]["within_one_low"] != "" and rows["near"]["within_one_high"] != ""
