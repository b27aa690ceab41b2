"""The report, built from synthetic sweeps whose judges have known quality and cost."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mmjudge import metrics
from mmjudge.records import JudgmentRecord
from mmjudge.report import build_report
from mmjudge.report.analysis import Analysis, analyse, pareto_frontier, saved_score
from mmjudge.report.browser import BUDGET, MIN_PER_JUDGE, per_judge_cap
from mmjudge.report.findings import answers, cheapest_as_good
from mmjudge.report.load import DatasetItems, cell_table, read_cell_labels
from mmjudge.store import Agreement, load_judgments
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep
from tests.helpers import REPO_ROOT

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(1)>"

SHOP = FakeDataset("shop", n_queries=30, description="A {colour} {garment}. " + SCRIPT + IMG)
PHOTOS = FakeDataset("photos", n_queries=30, human_agreement=0.75, images=0)
JUDGES = [
    FakeJudge("free", accuracy=0.45),
    FakeJudge("cheap", accuracy={"shop": 0.85, "photos": 0.4}, usd_per_judgment=0.0001),
    FakeJudge("strong", accuracy=0.97, usd_per_judgment=0.003),
    FakeJudge("vision", accuracy=0.55, usd_per_judgment=0.001),
    FakeJudge(
        "vision",
        modality="mm",
        accuracy=0.8,
        usd_per_judgment=0.0013,
        image_share=0.3,
        image_tokens=85,
        explanation="It {verdict}. " + SCRIPT,
    ),
    FakeJudge("vision", modality="image", accuracy=0.55, usd_per_judgment=0.0008),
]
SKIP_REASON = "judge 'free' (synthetic) does not accept modality 'mm' (accepts: text)"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report") / "sweeps" / "main"
    write_sweep(
        root,
        [SHOP, PHOTOS],
        JUDGES,
        skipped=[("shop", FakeJudge("free", modality="mm"), SKIP_REASON)],
    )
    return root


@pytest.fixture(scope="module")
def analysis(sweep: Path) -> Analysis:
    return analyse(cell_table(sweep))


@pytest.fixture(scope="module")
def report(sweep: Path) -> Path:
    return build_report(sweep, sweep.parent.parent / "reports")


@pytest.fixture(scope="module")
def html(report: Path) -> str:
    return (report / "index.html").read_text(encoding="utf-8")


def _text(markup: object) -> str:
    """Visible text of an HTML fragment (tags dropped, the few entities used decoded)."""
    text = re.sub(r"<[^>]+>", "", str(markup))
    return text.replace("&amp;", "&").replace("&#39;", "'").replace("&lt;", "<")


# --------------------------------------------------------------------------- frontier


def test_pareto_frontier_on_a_hand_made_case() -> None:
    costs = [0.0, 0.0, 1.0, 1.0, 2.0, 5.0, 5.0, 3.0]
    kappas = [0.3, 0.2, 0.5, 0.5, 0.4, 0.7, math.nan, 0.7]
    assert pareto_frontier(costs, kappas) == [
        True,  # free and the best free one
        False,  # free but below another free judge
        True,  # two identical points are both kept
        True,
        False,  # dearer and worse than (1, 0.5)
        False,  # same κ as (3, 0.7) at a higher price
        False,  # no κ
        True,
    ]
    assert pareto_frontier([], []) == []


def test_frontier_cells_are_exactly_the_non_dominated_ones(analysis: Analysis) -> None:
    for stats in analysis.datasets:
        cells = stats.ranked
        for cell in cells:
            dominated = any(
                o is not cell
                and o.usd_per_million <= cell.usd_per_million
                and o.kappa.estimate >= cell.kappa.estimate
                and (
                    o.usd_per_million < cell.usd_per_million
                    or o.kappa.estimate > cell.kappa.estimate
                )
                for o in cells
            )
            assert cell.frontier is not dominated, (stats.name, cell.judge)
        assert any(c.judge.model == "free" for c in stats.frontier_cells)


# --------------------------------------------------------------------------- statistics


def test_kappa_and_interval_match_the_summary_and_the_metrics(analysis: Analysis) -> None:
    for stats in analysis.datasets:
        for cell in stats.cells:
            assert cell.kappa.estimate == pytest.approx(cell.summary.metrics.kappa)
            assert cell.kappa.low <= cell.kappa.estimate <= cell.kappa.high
        pair = stats.human_pairs[0]
        humans = stats.items.humans
        assert pair.kappa.estimate == pytest.approx(
            metrics.cohen_kappa(humans[pair.a], humans[pair.b], stats.grades)
        )
        assert stats.ceiling == (pair.kappa.estimate, pair.kappa.estimate)


def test_every_number_of_a_cell_is_the_summary_number(
    analysis: Analysis, report: Path, sweep: Path
) -> None:
    """The report, summary.json and sweep_summary.json score a cell with one definition:
    same κ, interval, weighted κ, α and accuracy, on the same items."""
    listed = json.loads((sweep / "sweep_summary.json").read_text(encoding="utf-8"))
    by_run = {cell["run_id"]: cell for cell in listed["cells"]}
    for stats in analysis.datasets:
        for cell in stats.cells:
            m, score = cell.summary.metrics.to_json(), cell.score
            assert score is not None and score.n_items == m["n_scored"]
            assert score.kappa.as_dict() == m["intervals"]["kappa"]
            assert score.kappa_linear.as_dict() == m["intervals"]["kappa_linear"]
            assert score.kappa_quadratic.estimate == m["kappa_quadratic"]
            assert (score.alpha, score.accuracy) == (m["alpha"], m["accuracy"])
            row = by_run[cell.run_id]
            assert row["kappa_interval"] == score.kappa.as_dict()
            assert (row["alpha"], row["n_scored"]) == (score.alpha, score.n_items)


def _intervals_in(html: str) -> list[tuple[str, str, str]]:
    """Every unsigned "estimate [low, high]" shown on the page (Δκ intervals are signed)."""
    number = r"−?\d+\.\d+"
    return re.findall(rf"({number}) \[({number}), ({number})\]", html)


def _judge_intervals_are_shown_once(analysis: Analysis, html: str) -> int:
    """Each judge's κ appears on the page with one interval only; returns how many
    occurrences were checked."""
    shown = _intervals_in(html)
    checked = 0
    cells = [c for d in analysis.datasets for c in d.ranked]
    means = [a.kappa for a in analysis.averages] if len(analysis.datasets) > 1 else []
    for digits in (2, 3):
        estimates = [num_text(c.kappa.estimate, digits) for c in cells]
        others = [num_text(m.estimate, digits) for m in means]
        for cell, estimate in zip(cells, estimates, strict=True):
            if estimates.count(estimate) > 1 or estimate in others:
                continue  # two κ with the same rounded value cannot be told apart here
            expected = (num_text(cell.kappa.low, digits), num_text(cell.kappa.high, digits))
            found = [(low, high) for e, low, high in shown if e == estimate]
            assert found, (cell.judge, estimate)
            assert set(found) == {expected}, (cell.judge, found, expected)
            checked += len(found)
    return checked


def num_text(value: float, digits: int) -> str:
    return f"{value:.{digits}f}".replace("-", "−")


def test_every_occurrence_of_a_judges_interval_is_the_same(
    analysis: Analysis, html: str, tmp_path: Path
) -> None:
    assert _judge_intervals_are_shown_once(analysis, html) >= 2 * len(JUDGES)
    # One dataset: the "mean over datasets" of a judge is its only κ, with that interval
    # (it used to be redrawn symmetric from a normal approximation: [0.06, 0.16] beside
    # [0.05, 0.16]).
    root = tmp_path / "sweeps" / "one"
    judges = [
        FakeJudge("rand", accuracy=0.34),
        FakeJudge("good", accuracy=0.7, usd_per_judgment=0.001),
        FakeJudge("best", accuracy=0.9, usd_per_judgment=0.003),
    ]
    write_sweep(root, [FakeDataset("solo", n_queries=12, images=0)], judges)
    one = build_report(root, tmp_path / "reports", n_boot=200)
    page = (one / "index.html").read_text(encoding="utf-8")
    solo = analyse(cell_table(root), n_boot=200)
    assert _judge_intervals_are_shown_once(solo, page) >= 3 * len(judges)


def test_a_random_judge_has_alpha_near_zero_in_the_table(analysis: Analysis) -> None:
    for stats in analysis.datasets:
        free = next(c for c in stats.cells if c.judge.model == "free")
        strong = next(c for c in stats.cells if c.judge.model == "strong")
        assert free.score is not None and strong.score is not None
        assert free.score.alpha < 0.45 < strong.score.alpha
        assert stats.alpha_humans > free.score.alpha


def test_answers_name_a_clear_winner(analysis: Analysis) -> None:
    q1, q2, _, q4 = answers(analysis)
    assert "photos the best itself, strong · text only" in _text(q4.points[-1])
    lead = _text(q2.lead)
    assert lead.startswith("Yes: strong · text only has the highest κ on every dataset")
    assert "not distinguishable" not in lead
    for stats in analysis.datasets:
        runner_up = stats.best_vs_others[0]
        assert runner_up.distinguishable and runner_up.low > 0
    assert all("it is ahead of the runner-up" in _text(p) for p in q2.points)
    # the cheap judge is good on one dataset and poor on the other: quality depends on it
    assert _text(q1.lead).startswith("Yes")
    cheap = next(_text(p) for p in q1.points if p.startswith("cheap"))
    assert "differs across datasets (shop above photos" in cheap
    assert 'href="#kappa-by-dataset"' in str(q1.sources)


def test_answers_say_not_distinguishable_when_intervals_overlap(tmp_path: Path) -> None:
    tie = FakeDataset("tie", n_queries=20, images=0)
    judges = [
        FakeJudge("alpha", accuracy=0.8, usd_per_judgment=0.001),
        FakeJudge("beta", accuracy=0.8, usd_per_judgment=0.002),
    ]
    root = tmp_path / "sweeps" / "tie"
    write_sweep(root, [tie], judges)
    result = analyse(cell_table(root))
    (stats,) = result.datasets
    best, runner = stats.ranked
    assert best.kappa.overlaps(runner.kappa)
    paired = stats.best_vs_others[0]
    assert paired.low < 0 < paired.high and not paired.distinguishable
    q1, q2, _, q4 = answers(result)
    point = _text(q2.points[0])
    assert "not distinguishable from the runner-up" in point
    assert "not distinguishable" in _text(q2.lead)
    assert "one dataset" in _text(q1.lead)
    # the dearer judge is on the frontier only if it is better; either way the step is noise
    if len(stats.frontier_cells) == 2:
        assert "not distinguishable from the cheaper" in _text(q4.points[0])
    cheapest = cheapest_as_good(stats)
    assert cheapest is not None and cheapest.judge.model == "alpha"
    expected = (
        "tie the best itself, alpha · text only"
        if best.judge.model == "alpha"
        else "tie alpha · text only ($1,000 per million"
    )
    assert expected in _text(q4.points[-1])


def test_image_effect_is_paired_with_an_interval(analysis: Analysis, html: str) -> None:
    effects = {
        (stats.name, c.a.judge.modality): c
        for stats in analysis.datasets
        for c in stats.modality_effects
    }
    assert set(effects) == {
        ("shop", "mm"),
        ("shop", "image"),
        ("photos", "mm"),
        ("photos", "image"),
    }
    for (_, modality), c in effects.items():
        assert c.b.judge.modality == "text" and c.a.judge.model == "vision"
        assert c.low <= c.difference <= c.high and 0 <= c.p_value <= 1
        assert c.n_items == 300
        if modality == "mm":
            assert c.distinguishable and c.low > 0
    _, _, q3, _ = answers(analysis)
    assert "the image helps" in _text(q3.points[1]) or "the image helps" in _text(q3.points[0])
    section = html[html.index('id="image-vs-text"') : html.index('id="frontier"')]
    assert "Δκ" in section and "image helps" in section
    assert re.search(r"\[\+0\.\d{3}, \+0\.\d{3}\]", section)
    assert 'id="fig-image-vs-text"' in section


# --------------------------------------------------------------------------- the page


def _markup(html: str) -> str:
    """The page without the contents of its script elements."""
    return re.sub(r"(<script\b[^>]*>).*?(</script>)", r"\1\2", html, flags=re.S)


def browser_payload(html: str) -> dict:
    """The disagreement browser's items, as the page's script reads them."""
    found = re.search(r'<script type="application/json" id="browser-data">(.*?)</script>', html)
    assert found
    return dict(json.loads(found.group(1)))


def test_files_are_written_and_self_contained(report: Path, html: str) -> None:
    for name in (
        "kappa_vs_cost.png",
        "kappa_by_dataset.png",
        "image_vs_text.png",
        "judges.csv",
    ):
        data = (report / name).read_bytes()
        assert len(data) > 1000, name
    assert len(html) > 20_000
    markup = _markup(html)
    sources = re.findall(r'\bsrc="([^"]*)"', markup)
    assert sources and all(s.startswith("data:image/") for s in sources)
    assert "<link" not in markup and "http://" not in markup and "https://" not in markup
    assert not re.search(r"<script[^>]*\bsrc=", html)  # every script is inline
    assert "vegaEmbed(" in html and '"$schema"' in html  # the chart's library and spec
    thumbs = {item[5] for item in browser_payload(html)["items"] if item[5]}
    assert thumbs and all(t.startswith("thumbs/") and (report / t).is_file() for t in thumbs)
    for anchor in ("q1", "q2", "q3", "q4", "fig-kappa-cost", "kappa-by-dataset", "frontier"):
        assert f'id="{anchor}"' in html
    for href in set(re.findall(r'href="#([^"]+)"', markup)):
        assert f'id="{href}"' in html, href


def test_dataset_text_is_escaped(html: str) -> None:
    """Dataset texts reach the page only escaped: as HTML entities in the markup, and inside
    script data with every ``<`` written ``\\u003c`` (the browser test checks the DOM)."""
    assert SCRIPT not in html and IMG not in html
    assert "\\u003cscript>alert(1)\\u003c/script>" in html
    assert "\\u003cimg src=x onerror=alert(1)>" in html
    payload = browser_payload(html)
    assert any(SCRIPT in field for item in payload["items"] for _, field in item[4])


def test_tables_hold_the_requested_columns(html: str) -> None:
    shop = html[html.index("<h3>Dataset: shop</h3>") : html.index('id="image-vs-text"')]
    for header in ("κ [95% CI]", "κ linear", "κ quadratic", "α", "accuracy", "unparseable"):
        assert f">{header}<" in shop
    assert "humans: annotator_a vs annotator_b" in shop
    assert re.search(r"0:\d+% 1:\d+% 2:\d+%", shop)
    assert "$1,300" in shop  # $ per million of vision · image + text
    assert "$390 / $910" in shop  # its image / text split


def test_skipped_cells_are_listed(html: str) -> None:
    section = html[html.index('id="skipped"') : html.index('id="provenance"')]
    assert "free" in section and "image + text" in section
    assert "does not accept modality" in section


def test_provenance_lists_config_prices_and_versions(html: str) -> None:
    section = html[html.index('id="provenance"') :]
    assert "Price sheet dated 2026-10-31" in section and "strong-synthetic" in section
    assert "<details>" in section and "<code>dataset</code>" in section
    assert "&#34;loader&#34;: &#34;jsonl&#34;" in section
    assert "numpy" in section and "Git commit" in section


def test_disagreement_browser_caps_and_counts(tmp_path: Path, sweep: Path) -> None:
    out = build_report(sweep, tmp_path, "capped", max_disagreements=3, n_boot=20)
    page = (out / "index.html").read_text(encoding="utf-8")
    payload = browser_payload(page)
    per_cell: dict[tuple[str, str], int] = {}
    for judge, item, _, _ in payload["rows"]:
        key = (payload["judges"][judge], payload["items"][item][0])
        per_cell[key] = per_cell.get(key, 0) + 1
    assert per_cell and max(per_cell.values()) <= 3
    assert per_cell[("free · text only", "shop")] == 3
    counts = re.search(
        r"<td class=\"l\">shop</td><td class=\"l\">free · text only</td>"
        r"<td>(\d+)</td><td>300</td>",
        page,
    )
    assert counts and int(counts.group(1)) > 3
    # an item's texts are stored once, however many judges disagree on it
    keys = [tuple(item[:3]) for item in payload["items"]]
    assert len(keys) == len(set(keys)) < len(payload["rows"])
    shop = [item for item in payload["items"] if item[0] == "shop"]
    assert all(item[5] and (out / item[5]).is_file() for item in shop)  # thumbnails beside
    assert "data:image/jpeg" not in page


def test_the_browser_shares_its_budget_on_a_large_sweep() -> None:
    assert per_judge_cap(50, 10) == 50
    assert per_judge_cap(50, 225) == BUDGET // 225 < 50
    assert per_judge_cap(50, 10_000) == MIN_PER_JUDGE
    assert per_judge_cap(2, 10_000) == 2


def test_browser_survives_a_missing_dataset(tmp_path: Path) -> None:
    dataset = FakeDataset("gone", n_queries=5, images=2)
    sweep = write_sweep(tmp_path / "sweeps" / "gone", [dataset], [FakeJudge("free", accuracy=0.3)])
    shutil.rmtree(sweep.datasets["gone"])
    page = (build_report(sweep.root, tmp_path / "reports", n_boot=20) / "index.html").read_text()
    assert "the dataset could not be read" in page
    assert "(text unavailable)" in page and "data:image/jpeg" not in page


@pytest.mark.slow
def test_rebuild_imports_no_provider(sweep: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from mmjudge.cli.report import main\n"
        f"assert main([{str(sweep)!r}, '--out', {str(tmp_path)!r}, '--name', 'again']) == 0\n"
        # The judges' descriptors (what a provider is, how it is priced) may be read; no
        # provider SDK, local model library or the runner that calls them.
        "bad = [m for m in sys.modules if m == 'mmjudge.engine.sync' or m.split('.')[0] in"
        " ('openai', 'anthropic', 'httpx', 'torch', 'sentence_transformers')]\n"
        "assert not bad, bad\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "again" / "index.html").stat().st_size > 10_000


def test_single_run_report_has_no_average_panel(tmp_path: Path) -> None:
    dataset = FakeDataset("one", n_queries=6, images=0)
    sweep = write_sweep(tmp_path / "sweeps" / "one", [dataset], [FakeJudge("free")])
    out = build_report(sweep.runs[0], tmp_path / "reports", n_boot=20)
    page = (out / "index.html").read_text()
    assert "With a single dataset there is no panel averaged over datasets" in page
    assert not (out / "image_vs_text.png").exists()
    assert "No model ran both with and without the image" in page


# --------------------------------------------------------------------------- loading


def test_labels_are_read_compactly_and_robustly(tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    rows = [
        {"query_id": "q1", "result_id": "a", "label": 2, "error": None,
         "human_labels": {"x": 2, "y": 1}},
        {"query_id": "q1", "result_id": "b", "label": None, "error": None,
         "human_labels": {"x": 0}},
        {"query_id": "q2", "result_id": "c", "label": 1, "error": "timeout",
         "human_labels": {"x": 1, "y": 1}},
        {"query_id": "q1", "result_id": "a", "label": 1, "error": None,
         "human_labels": {"x": 2, "y": 1}},
    ]  # fmt: skip
    text = "".join(json.dumps(r) + "\n" for r in rows) + '{"query_id": "q3", "resu'
    path.write_text(text)
    items = DatasetItems("d")
    labels = read_cell_labels(path, items)
    assert labels.n_rows == 4  # the partial last line is skipped
    assert items.keys == ["q1\ta", "q1\tb"]  # the error row is left out
    assert labels.items.tolist() == [1, 0]  # a repeated item keeps its last row
    assert labels.label[1] == 1 and np.isnan(labels.label[0])
    assert np.isnan(items.humans["y"][1]) and items.humans["x"].tolist() == [2.0, 0.0]
    assert items.item_query.tolist() == [0, 0]


def test_load_judgments_pads_annotators_seen_late(tmp_path: Path) -> None:
    fields = {f.name for f in dataclasses.fields(JudgmentRecord)}
    rows = [
        {"query_id": "q", "result_id": str(i), "label": 1, "human_labels": labels}
        for i, labels in enumerate([{"a": 1}, {"a": 0, "b": 2}, {"b": 1}])
    ]
    assert {"query_id", "result_id", "label", "human_labels"} <= fields
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    frame = load_judgments(path)
    assert frame["human:a"].isna().tolist() == [False, False, True]
    assert frame["human:a"].dropna().tolist() == [1, 0]
    assert frame["human:b"].isna().tolist() == [True, False, False]
    assert frame["human:b"].dropna().tolist() == [2, 1]


def test_a_saved_score_is_reused_only_where_the_report_would_compute_the_same(
    sweep: Path, analysis: Analysis, tmp_path: Path
) -> None:
    summary = next(c for d in analysis.datasets for c in d.cells).summary
    assert saved_score(summary, 1000) is not None
    assert saved_score(summary, 200) is None  # other resamples: computed again
    bare = Agreement(n=summary.metrics.n, bootstrap=summary.metrics.bootstrap)
    assert saved_score(dataclasses.replace(summary, metrics=bare), 1000) is None
    # written before a measure of the catalogue existed: scored again, with every measure
    older = {k: v for k, v in summary.metrics.to_json().items() if k != "mae"}
    assert (
        saved_score(dataclasses.replace(summary, metrics=Agreement.from_json(older)), 1000) is None
    )
    # a summary that does not match its records (edited, or from an older version) is not
    # trusted: the cell is scored from its labels
    copy = tmp_path / "copy"
    shutil.copytree(sweep, copy)
    path = copy / "shop.cheap.text.default" / "summary.json"
    edited = json.loads(path.read_text())
    edited["metrics"]["n_scored"] += 1
    edited["metrics"]["intervals"]["kappa"] = {"estimate": 0.99, "low": 0.98, "high": 1.0}
    path.write_text(json.dumps(edited))
    again = analyse(cell_table(copy))
    cheap = next(c for c in again.datasets[1].cells if c.judge.model == "cheap")
    original = next(c for c in analysis.datasets[1].cells if c.judge.model == "cheap")
    assert again.datasets[1].name == "shop"
    assert cheap.kappa == original.kappa != (0.99, 0.98, 1.0)
