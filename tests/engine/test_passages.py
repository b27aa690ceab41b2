"""Several results of one query per call (``prompt.passages_per_call``), end to end through
the OpenAI SDK against the loopback server: one call per K results of a query, a row per
result with its grade, place, call id and exact share, a garbled grade asked again alone,
resumes that send no judged result again, batch mode, the forecast and the cells refused."""

from __future__ import annotations

import collections
import hashlib
import json
import math
import os
import signal
import time
from pathlib import Path

import pytest

from mmjudge.engine.cell import forecast as forecast_cell
from mmjudge.engine.cell import run_cell
from mmjudge.report.build import build_report
from mmjudge.store import RunSummary
from mmjudge.store.forecast_file import CellForecast
from tests.fixtures.loopback_server import (
    ANTHROPIC_PATH,
    ASKS_REASONS,
    OPENAI_PATH,
    Behaviour,
    LoopbackServer,
    RecordedRequest,
    answer_schema,
    passage_markers,
    user_text,
)
from tests.helpers import compose_config, run_sweep, start_sweep

pytestmark = pytest.mark.slow  # each test runs whole cells against a server

ITEMS = 40
K = 5


class Grader:
    """Grades each result of a call by a hash of its block, with a reason where the prompt
    asks for one; a single result gets 1. A call whose request carries a JSON schema (the
    structured answer) is answered with an object, any other with lines. The calls listed in
    ``garble`` (by their order of arrival) get no grade for ``R2``."""

    def __init__(self, garble: tuple[int, ...] = ()) -> None:
        self.garble = garble
        self.calls = 0
        self.garbled: list[str] = []
        """The texts of the calls answered without ``R2``."""

    def __call__(self, request: RecordedRequest) -> str:
        text = user_text(request.body)
        markers = passage_markers(text)
        if not markers:
            return "1\nAsked alone."
        self.calls += 1
        reason = ASKS_REASONS.search(text) is not None
        structured = answer_schema(request.body) is not None
        lines = []
        graded: dict[str, object] = {}
        for marker in markers:
            if marker == "R2" and self.calls in self.garble:
                self.garbled.append(text)
                lines.append("R2 fits the query well.")  # no grade: garbled
                continue
            block = text.split(f"\n{marker}\n", 1)[1].split("\n\n", 1)[0]
            grade = int(hashlib.sha256(block.encode()).hexdigest(), 16) % 3
            lines.append(f"{marker}: {grade}" + (" - a reason." if reason else ""))
            graded[marker] = {"grade": grade, "reason": "a reason."} if reason else grade
        return json.dumps(graded) if structured else "\n".join(lines)


def config(tmp_path: Path, server: LoopbackServer, *extra: str) -> object:
    return compose_config(
        [
            "model=gpt4o_mini",
            "modality=text",
            f"model.base_url={server.openai_base_url}",
            f"dataset.limit={ITEMS}",
            "runner.progress=false",
            f"prompt.passages_per_call={K}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.prepared_cache={tmp_path / 'prepared'}",
            f"paths.image_cache={tmp_path / 'images'}",
            *extra,
        ]
    )


def run(tmp_path: Path, server: LoopbackServer, *extra: str, name: str = "run") -> RunSummary:
    summary = run_cell(config(tmp_path, server, *extra), tmp_path / "runs" / name)  # type: ignore[arg-type]
    assert isinstance(summary, RunSummary)
    return summary


def rows(tmp_path: Path, name: str = "run") -> list[dict]:
    path = tmp_path / "runs" / name / "judgments.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def results_sent(requests: list[RecordedRequest]) -> int:
    """Results the requests showed: a call's markers, or one for a single result's call."""
    return sum(len(passage_markers(user_text(r.body))) or 1 for r in requests)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")


