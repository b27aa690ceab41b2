"""Test-bank cells end to end (``prompt=nuggets|questions``), in process: the free lexical
judge and an OpenAI model through the loopback server, on the demo dataset (visual nuggets,
images shown) and on a TREC collection; the ``mmjudge testbank`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mmjudge.cli import testbank as command
from mmjudge.engine.cell import forecast as forecast_cell
from mmjudge.engine.cell import run_cell
from mmjudge.errors import ConfigError
from mmjudge.store.forecast_file import CellForecast
from mmjudge.testbank.bank import Entry, entry_id, make_bank, read_bank, write_bank
from mmjudge.testbank.grading import skip_reason
from tests.fixtures.loopback_server import Behaviour, LoopbackServer, bank_answer, user_text
from tests.helpers import DEMO_DIR, REPO_ROOT, compose_config

DEMO_NUGGETS = DEMO_DIR / "testbank_nuggets.jsonl"
TREC_TINY = REPO_ROOT / "tests" / "fixtures" / "trec_tiny"


def _isolated(tmp_path: Path) -> list[str]:
    return [
        f"paths.response_cache={tmp_path / 'cache.sqlite'}",
        f"paths.image_cache={tmp_path / 'images'}",
        "runner.progress=false",
    ]


def _rows(run_dir: Path) -> list[dict]:
    lines = (run_dir / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _openai(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-loopback")
    return ["model=gpt4o_mini", f"model.base_url={loopback.openai_base_url}"]


def test_lexical_nuggets_cell_keeps_entry_grades_and_the_bank_version(tmp_path: Path) -> None:
    cfg = compose_config(["prompt=nuggets", "dataset.limit=8", *_isolated(tmp_path)])
    summary = run_cell(cfg, tmp_path / "run")
    bank = read_bank(DEMO_NUGGETS)
    assert summary.status.status == "complete" and summary.n_judgments == 8
    assert summary.testbank is not None and summary.testbank.version == bank.version
    assert summary.testbank.derivation.text.startswith("share of entries graded ≥ 4")
    rows = _rows(tmp_path / "run")
    q01 = {e.id: e.text for e in bank.for_query("q01")}  # t-shirt, red, striped
    for row in rows:
        assert row["bank_version"] == bank.version and set(row["entry_grades"]) == set(q01)
    # p052 is a pink striped t-shirt: type and pattern covered, colour not -> 2/3 -> grade 1.
    p052 = next(r for r in rows if r["result_id"] == "p052")
    by_text = {q01[k]: v for k, v in p052["entry_grades"].items()}
    assert by_text == {"t-shirt": 5, "red": 0, "striped": 5} and p052["label"] == 1


@pytest.mark.slow  # over half a second
def test_image_nuggets_through_the_loopback_and_regrading_calls_only_what_changed(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank_file = tmp_path / "nuggets.jsonl"
    write_bank(read_bank(DEMO_NUGGETS), bank_file)
    overrides = [
        *_openai(loopback, monkeypatch),
        "modality=mm",
        "prompt=nuggets",
        "dataset.limit=16",  # q01 and q02, 8 results each
        f"dataset.testbanks.nuggets={bank_file}",
        *_isolated(tmp_path),
    ]
    first = run_cell(compose_config(overrides), tmp_path / "first")
    assert first.status.status == "complete" and len(loopback.requests) == 16
    # Calls run concurrently, so the requests arrive in any order: pick q01's by its nugget.
    q01_requests = [
        r for r in loopback.requests if "E2: red (look at the image)" in user_text(r.body)
    ]
    assert len(q01_requests) == 8
    assert all("image_url" in json.dumps(r.body) for r in loopback.requests)
    rows = _rows(tmp_path / "first")
    assert all(r["label"] is not None and len(r["entry_grades"]) >= 2 for r in rows)
    assert first.cost.total_usd > 0

    # A reviewer adds a nugget to q02: a new bank version, and only q02's items are sent again.
    bank = read_bank(bank_file)
    added = Entry("q02", entry_id("q02", "long sleeves"), "nuggets", "long sleeves", True)
    edited = make_bank("nuggets", [*bank.for_query("q01"), *bank.for_query("q02"), added])
    write_bank(edited, bank_file)
    second = run_cell(compose_config(overrides), tmp_path / "second")
    assert second.testbank and first.testbank
    assert second.testbank.version == edited.version != first.testbank.version
    assert len(loopback.requests) == 16 + 8
    assert all("long sleeves" in user_text(r.body) for r in loopback.requests[16:])
    rows = {r["result_id"]: r for r in _rows(tmp_path / "second")}
    assert sum(r["cached"] for r in rows.values()) == 8


def test_questions_on_a_trec_collection_through_the_loopback(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    overrides = [
        *_openai(loopback, monkeypatch),
        "dataset=trec_example",
        f"dataset.path={TREC_TINY}",
        "dataset.testbanks.questions=testbank_questions.jsonl",
        "prompt=questions",
        *_isolated(tmp_path),
    ]
    summary = run_cell(compose_config(overrides), tmp_path / "run")
    rows = {r["result_id"]: r for r in _rows(tmp_path / "run") if r["query_id"] == "q1"}
    assert summary.status.status == "complete" and summary.testbank
    assert summary.testbank.kind == "questions"
    # "What do cats eat?": d1 (about feeding cats) names cats, eat is not in it -> 1 -> grade 0;
    # the loopback's rule is strict, and the derivation maps one entry at 1 to the lowest grade.
    assert rows["d1"]["entry_grades"] and rows["d1"]["label"] == 0
    assert summary.testbank.derivation.cuts == pytest.approx([1 / 3, 2 / 3, 1])


def test_dry_run_forecasts_the_longer_bank_answers(tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "model=gpt4o_mini",
            "prompt=nuggets",
            "runner.dry_run=true",
            "dataset.limit=8",
            *_isolated(tmp_path),
        ]
    )
    planned = forecast_cell(cfg, tmp_path / "dry")
    assert isinstance(planned, CellForecast)
    forecast = planned.sync
    assert forecast.calls == 8 and forecast.output_tokens == 8 * (10 + 6 * 3)


def test_missing_bank_and_judges_that_cannot_answer(tmp_path: Path) -> None:
    cfg = compose_config(
        [
            "prompt=questions",
            f"dataset.testbanks.questions={tmp_path}/none.jsonl",
            *_isolated(tmp_path),
        ]
    )
    with pytest.raises(ConfigError, match=r"no test bank at .*mmjudge testbank generate"):
        run_cell(cfg, tmp_path / "run")
    assert "embedding judges give one similarity" in str(skip_reason("embedding", "nuggets"))
    assert skip_reason("embedding", None) is None and skip_reason("lexical", "nuggets") is None


def test_loopback_answers_bank_prompts_in_their_format() -> None:
    prompt = "Query: red tee\n\nResult:\nname: Red Tee\n\nPoints to check:\nE1: red\nE2: striped\n"
    assert bank_answer(prompt) == "E1: 5\nE2: 1"
    assert bank_answer("Is this relevant?") is None


# --------------------------------------------------------------------------- the command


def _command(capsys, *args: object) -> tuple[int, str, str]:
    code = command.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow  # over half a second
def test_generate_with_a_model_is_cached_priced_and_forecast(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    out = tmp_path / "bank.jsonl"
    base = ["generate", "kind=nuggets", "n=3", f"out={out}", *_openai(loopback, monkeypatch)]
    base += _isolated(tmp_path)
    code, text, _ = _command(capsys, *base, "runner.dry_run=true")
    assert code == 0 and "forecast 30 calls (one per query)" in text and not out.exists()
    assert loopback.requests == []

    code, _, err = _command(capsys, *base)
    assert code == 0 and len(loopback.requests) == 30, err
    assert "30 calls, 0 from the cache" in err
    bank = read_bank(out, "nuggets")
    # The loopback writes one `visual:` line per query word (the demo has images).
    assert [(e.text, e.visual) for e in bank.for_query("q01")] == [
        ("red", True),
        ("striped", True),
        ("t-shirt", True),
    ]
    record = json.loads((tmp_path / "bank.jsonl.generation.json").read_text(encoding="utf-8"))
    assert record["version"] == bank.version and record["cost_usd"] > 0
    assert "Begin a line with `visual:`" in user_text(loopback.requests[0].body)

    code, _, err = _command(capsys, *base)
    assert code == 2 and "exists; give overwrite=true" in err
    code, _, err = _command(capsys, *base, "overwrite=true")
    assert code == 0 and "30 from the cache, $0 (" in err and len(loopback.requests) == 30


def test_generate_with_the_lexical_judge_and_refusals(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bank.jsonl"
    args = ["generate", "kind=nuggets", f"out={out}", *_isolated(tmp_path)]
    code, _, err = _command(capsys, *args)
    assert code == 0, err
    assert [e.text for e in read_bank(out).for_query("q02")] == ["navy", "dress"]
    code, _, err = _command(capsys, "generate", "kind=questions", f"out={tmp_path}/q.jsonl")
    assert code == 2 and "model=lexical writes nugget banks only" in err
    code, _, err = _command(capsys, "generate", "kind=facts")
    assert code == 2 and "give kind=nuggets or kind=questions" in err
    code, _, err = _command(capsys, "generate", "kind=nuggets", "dataset.limt=3")
    assert code == 2 and "unknown setting 'dataset.limt'" in err
    code, _, err = _command(capsys, "shuffle")
    assert code == 2 and "usage:" in err


@pytest.mark.slow  # over half a second
def test_import_checks_queries_and_reports_the_version_it_replaces(tmp_path: Path, capsys) -> None:
    out = tmp_path / "bank.jsonl"
    code, _, err = _command(capsys, "import", DEMO_NUGGETS, f"out={out}")
    bank = read_bank(DEMO_NUGGETS)
    assert code == 0 and f"version {bank.version}" in err and "replacing" not in err
    edited = tmp_path / "edited.jsonl"
    lines = DEMO_NUGGETS.read_text(encoding="utf-8").splitlines()
    edited.write_text("\n".join(lines[1:]) + "\n", encoding="utf-8")
    code, _, err = _command(capsys, "import", edited, f"out={out}")
    assert code == 0 and f"replacing version {bank.version}" in err
    stranger = tmp_path / "stranger.jsonl"
    stranger.write_text('{"query_id": "q99", "kind": "nuggets", "text": "x"}\n', encoding="utf-8")
    code, _, err = _command(capsys, "import", stranger, f"out={out}")
    assert code == 2 and "query_id 'q99' (1 entries) is not a query of the dataset" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q01", "kind": "nuggets"}\n', encoding="utf-8")
    code, _, err = _command(capsys, "import", bad)
    assert code == 2 and f"{bad}:1: field 'text' must be a non-empty string" in err
    code, text, _ = _command(capsys, "show", "kind=nuggets", f"out={out}")
    assert code == 0 and text.splitlines()[1] == "q01: red (visual); striped (visual)"


@pytest.mark.slow  # over a second
def test_one_call_per_entry_gives_the_same_rows_and_pays_once_for_a_failed_call(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = [*_openai(loopback, monkeypatch), "prompt=nuggets", "dataset.limit=8", "modality=mm"]
    base += _isolated(tmp_path)
    whole = run_cell(compose_config(base), tmp_path / "item")
    assert len(loopback.requests) == 8
    loopback.script(Behaviour.error(400, "Invalid image."))
    per_entry = run_cell(compose_config([*base, "prompt.bank_calls=entry"]), tmp_path / "entry")
    sent = loopback.requests[8:]
    assert len(sent) == 8 * 3  # q01 has three nuggets
    prompts = [user_text(r.body) for r in sent]
    assert all(p.count("\nE") == 1 for p in prompts) and any("\nE3: striped" in p for p in prompts)
    rows = {r["result_id"]: r for r in _rows(tmp_path / "entry")}
    failed = [r for r in rows.values() if r["error"]]
    assert len(failed) == 1 and "Invalid image" in failed[0]["error"]
    item_rows = {r["result_id"]: r for r in _rows(tmp_path / "item")}
    for result_id, row in rows.items():
        if not row["error"]:
            assert row["label"] == item_rows[result_id]["label"]
            assert row["entry_grades"] == item_rows[result_id]["entry_grades"]
            assert row["raw_output"].count("\n") == 2 and row["input_tokens"] > 0
    assert per_entry.forecast and whole.forecast
    assert per_entry.forecast.calls == 24 and whole.forecast.calls == 8
    # Run again in the same folder: only the failed call is sent.
    run_cell(compose_config([*base, "prompt.bank_calls=entry"]), tmp_path / "entry")
    assert len(loopback.requests) == 8 + 24 + 1
    with pytest.raises(ConfigError, match=r"prompt\.bank_calls=entry runs in runner\.mode=sync"):
        run_cell(
            compose_config([*base, "prompt.bank_calls=entry", "runner.mode=batch"]),
            tmp_path / "batch",
        )
