"""The report by language: a priced judge through the loopback server on the multilingual
demo, and the free lexical judge swept offline with instructions in English and in the
data's language; per language, tokens per 1,000 characters and dollars per million equal a
direct computation from the rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mmjudge.data.loading import load_dataset
from mmjudge.report.build import build_report
from mmjudge.store.summary import read_summary
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import run_sweep
from tests.prompts.test_prompt_language import DEMO, cell

pytestmark = pytest.mark.slow  # whole cells and reports


def by_language() -> dict[str, dict[str, Any]]:
    rows = map(json.loads, (DEMO / "items.jsonl").open(encoding="utf-8"))
    return {row["result_id"]: row for row in rows}


def direct(run_dir: Path) -> dict[str, tuple[float, float]]:
    """Language → (input tokens per 1,000 characters of query and fields, $ per million)."""
    items = by_language()
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").open()]
    out = {}
    for language in {item["language"] for item in items.values()}:
        mine = [r for r in rows if items[r["result_id"]]["language"] == language]
        chars = sum(
            len(items[r["result_id"]]["query"])
            + sum(len(v) for v in items[r["result_id"]]["fields"].values())
            for r in mine
        )
        tokens = sum(r["input_tokens"] for r in mine)
        dollars = sum(r["cost_usd"] for r in mine)
        out[language] = (1000 * tokens / chars, 1e6 * dollars / len(mine))
    return out


def test_a_priced_judge_costs_differ_by_language_and_match_the_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer() as server:
        _, english = cell(server, tmp_path)
        _, data = cell(server, tmp_path, "prompt.language=data")
    out = build_report(tmp_path, tmp_path / "reports", n_boot=50)
    figures = json.loads((out / "slices.json").read_text())
    languages = [f for f in figures if f["slice"] == "language"]
    assert {(f["prompt"], f["value"]) for f in languages} == {
        (prompt, code)
        for prompt in ("default", "default-data")
        for code in ("en", "es", "pt", "tet")
    }
    for run_dir, prompt in ((english, "default"), (data, "default-data")):
        expected = direct(run_dir)
        for figure in (f for f in languages if f["prompt"] == prompt):
            tokens, dollars = expected[figure["value"]]
            assert tokens > 0 and dollars > 0
            assert figure["tokens_per_k_chars"] == pytest.approx(tokens)
            assert figure["usd_per_million"] == pytest.approx(dollars)
    # How many items of each language read translated instructions (none in English).
    counts = {(f["prompt"], f["value"]): f["n_translated"] for f in languages}
    assert counts[("default", "pt")] is None and counts[("default-data", "en")] == 0
    assert counts[("default-data", "tet")] == sum(
        item["language"] == "tet" for item in by_language().values()
    )
    mine = {f["value"]: f["tokens_per_k_chars"] for f in languages if f["prompt"] == "default"}
    assert len(set(round(v, 6) for v in mine.values())) == 4  # every language its own figure
    page = (out / "index.html").read_text()
    assert "language=tet" in page and "language=pt" in page


def test_characters_are_counted_in_the_text_the_judge_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the text cut to a few tokens, a language's tokens per 1,000 characters divide by
    the characters of the cut text (what the tokens were counted on), not of the file."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.chdir(tmp_path)  # the run's prepared-items cache, relative, lies here
    with LoopbackServer() as server:
        _, run_dir = cell(server, tmp_path, "dataset.max_text_tokens=6")
    dataset = read_summary(run_dir).dataset_config()
    assert dataset is not None
    read = {e.result_id: e for e in load_dataset(dataset, cache=tmp_path / ".cache/prepared")}
    assert any(e.truncated for e in read.values())
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").open()]
    out = build_report(tmp_path, tmp_path / "reports", n_boot=50)
    figures = json.loads((out / "slices.json").read_text())
    raw = direct(run_dir)
    for figure in (f for f in figures if f["slice"] == "language"):
        mine = [r for r in rows if read[r["result_id"]].attribute("language") == figure["value"]]
        chars = sum(
            len(read[r["result_id"]].query) + sum(len(v) for _n, v in read[r["result_id"]].fields)
            for r in mine
        )
        expected = 1000 * sum(r["input_tokens"] for r in mine) / chars
        assert figure["tokens_per_k_chars"] == pytest.approx(expected)
        assert figure["tokens_per_k_chars"] > 1.2 * raw[figure["value"]][0]  # not the file's


def test_the_demo_sweeps_offline_in_both_instruction_languages(tmp_path: Path) -> None:
    result = run_sweep(
        tmp_path,
        "-m",
        "dataset=demo_multilingual",
        "model=lexical",
        "prompt.language=en,data",
        "runner.progress=false",
    )
    assert result.returncode == 0, result.stderr
    (report,) = (tmp_path / "reports").iterdir()
    figures = json.loads((report / "slices.json").read_text())
    cells = {(f["prompt"], f["value"]) for f in figures if f["slice"] == "language"}
    assert cells == {(p, c) for p in ("default", "default-data") for c in ("en", "es", "pt", "tet")}
    assert all(f["usd_per_million"] == 0 for f in figures)  # the lexical judge is free