def test_one_call_per_five_results_of_a_query_and_a_row_each_with_its_exact_share(
    tmp_path: Path,
) -> None:
    with LoopbackServer(responder=Grader()) as server:
        summary = run(tmp_path, server)
        sent = server.requests_to(OPENAI_PATH)
    written = rows(tmp_path)
    assert len(written) == ITEMS == summary.n_judgments
    assert len({(r["query_id"], r["result_id"]) for r in written}) == ITEMS
    per_query = collections.Counter(r["query_id"] for r in written)
    assert len(sent) == sum(math.ceil(n / K) for n in per_query.values()) < ITEMS
    assert results_sent(sent) == ITEMS
    for request in sent:  # every call is about one query's results, five at most
        markers = passage_markers(user_text(request.body))
        assert markers == [f"R{n}" for n in range(1, len(markers) + 1)] and len(markers) <= K
    calls: dict[str, list[dict]] = collections.defaultdict(list)
    for row in written:
        assert row["label"] in (0, 1, 2) and row["parse_error"] is None and not row["reasked"]
        if row["call_id"] is None:  # a query's lone last result: a call of its own
            assert row["call_position"] is None and row["call_size"] is None
            continue
        calls[row["call_id"]].append(row)
    assert calls
    for members in calls.values():
        size = members[0]["call_size"]
        assert sorted(r["call_position"] for r in members) == list(range(1, size + 1))
        assert len({r["query_id"] for r in members}) == 1
        assert len({r["raw_output"] for r in members}) == 1
        # Each pays its listing and an equal part of the rest: shares follow the listings.
        tokens = [r["input_tokens"] for r in members]
        assert min(tokens) > 0
    # The rows' dollars add up to what the calls cost, exactly (each call's shares do).
    assert summary.calls is not None
    assert math.fsum(r["cost_usd"] for r in written) == pytest.approx(
        summary.calls.spent_usd, rel=1e-15
    )
    # Each call asked for a structured answer: the grades alone, one key per marker, on the
    # scale (OpenAI's strict JSON schema); each result's grade is the one under its marker.
    for request in sent:
        size = len(passage_markers(user_text(request.body)))
        if size < 2:
            assert "response_format" not in request.body
            continue
        markers = [f"R{n}" for n in range(1, size + 1)]
        assert request.body["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "grades",
                "strict": True,
                "schema": {
                    "type": "object",
                    "properties": {m: {"type": "integer", "enum": [0, 1, 2]} for m in markers},
                    "required": markers,
                    "additionalProperties": False,
                },
            },
        }
        assert "reason" not in user_text(request.body)
    for members in calls.values():
        for row in members:
            answer = json.loads(row["raw_output"])
            assert answer[f"R{row['call_position']}"] == row["label"]
            assert row["explanation"] is None


@pytest.mark.parametrize("reasons", [False, True])
def test_lines_are_asked_for_where_set_with_a_reason_only_where_asked(
    tmp_path: Path, reasons: bool
) -> None:
    extra = ["prompt.answer_format=lines", f"prompt.passage_reasons={reasons}"]
    with LoopbackServer(responder=Grader()) as server:
        run(tmp_path, server, *extra)
        sent = server.requests_to(OPENAI_PATH)
    assert all("response_format" not in r.body for r in sent)
    grouped = [r for r in rows(tmp_path) if r["call_id"]]
    assert grouped and all(r["label"] is not None for r in grouped)
    for row in grouped:
        reason = " - a reason." if reasons else ""
        assert f"R{row['call_position']}: {row['label']}{reason}" in row["raw_output"].split("\n")
        assert row["explanation"] == ("a reason" if reasons else None)


def test_the_structured_answer_with_reasons_gives_each_row_its_reason(tmp_path: Path) -> None:
    with LoopbackServer(responder=Grader()) as server:
        run(tmp_path, server, "prompt.passage_reasons=true")
        (request, *_) = server.requests_to(OPENAI_PATH)
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["R1"]["required"] == ["grade", "reason"]
    grouped = [r for r in rows(tmp_path) if r["call_id"]]
    assert grouped and all(r["label"] is not None for r in grouped)
    assert all(r["explanation"] == "a reason." for r in grouped)


def test_the_shown_order_is_drawn_from_the_seed(tmp_path: Path) -> None:
    with LoopbackServer(responder=Grader()) as server:
        run(tmp_path, server, name="a")
        first = [user_text(r.body) for r in server.requests_to(OPENAI_PATH)]
        server.reset()
        run(tmp_path, server, "runner.cache=false", name="b")
        again = [user_text(r.body) for r in server.requests_to(OPENAI_PATH)]
        server.reset()
        run(tmp_path, server, "runner.cache=false", "seed=7", name="c")
        other = [user_text(r.body) for r in server.requests_to(OPENAI_PATH)]
    assert sorted(first) == sorted(again)
    assert sorted(first) != sorted(other)
    positions = [r["call_position"] for r in rows(tmp_path, "a") if r["call_id"]]
    assert len(set(positions)) == K


