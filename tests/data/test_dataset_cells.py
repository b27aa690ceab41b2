"""A cell and its dataset: cells a dataset cannot serve are skipped before any call, the dry
run shows what the text cap cuts, a query sample follows seed, and the report shows
the text the judge read."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mmjudge.engine.cell import forecast, run_cell
from mmjudge.errors import DatasetError
from mmjudge.report import build_report
from mmjudge.store import RunSummary
from mmjudge.store.cell_lines import cell_line
from mmjudge.store.forecast_file import CellForecast, TextCut
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep
from tests.helpers import compose_config, shared_data


def overrides(tmp_path: Path, *extra: str) -> list[str]:
    return [
        *extra,
        f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        f"paths.image_cache={tmp_path / 'images'}",
        "runner.progress=false",
    ]


def tiny_dataset(root: Path, items: list[dict[str, Any]]) -> Path:
    """A jsonl dataset of the given items (query/result ids, fields, images) graded 0-2."""
    (root / "images").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (16, 12), "green").save(root / "images" / "p.png")
    lines = []
    for number, spec in enumerate(items):
        row = {
            "query_id": spec.get("query_id", "q1"),
            "query": "green shirt",
            "result_id": f"r{number}",
            "fields": spec.get("fields", {}),
            "images": spec.get("images", []),
            "labels": {"annotator_a": number % 3, "annotator_b": 1},
        }
        lines.append(json.dumps(row))
    (root / "items.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def dataset_overrides(root: Path, name: str = "tiny") -> list[str]:
    return [f"dataset.path={root}", f"dataset.name={name}"]


def cell(tmp_path: Path, run: str, *extra: str) -> Any:
    """The cell judged, or forecast when ``runner.dry_run=true`` is among ``extra``."""
    cfg = compose_config(overrides(tmp_path, *extra))
    judged_or_forecast = forecast if "runner.dry_run=true" in extra else run_cell
    return judged_or_forecast(cfg, tmp_path / "sweep" / run)


IMAGES_ONLY = [{"images": ["images/p.png"]}] * 3
TEXT_ONLY = [{"fields": {"name": "Green shirt"}}] * 3


@pytest.mark.parametrize(
    ("items", "modality", "reason"),
    [
        (IMAGES_ONLY, "text", "has no result text: none of its 3 items has a non-empty text"),
        (IMAGES_ONLY, "mm", "has no result text"),
        (TEXT_ONLY, "image", "has no images: none of its 3 items has one"),
        (TEXT_ONLY, "mm", "has no images"),
    ],
)
def test_a_modality_the_dataset_cannot_serve_is_skipped(
    tmp_path: Path, items: list[dict[str, Any]], modality: str, reason: str
) -> None:
    root = tiny_dataset(tmp_path / "data", items)
    summary = cell(
        tmp_path,
        "run",
        "model=gpt4o_mini",
        f"modality={modality}",
        *dataset_overrides(root),
        "runner.dry_run=true",
    )
    assert isinstance(summary, CellForecast) and reason in str(summary.skip_reason)
    assert summary.sync.calls == 0
    assert summary.line().endswith(f"skipped — {summary.skip_reason}")


def test_max_images_zero_is_known_before_the_dataset_is_read(tmp_path: Path) -> None:
    summary = cell(
        tmp_path,
        "run",
        "model=gpt4o_mini",
        "modality=image",
        f"dataset.path={tmp_path / 'nowhere'}",  # not read at all
        "dataset.max_images=0",
        "runner.dry_run=true",
    )
    assert isinstance(summary, CellForecast)
    assert "dataset.max_images is 0" in str(summary.skip_reason)


def test_a_partly_served_dataset_runs_and_records_the_gaps(tmp_path: Path) -> None:
    items = [{"images": ["images/p.png"], "fields": {"name": "Green shirt"}}] * 2 + [
        {"fields": {"name": "Blue shirt"}}
    ]
    root = tiny_dataset(tmp_path / "data", items)
    summary = cell(
        tmp_path,
        "run",
        "model=gpt4o_mini",
        "modality=mm",
        *dataset_overrides(root),
        "runner.dry_run=true",
    )
    assert isinstance(summary, CellForecast)
    assert summary.sync.calls == 2  # the item without an image is an error row


@pytest.mark.slow  # three cells: over half a second
def test_a_missing_image_stops_only_the_cells_that_look_at_images(tmp_path: Path) -> None:
    items = [
        {"images": ["images/p.png"], "fields": {"name": "Green shirt"}},
        {"images": ["images/gone.png"], "fields": {"name": "Blue shirt"}},
        {"images": ["images/lost.png"], "fields": {"name": "Red shirt"}},
    ]
    root = tiny_dataset(tmp_path / "data", items)
    text = cell(tmp_path, "text", "model=lexical", "modality=text", *dataset_overrides(root))
    assert isinstance(text, RunSummary)
    assert (text.status.status, text.n_judgments, text.n_errors) == ("complete", 3, 0)
    for modality in ("mm", "image"):
        with pytest.raises(DatasetError) as info:
            cell(
                tmp_path,
                modality,
                "model=gpt4o_mini",
                f"modality={modality}",
                *dataset_overrides(root),
                "runner.dry_run=true",
            )
        assert str(info.value) == (
            f"{root / 'items.jsonl'}:2: field 'images' names 'images/gone.png', which does not "
            f"exist under {root} (1 more item names an image that is not there); add the file "
            f"or fix the path (modality '{modality}' shows the result's image; a text-only "
            "cell runs without it)"
        )


def test_flickr8k_text_cells_are_skipped(tmp_path: Path) -> None:
    root = shared_data("flickr8k_expert")
    for modality in ("text", "mm"):
        summary = cell(
            tmp_path,
            modality,
            "model=gpt4o_mini",
            f"modality={modality}",
            "dataset=flickr8k_expert",
            f"dataset.path={root}",
            "runner.dry_run=true",
        )
        assert isinstance(summary, CellForecast) and summary.skip_reason, summary
        reason = str(summary.skip_reason)
        assert "dataset 'flickr8k_expert' has no result text" in reason
        assert "modality 'image' judges the image alone" in reason


@pytest.mark.slow  # over half a second
def test_the_report_lists_cells_skipped_for_their_dataset(tmp_path: Path) -> None:
    with_text = tiny_dataset(tmp_path / "shirts", TEXT_ONLY)
    photos = tiny_dataset(tmp_path / "photos", IMAGES_ONLY)
    done = cell(
        tmp_path, "shirts.lexical", "model=lexical", *dataset_overrides(with_text, "shirts")
    )
    assert done.status.status == "complete" and done.n_judgments == 3
    skipped = cell(
        tmp_path, "photos.lexical", "model=lexical", *dataset_overrides(photos, "photos")
    )
    assert skipped.status.status == "skipped"
    page = (build_report(tmp_path / "sweep", tmp_path / "reports") / "index.html").read_text()
    section = page[page.index('id="skipped"') : page.index('id="provenance"')]
    assert "photos" in section and "has no result text" in section
    sweep_summary = json.loads((tmp_path / "sweep" / "sweep_summary.json").read_text())
    assert sweep_summary["n_skipped"] == 1


def test_the_dry_run_shows_what_the_text_cap_cuts(tmp_path: Path) -> None:
    items = [{"fields": {"name": "Green shirt", "description": "word " * 5000}}, *TEXT_ONLY]
    root = tiny_dataset(tmp_path / "data", items)
    summary = cell(
        tmp_path, "run", "model=gpt4o_mini", *dataset_overrides(root), "runner.dry_run=true"
    )
    assert isinstance(summary, CellForecast)
    # the cap keeps 1,538 words (2,000 tokens at 1.3 per word): 3,464 words go
    assert summary.text_cut == TextCut(max_text_tokens=2000, items=1, tokens_removed=4504)
    cut = {"max_text_tokens": 2000, "items": 1, "tokens_removed": 4504}
    assert "text cut to dataset.max_text_tokens=2000 in 1 items (about 4,504 tokens removed)" in (
        summary.line()
    )
    forecast = json.loads((tmp_path / "sweep" / "run" / "forecast.json").read_text())
    assert forecast["text_cut"] == cut
    assert forecast["forecast"]["input_tokens"] < 4 * 2600  # the cut text is what is counted


def test_the_query_sample_follows_runner_seed(tmp_path: Path) -> None:
    items = [{"query_id": f"q{n // 2}", "fields": {"name": "shirt"}} for n in range(40)]
    root = tiny_dataset(tmp_path / "data", items)

    def queries(seed: int) -> set[str]:
        run = f"seed{seed}"
        cell(
            tmp_path,
            run,
            *dataset_overrides(root),
            "dataset.sample_queries=4",
            f"seed={seed}",
        )
        lines = (tmp_path / "sweep" / run / "judgments.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert len(rows) == 8  # 4 whole queries of 2 results each
        return {row["query_id"] for row in rows}

    assert queries(1) == queries(1)
    assert any(queries(seed) != queries(1) for seed in (2, 3, 4))


def test_the_report_shows_the_cleaned_text(tmp_path: Path) -> None:
    dataset = FakeDataset(
        "shop",
        n_queries=6,
        images=0,
        description="<style>p{{color:red}}</style><p>A {colour} <b>{garment}</b></p>",
    )
    sweep = write_sweep(tmp_path / "sweeps" / "web", [dataset], [FakeJudge("free", accuracy=0.3)])
    for run_dir in sweep.runs:
        path = run_dir / "summary.json"
        summary = json.loads(path.read_text())
        summary["config"]["dataset"]["html_to_text"] = True
        path.write_text(json.dumps(summary))
    page = (build_report(sweep.root, tmp_path / "reports") / "index.html").read_text()
    # the disagreement browser's items, as the page's script reads them
    found = re.search(r'<script type="application/json" id="browser-data">(.*?)</script>', page)
    assert found
    items = json.loads(found.group(1))["items"]
    browser = " ".join(value for item in items for _, value in item[4])
    assert browser and "color:red" not in browser and "<b>" not in browser
    assert "A red" in browser or "A blue" in browser or "A green" in browser


def test_items_no_person_graded_are_judged_and_left_out_of_kappa(tmp_path: Path) -> None:
    """With dataset.allow_unlabelled a third of the items carry no human labels: every item
    is judged, κ is on the labelled ones (the closing line says on how many), the rows of
    the others have no human labels, and the report builds."""
    root = tmp_path / "data"
    names = ["Green shirt", "Green cotton shirt", "Red dress"] * 6
    tiny_dataset(root, [{"fields": {"name": name}} for name in names])
    lines = (root / "items.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    for number, row in enumerate(rows):
        if number % 3 == 2:
            del row["labels"]
    (root / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    extra = ["model=lexical", *dataset_overrides(root), "dataset.allow_unlabelled=true"]
    summary = cell(tmp_path, "run", *extra)
    assert isinstance(summary, RunSummary) and summary.status.status == "complete"
    assert summary.n_judgments == 18 and summary.metrics.n_scored == 12
    assert "18 judgments, 0 errors, 0 unparseable, κ=" in cell_line(summary)
    assert " on 12 scored items, $" in cell_line(summary)
    written = (tmp_path / "sweep" / "run" / "judgments.jsonl").read_text(encoding="utf-8")
    judged = [json.loads(line) for line in written.splitlines()]
    assert sum(not r["human_labels"] for r in judged) == 6
    page = (build_report(tmp_path / "sweep", tmp_path / "reports") / "index.html").read_text()
    if importlib.util.find_spec("ppi_py") is not None:  # the card's prediction-powered line
        assert "items no person graded" in page
