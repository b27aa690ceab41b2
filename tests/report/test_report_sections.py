"""Report sections read from summaries and records: spend against forecast, and system
rankings for a TREC collection with run files."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from tests.helpers import run_sweep


def make_trec(root: Path, n_queries: int = 6, n_docs: int = 8, n_runs: int = 4) -> list[str]:
    rng = random.Random(7)
    words = ["cat", "food", "tower", "height", "paris", "river", "bridge", "garden"]
    root.mkdir(parents=True)
    queries, qrels, docs = [], [], []
    for q in range(n_queries):
        topic = [words[q % 8], words[(q + 3) % 8]]
        queries.append(f"q{q}\t{' '.join(topic)}\n")
        for d in range(n_docs):
            overlap = rng.sample(topic, k=d % 3) if d % 3 else []
            text = " ".join(overlap + rng.sample(words, k=3))
            docs.append({"doc_id": f"q{q}d{d}", "title": f"doc {d}", "text": text})
            qrels.append(f"q{q} 0 q{q}d{d} {min(3, len(overlap) + rng.randint(0, 1))}\n")
    (root / "queries.tsv").write_text("".join(queries))
    (root / "qrels.txt").write_text("".join(qrels))
    (root / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    names = []
    for r in range(n_runs):
        lines = []
        for q in range(n_queries):
            order = list(range(n_docs))
            rng.shuffle(order)
            for rank, d in enumerate(order, start=1):
                lines.append(f"q{q} Q0 q{q}d{d} {rank} {100 - rank} run{r}\n")
        name = f"run{r}.txt"
        (root / name).write_text("".join(lines))
        names.append(name)
    return names


@pytest.mark.slow
def test_trec_sweep_report_has_spend_and_system_rankings(tmp_path: Path) -> None:
    data = tmp_path / "trec"
    runs = make_trec(data)
    result = run_sweep(
        tmp_path,
        "dataset=trec_example",
        f"dataset.path={data}",
        f"dataset.runs=[{','.join(runs)}]",
        "model=lexical",
        "model.thresholds=[0.2,0.5,0.8]",
    )
    assert result.returncode == 0, result.stderr
    (report,) = list((tmp_path / "reports").iterdir())
    html = (report / "index.html").read_text()
    assert "Spend: actual against forecast" in html
    assert "System rankings under judge labels" in html
    assert "nDCG@10" in html and "Kendall τ" in html


@pytest.mark.slow  # over half a second
def test_report_lists_cascades_with_their_escalation_rate_and_prices_them(tmp_path: Path) -> None:
    from mmjudge.ensembles.cascades import build_cascade
    from mmjudge.report import build_report
    from tests.fake_runs import make_run

    keys = [(f"q{q}", f"r{r}") for q in range(6) for r in range(4)]
    human = {k: {"a": (i % 3), "b": (i % 3)} for i, k in enumerate(keys)}
    sweep = tmp_path / "sweep"
    cheap = make_run(
        sweep,
        "cheap",
        {k: (i + 1) % 3 for i, k in enumerate(keys)},
        human,
        model="cheap",
        cost=0.001,
    )
    dear = make_run(
        sweep, "dear", {k: i % 3 for i, k in enumerate(keys)}, human, model="dear", cost=0.01
    )
    summary = build_cascade(cheap, dear, sweep / "ensembles" / "c", rules=["middle"])
    out = build_report(sweep, tmp_path / "reports", n_boot=50)
    html = (out / "index.html").read_text()
    assert "Panels and cascades" in html
    assert summary.ensemble is not None
    assert f"{summary.ensemble.escalation_rate:.1%}" in html
    assert "cheap/default (cheap), dear/default (expensive)" in html
    sheet = html[html.index("Price sheet dated") : html.index("Resolved configs")]
    assert "not priced (free)" not in sheet  # a cascade's calls are its members', priced
    assert "priced through its members (cheap, dear): it makes no call of its own" in sheet