def test_a_garbled_grade_asks_that_result_again_alone_and_its_row_pays_for_both(
    tmp_path: Path,
) -> None:
    grader = Grader(garble=(1,))
    with LoopbackServer(responder=grader) as server:
        summary = run(tmp_path, server)
        sent = server.requests_to(OPENAI_PATH)
    written = rows(tmp_path)
    (again,) = [r for r in written if r["reasked"]]
    assert len(grader.garbled) == 1
    # Every call once, then the one result alone: its own prompt, no marker.
    per_query = collections.Counter(r["query_id"] for r in written)
    calls = sum(math.ceil(n / K) for n in per_query.values())
    assert len(sent) == calls + 1
    alone = user_text(sent[-1].body)
    assert not passage_markers(alone) and "Reply with the grade alone" in alone
    assert again["call_position"] == 2 and again["label"] == 1 and again["parse_error"] is None
    assert again["raw_output"] == "1\nAsked alone."
    # Its place in the garbled call: its block was the call's R2.
    block = grader.garbled[0].split("\nR2\n", 1)[1].split("\n\n", 1)[0]
    assert block in alone
    # The others of that call kept their grades; the row pays its share and its own call.
    mates = [r for r in written if r["call_id"] == again["call_id"] and r is not again]
    assert len(mates) == again["call_size"] - 1 and all(r["label"] is not None for r in mates)
    share = max(r["input_tokens"] for r in mates)
    assert again["input_tokens"] > share + 50  # the share and a whole prompt of its own
    assert summary.calls is not None and summary.calls.api_calls == calls + 1
    assert math.fsum(r["cost_usd"] for r in written) == pytest.approx(
        summary.calls.spent_usd, rel=1e-15
    )


def test_an_answer_that_grades_no_result_is_unparseable_for_each_and_asks_nothing_again(
    tmp_path: Path,
) -> None:
    with LoopbackServer(responder=lambda _r: "2\nAll fine.") as server:
        run(tmp_path, server)
        sent = server.requests_to(OPENAI_PATH)
    written = rows(tmp_path)
    grouped = [r for r in written if r["call_id"]]
    assert grouped and all(r["label"] is None for r in grouped)
    assert all(
        r["parse_error"].startswith("the answer grades none of its results") for r in grouped
    )
    assert len(sent) == len({r["call_id"] for r in grouped}) + sum(
        1 for r in written if not r["call_id"]
    )


@pytest.mark.parametrize("cache", [True, False])
def test_a_resume_after_rows_cut_short_mid_call_sends_no_judged_result_again(
    tmp_path: Path, cache: bool
) -> None:
    """A call's rows are written in one write; were they cut short all the same (a disk
    full), the resumed run sends the results without a row, and only they."""
    extra = () if cache else ("runner.cache=false",)
    with LoopbackServer(responder=Grader()) as server:
        run(tmp_path, server, *extra)
        path = tmp_path / "runs" / "run" / "judgments.jsonl"
        lines = path.read_text().splitlines()
        written = [json.loads(line) for line in lines]
        full = next(r["call_id"] for r in written if r["call_size"] == K)
        cut = [n for n, r in enumerate(written) if r["call_id"] == full][2:]
        assert len(cut) == 3
        kept = [line for n, line in enumerate(lines) if n not in cut]
        path.write_text("\n".join(kept) + "\n" + lines[cut[0]][:40])  # killed mid-row
        before = len(server.requests_to(OPENAI_PATH))
        run(tmp_path, server, *extra)
        resent = server.requests_to(OPENAI_PATH)[before:]
    written = rows(tmp_path)
    assert len(written) == ITEMS
    assert len({(r["query_id"], r["result_id"]) for r in written}) == ITEMS
    # The three results, and only they, in one call of their own.
    assert len(resent) == 1 and results_sent(resent) == 3
    again = {r["call_id"] for r in written[-3:]}
    assert len(again) == 1 and again != {full}


def test_a_call_answered_but_not_written_comes_from_the_response_cache_on_resume(
    tmp_path: Path,
) -> None:
    with LoopbackServer(responder=Grader()) as server:
        run(tmp_path, server)
        path = tmp_path / "runs" / "run" / "judgments.jsonl"
        written = [json.loads(line) for line in path.read_text().splitlines()]
        lost = written[-1]["call_id"]  # killed after the answer was stored, before its rows
        assert lost is not None
        kept = [
            line
            for line, row in zip(path.read_text().splitlines(), written, strict=True)
            if row["call_id"] != lost
        ]
        path.write_text("\n".join(kept) + "\n")
        before = len(server.requests_to(OPENAI_PATH))
        run(tmp_path, server)
        assert len(server.requests_to(OPENAI_PATH)) == before  # the same call, from the cache
    again = [r for r in rows(tmp_path) if r["call_id"] == lost]
    assert again and all(r["cached"] for r in again)
    assert len(rows(tmp_path)) == ITEMS


