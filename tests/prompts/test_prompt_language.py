"""``prompt.language``: the language never reaches the wire, and with ``data`` each item is
judged with its language's translation where the dataset gives one (English otherwise), under
cache keys of its own; English items keep their English prompt and key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mmjudge.engine.cell import run_cell
from mmjudge.store import RunSummary
from tests.fixtures.loopback_server import OPENAI_PATH, LoopbackServer, user_text
from tests.helpers import compose_config

pytestmark = pytest.mark.slow  # whole cells through the loopback server

DEMO = Path(__file__).resolve().parents[2] / "datasets" / "demo_multilingual"
ENGLISH = "Use this relevance scale:"
TRANSLATED = {
    "pt": "Use esta escala de relevância:",
    "es": "Use esta escala de relevancia:",
    "tet": "Uza valór sira ne'e:",
}


def items() -> dict[str, dict[str, Any]]:
    rows = map(json.loads, (DEMO / "items.jsonl").open(encoding="utf-8"))
    return {row["fields"]["title"]: row for row in rows}


def cell(server: LoopbackServer, tmp_path: Path, *overrides: str) -> tuple[list[Any], Path]:
    """One priced cell on the multilingual demo; the requests it sent and its folder."""
    before = len(server.requests_to(OPENAI_PATH))
    run_dir = tmp_path / f"run-{before}"
    cfg = compose_config(
        [
            "model=gpt4o_mini",
            "dataset=demo_multilingual",
            f"model.base_url={server.openai_base_url}",
            "runner.progress=false",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            *overrides,
        ]
    )
    summary = run_cell(cfg, run_dir)
    assert isinstance(summary, RunSummary) and summary.n_judgments == len(items())
    return [r.body for r in server.requests_to(OPENAI_PATH)[before:]], run_dir


def item_of(body: Any, catalogue: dict[str, dict[str, Any]]) -> dict[str, Any]:
    text = user_text(body)
    (title,) = [t for t in catalogue if f"title: {t}\n" in text + "\n"]
    return catalogue[title]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with LoopbackServer() as running:
        yield running


def test_the_language_never_reaches_the_wire(tmp_path: Path, server: LoopbackServer) -> None:
    bodies, _ = cell(server, tmp_path)
    catalogue = items()
    assert len(bodies) == len(catalogue)
    for body in bodies:
        text = json.dumps(body, ensure_ascii=False)
        assert "language" not in text and ENGLISH in user_text(body)
        assert item_of(body, catalogue)  # every request grades one known item


def test_data_sends_each_items_translation_else_english(
    tmp_path: Path, server: LoopbackServer
) -> None:
    cell(server, tmp_path)  # English first: its answers are cached
    translated, run_dir = cell(server, tmp_path, "prompt.language=data")
    catalogue = items()
    # English items read the same prompt under the same key: answered from the cache.
    sent = [item_of(body, catalogue) for body in translated]
    assert sorted(row["language"] for row in sent) == sorted(
        row["language"] for row in catalogue.values() if row["language"] != "en"
    )
    for body, row in zip(translated, sent, strict=True):
        text = user_text(body)
        assert TRANSLATED[row["language"]] in text and ENGLISH not in text
        assert f"{row['query']}" in text
    rows = [json.loads(line) for line in (run_dir / "judgments.jsonl").open()]
    by_title = {r["result_id"]: r for r in rows}
    for row in catalogue.values():
        assert by_title[row["result_id"]]["instructions"] == row["language"]
        assert by_title[row["result_id"]]["prompt_id"] == "default-data"
    english_rows = [r for r in rows if r["instructions"] == "en"]
    assert english_rows and all(r["cached"] for r in english_rows)
    assert not any(r["cached"] for r in rows if r["instructions"] != "en")
    # A language the dataset has no translation for is judged in English.
    fallback, again = cell(server, tmp_path, "prompt.language=data", "~dataset.translations.tet")
    assert fallback == []  # every item's prompt was sent before, in English or translated
    tetun = [json.loads(line) for line in (again / "judgments.jsonl").open()]
    assert {r["instructions"] for r in tetun if r["result_id"].startswith("tet-")} == {"en"}


def test_an_unknown_prompt_language_names_the_setting(tmp_path: Path) -> None:
    from mmjudge.engine.cell import typed_config
    from mmjudge.errors import ConfigError

    with pytest.raises(ConfigError, match=r"prompt.language='fr'"):
        typed_config(compose_config(["prompt.language=fr"]))


def test_a_translation_without_a_macro_the_prompt_uses_names_the_setting() -> None:
    from mmjudge.data.loading import load_dataset
    from mmjudge.engine.cell import typed_config
    from mmjudge.errors import ConfigError
    from mmjudge.prompts import render

    # The shipped Tetun wording has no aspect macros; prompt=aspects needs them.
    cfg = typed_config(
        compose_config(["dataset=demo_multilingual", "prompt=aspects", "prompt.language=data"])
    )
    tetun = next(e for e in load_dataset(cfg.dataset) if e.attribute("language") == "tet")
    with pytest.raises(ConfigError, match=r"dataset\.translations\.tet: .*aspects_intro"):
        render(tetun, cfg.modality, cfg.prompt, cfg.dataset, 0)