def test_a_kill_mid_call_resends_only_the_results_without_a_row(tmp_path: Path) -> None:
    overrides = [
        "model=gpt4o_mini",
        "modality=text",
        f"dataset.limit={ITEMS}",
        f"prompt.passages_per_call={K}",
        "runner.concurrency=2",
        "report.build=false",
    ]
    env = {"OPENAI_API_KEY": "sk-test-0000"}
    path = tmp_path / "results" / "runs"
    with LoopbackServer(responder=Grader(), latency_s=0.3) as server:
        run_dir = f"hydra.run.dir={tmp_path / 'results' / 'runs' / 'cell'}"
        args = (*overrides, f"model.base_url={server.openai_base_url}", run_dir)
        process = start_sweep(tmp_path, *args, env=env)
        judgments = path / "cell" / "judgments.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if judgments.exists() and len(judgments.read_text().splitlines()) >= 2 * K:
                break
            time.sleep(0.02)
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        kept = {(r["query_id"], r["result_id"]) for r in map(json.loads, _complete(judgments))}
        assert 0 < len(kept) < ITEMS
        before = len(server.requests_to(OPENAI_PATH))
        done = run_sweep(tmp_path, *args, env=env)
        assert done.returncode == 0, done.stderr
        resent = server.requests_to(OPENAI_PATH)[before:]
    written = [json.loads(line) for line in judgments.read_text().splitlines()]
    assert len({(r["query_id"], r["result_id"]) for r in written}) == ITEMS == len(written)
    # Only the results without a row were shown again (the calls cut off in flight).
    assert results_sent(resent) == ITEMS - len(kept)


def _complete(path: Path) -> list[str]:
    lines = path.read_text().splitlines(keepends=True)
    return [line for line in lines if line.endswith("\n")]


def test_the_dry_run_forecasts_a_third_of_the_dollars_per_judgment_in_batch(
    tmp_path: Path,
) -> None:
    with LoopbackServer() as server:
        one = forecast_cell(config(tmp_path, server, "prompt.passages_per_call=1"), tmp_path / "1")  # type: ignore[arg-type]
        five = forecast_cell(config(tmp_path, server), tmp_path / "5")  # type: ignore[arg-type]
    assert isinstance(one, CellForecast) and isinstance(five, CellForecast)
    assert one.sync.calls == one.sync.judged == ITEMS
    assert five.sync.judged == ITEMS and five.sync.calls < ITEMS / 2
    assert five.batch.usd_per_million <= one.sync.usd_per_million / 3
    assert f"forecast {five.sync.calls} calls for {ITEMS} judgments, " in five.line()
    assert " calls for " not in one.line()
    saved = json.loads((tmp_path / "5" / "forecast.json").read_text())
    assert saved["forecast"]["judgments"] == ITEMS


def test_batch_mode_sends_the_calls_and_pays_a_third_of_one_result_per_call(
    tmp_path: Path,
) -> None:
    with LoopbackServer(responder=Grader()) as server:
        sync = run(tmp_path, server, "prompt.passages_per_call=1", "runner.cache=false", name="one")
        batch = run(
            tmp_path,
            server,
            "runner.mode=batch",
            "runner.batch_poll_s=0.05",
            "runner.cache=false",
            name="batch",
        )
    written = rows(tmp_path, "batch")
    assert len(written) == ITEMS and all(r["batch"] and r["label"] is not None for r in written)
    assert batch.cost.usd_per_million <= sync.cost.usd_per_million / 3


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        (["model=lexical"], "the lexical judge grades one result at a time"),
        (
            ["modality=mm", "prompt.passages_per_call=501"],
            "sends up to 501 pictures in one call, over the 500 of OpenAI's vision guide",
        ),
    ],
)
def test_cells_that_cannot_show_several_results_are_skipped_with_the_reason(
    tmp_path: Path, overrides: list[str], reason: str
) -> None:
    with LoopbackServer() as server:
        summary = run(tmp_path, server, *overrides)
        assert server.requests_to(OPENAI_PATH) == []
    assert summary.status.status == "skipped" and reason in (summary.status.status_reason or "")


def test_the_summary_and_the_report_give_kappa_by_place_in_the_call(tmp_path: Path) -> None:
    with LoopbackServer(responder=Grader(garble=(2,))) as server:
        summary = run(tmp_path, server)
        run(tmp_path, server, "prompt.passages_per_call=1", name="one")
    block = summary.positions
    assert block is not None and block.reasked == 1
    assert [p.position for p in block.by_position] == list(range(1, K + 1))
    grouped = [r for r in rows(tmp_path) if r["call_id"]]
    assert sum(p.n for p in block.by_position) == len(grouped)
    assert block.calls == len({r["call_id"] for r in grouped})
    assert summary.cell.prompt_id == f"default-k{K}"
    out = build_report(tmp_path / "runs", tmp_path / "reports", n_boot=50)
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "Does a result's place in the call move its grade?" in page
    assert all(f"<th>κ at R{n}</th>" in page for n in range(1, K + 1))
    assert "<th>κ at R6</th>" not in page


def test_anthropic_calls_mark_the_shared_part_before_the_query_and_the_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000")
    minimum = 100
    with LoopbackServer(responder=Grader()) as server:
        server.prompt_cache.min_tokens = minimum
        summary = run(
            tmp_path,
            server,
            "model=claude_sonnet45",
            "prompt=guidelines",
            f"prompt.passages_per_call={K}",
            f"model.prompt_cache_min_tokens={minimum}",
            f"model.base_url={server.anthropic_base_url}",
        )
        sent = server.requests_to(ANTHROPIC_PATH)
    calls = [r for r in sent if len(passage_markers(user_text(r.body))) > 1]
    assert calls
    for request in calls:
        # The structured answer: one tool whose input schema is the answer's, forced.
        markers = passage_markers(user_text(request.body))
        (tool,) = request.body["tools"]
        assert tool["name"] == "grades" and tool["input_schema"]["required"] == markers
        assert request.body["tool_choice"] == {"type": "tool", "name": "grades"}
        content = request.body["messages"][0]["content"]
        assert content[0]["cache_control"] == {"type": "ephemeral"}
        assert content[1]["text"].startswith("Query: ") and "\n\nR1\n" in content[1]["text"]
    assert len({r.body["messages"][0]["content"][0]["text"] for r in sent}) == 1
    assert summary.prompt_cache is not None and summary.prompt_cache.read_tokens > 0
    written = rows(tmp_path)
    assert len(written) == ITEMS and all(r["label"] is not None for r in written)
    # Each row's grade is the one under its marker in the tool call's input.
    for row in written:
        if row["call_id"]:
            assert json.loads(row["raw_output"])[f"R{row['call_position']}"] == row["label"]


def test_a_failed_call_is_an_error_row_for_each_result_and_is_sent_again_on_resume(
    tmp_path: Path,
) -> None:
    grader = Grader()
    failed_once: list[str] = []

    def failing(request: RecordedRequest) -> str | Behaviour:
        text = user_text(request.body)
        if len(passage_markers(text)) > 1 and not failed_once:
            failed_once.append(text)
            return Behaviour.server_error(400)  # refused: not retried
        return grader(request)

    with LoopbackServer(responder=failing) as server:
        run(tmp_path, server)
        first = rows(tmp_path)
        before = len(server.requests_to(OPENAI_PATH))
        run(tmp_path, server)
        again = server.requests_to(OPENAI_PATH)[before:]
    failed = [r for r in first if r["error"]]
    size = len(passage_markers(failed_once[0]))
    assert len(failed) == size and len({r["call_id"] for r in failed}) == 1
    assert all(r["label"] is None and r["cost_usd"] == 0 for r in failed)
    assert not any(r["reasked"] for r in first)
    # The failed call is sent again as the same call, and no result that has a row is sent
    # again. (A refused call can end the first run before its other calls leave, depending on
    # timing: those results, without a row, are sent on resume too.)
    assert failed_once[0] in [user_text(r.body) for r in again]
    graded = {(r["query_id"], r["result_id"]) for r in first if r["error"] is None}
    assert results_sent(again) == ITEMS - len(graded)
    final = {(r["query_id"], r["result_id"]): r for r in rows(tmp_path)}
    assert len(final) == ITEMS and all(r["error"] is None for r in final.values())


def test_anthropic_batches_force_the_tool_and_each_row_reads_its_grade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-0000")
    with LoopbackServer(responder=Grader()) as server:
        run(
            tmp_path,
            server,
            "model=claude_haiku45",
            f"model.base_url={server.anthropic_base_url}",
            "runner.mode=batch",
            "runner.batch_poll_s=0.05",
        )
        (batch,) = server.batches
    calls = [b for b in batch.bodies if len(passage_markers(user_text(b))) > 1]
    assert calls and all(b["tool_choice"] == {"type": "tool", "name": "grades"} for b in calls)
    written = rows(tmp_path)
    assert len(written) == ITEMS and all(r["batch"] and r["label"] is not None for r in written)
    for row in written:
        if row["call_id"]:
            assert json.loads(row["raw_output"])[f"R{row['call_position']}"] == row["label"]
