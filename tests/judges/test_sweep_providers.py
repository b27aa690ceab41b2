"""Real judges end to end: python -m mmjudge.sweep with the official SDKs against the loopback
server, covering usage in records, the response cache, resume after SIGKILL, fail-fast errors
and the secrecy rules."""

from __future__ import annotations

import base64
import io
import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from PIL import Image

from mmjudge.store.status import EXIT_BUDGET, EXIT_FAILED, EXIT_PARTIAL
from tests.fixtures.loopback_server import ANTHROPIC_PATH, OPENAI_PATH, Behaviour, LoopbackServer
from tests.helpers import run_sweep, shared_data, start_sweep

KEY = "sk-test-loopback-0123456789abcdef"
LIMIT = 16


pytestmark = pytest.mark.slow  # every test here starts python -m mmjudge.sweep

#: Small and quick: the first items of the dataset, and retries that hardly wait.
QUICK = (f"dataset.limit={LIMIT}", "runner.backoff_base_s=0.01", "runner.backoff_max_s=0.05")


def run(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_sweep(tmp_path, *args, *QUICK, env=env)


def rows(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]


def run_dirs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "results" / "runs").iterdir())


def test_openai_mm_sweep_records_provider_usage(tmp_path: Path, loopback: LoopbackServer) -> None:
    result = run(
        tmp_path,
        "model=gpt4o",
        "modality=mm",
        f"model.base_url={loopback.openai_base_url}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == 0, result.stderr
    sent = loopback.requests_to(OPENAI_PATH)
    assert len(sent) == LIMIT
    body = sent[0].body
    assert body["model"] == "gpt-4o-2024-05-13"
    assert body["temperature"] == 0.0
    parts = body["messages"][-1]["content"]
    image_part = next(p for p in parts if p["type"] == "image_url")
    assert image_part["image_url"]["detail"] == "low"
    data = image_part["image_url"]["url"].split(",", 1)[1]
    assert Image.open(io.BytesIO(base64.b64decode(data))).size == (512, 512)
    (run_dir,) = run_dirs(tmp_path)
    records = rows(run_dir)
    assert len(records) == LIMIT
    served = {r.body["messages"][-1]["content"][0]["text"]: r for r in sent}
    assert all(r["input_tokens"] > 85 and r["output_tokens"] > 0 for r in records)
    assert all(r["label"] == 2 and r["cost_usd"] > 0 for r in records)
    assert len(served) == LIMIT
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["calls"]["api_calls"] == LIMIT
    assert summary["cost"]["usd_per_million"] > 0
    assert summary["forecast"]["calls"] == LIMIT

    # A rerun makes no calls and reproduces the records.
    again = run(
        tmp_path,
        "model=gpt4o",
        "modality=mm",
        f"model.base_url={loopback.openai_base_url}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert again.returncode == 0, again.stderr
    assert len(loopback.requests_to(OPENAI_PATH)) == LIMIT
    second = rows(run_dirs(tmp_path)[-1])
    assert all(r["cached"] for r in second)
    key = lambda r: (r["query_id"], r["result_id"])  # noqa: E731
    first_by_key = {key(r): r for r in records}
    for r in second:
        before = first_by_key[key(r)]
        for field in ("label", "raw_output", "input_tokens", "output_tokens", "cost_usd"):
            assert r[field] == before[field]

    # Secrets and image payloads are never written.
    for path in [
        *tmp_path.joinpath("results").rglob("*"),
        *tmp_path.joinpath("reports").rglob("*"),
    ]:
        if path.is_file() and path.suffix in {".jsonl", ".json", ".yaml", ".log", ".html"}:
            text = path.read_text(errors="ignore")
            assert KEY not in text, path
            assert data[:200] not in text, path


def test_anthropic_image_sweep(tmp_path: Path, loopback: LoopbackServer) -> None:
    result = run(
        tmp_path,
        "model=claude35_sonnet",
        "modality=image",
        "pricing=2024-08-16",
        f"model.base_url={loopback.anthropic_base_url}",
        env={"ANTHROPIC_API_KEY": KEY},
    )
    assert result.returncode == 0, result.stderr
    sent = loopback.requests_to(ANTHROPIC_PATH)
    assert len(sent) == LIMIT
    body = sent[0].body
    assert body["model"] == "claude-3-5-sonnet-20240620"
    blocks = body["messages"][0]["content"]
    # The shared part first, with its cache breakpoint; the image after it, then the query.
    assert [block["type"] for block in blocks] == ["text", "image", "text"]
    assert blocks[0]["cache_control"] == {"type": "ephemeral"}
    assert blocks[1]["source"]["type"] == "base64"
    assert "catalogue fields" not in blocks[-1]["text"]
    records = rows(run_dirs(tmp_path)[0])
    assert all(r["input_tokens"] > 300 for r in records)  # image tokens reported by the server


def test_openai_compatible_server_needs_no_key(tmp_path: Path, loopback: LoopbackServer) -> None:
    result = run(
        tmp_path,
        "model=vllm_local",
        "modality=mm",
        "model.price_key=gpt-4o-mini-2024-07-18",
        f"model.base_url={loopback.openai_base_url}",
    )
    assert result.returncode == 0, result.stderr
    assert loopback.requests_to(OPENAI_PATH)[0].body["model"] == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert len(rows(run_dirs(tmp_path)[0])) == LIMIT


def test_missing_key_stops_before_any_call(tmp_path: Path, loopback: LoopbackServer) -> None:
    result = run(tmp_path, "model=gpt4o", f"model.base_url={loopback.openai_base_url}")
    assert result.returncode == 2
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr
    assert loopback.request_count == 0


def test_rejected_key_stops_the_run_at_the_first_call(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.set_default(Behaviour.error(401, message="invalid x-api-key"))
    result = run(
        tmp_path,
        "model=gpt4o",
        "runner.concurrency=1",
        f"model.base_url={loopback.openai_base_url}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == EXIT_FAILED
    assert "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr
    assert loopback.request_count == 1
    summary = json.loads((run_dirs(tmp_path)[0] / "summary.json").read_text())
    assert summary["status"] == "failed" and "401" in summary["stopped_because"]


def test_transient_failures_are_retried_and_recorded(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.script(
        Behaviour.rate_limit(retry_after=0), Behaviour.server_error(500), Behaviour.drop()
    )
    loopback.script(*[Behaviour.server_error(503)] * 20)
    result = run(
        tmp_path,
        "model=gpt4o",
        "runner.concurrency=1",
        "runner.max_retries=2",
        # Twenty 503s in a row would trip the breaker and 7 failures of 16 fail the cell;
        # this test is about retries, so both limits are raised.
        "runner.breaker_failures=50",
        "runner.max_error_rate=0.5",
        f"model.base_url={loopback.openai_base_url}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == EXIT_PARTIAL, result.stderr
    records = rows(run_dirs(tmp_path)[0])
    failed = [r for r in records if r["error"]]
    assert len(records) == LIMIT
    # Three attempts each: the first item meets 429, 500 and a dropped connection; the next
    # six get 503 three times; the eighth succeeds on its third attempt.
    assert len(failed) == 7
    assert sum("503" in r["error"] for r in failed) == 6
    assert all(r["label"] is None for r in failed)
    summary = json.loads((run_dirs(tmp_path)[0] / "summary.json").read_text())
    assert summary["n_errors"] == 7 and summary["calls"]["retries"] == 2 * 7 + 2
    assert summary["status"] == "partial" and summary["exit_code"] == EXIT_PARTIAL
    assert summary["errors"]["by_kind"] == {"InternalServerError": 6, "APIConnectionError": 1} or (
        sum(summary["errors"]["by_kind"].values()) == 7
    )
    assert "(after 3 attempts)" in summary["errors"]["first"]


def test_resume_after_sigkill_loses_nothing_and_pays_nothing_twice(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.latency_s = 0.2
    args = [
        "model=gpt4o_mini",
        "runner.concurrency=2",
        f"model.base_url={loopback.openai_base_url}",
    ]
    process = start_sweep(tmp_path, *args, *QUICK, env={"OPENAI_API_KEY": KEY})
    deadline = time.monotonic() + 60
    while loopback.request_count < 6 and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    first_calls = loopback.request_count
    assert 0 < first_calls < LIMIT
    (killed_dir,) = run_dirs(tmp_path)

    # Resume in place: the same run directory.
    result = run(tmp_path, *args, f"hydra.run.dir={killed_dir}", env={"OPENAI_API_KEY": KEY})
    assert result.returncode == 0, result.stderr
    records = rows(killed_dir)
    assert sorted((r["query_id"], r["result_id"]) for r in records) == sorted(
        set((r["query_id"], r["result_id"]) for r in records)
    )
    assert len(records) == LIMIT
    prompts = [r.body["messages"][-1]["content"] for r in loopback.requests]
    # Only calls in flight at the kill can be sent twice (their answers never arrived).
    repeats = len(prompts) - len(set(map(str, prompts)))
    assert repeats <= 2
    assert loopback.request_count <= LIMIT + 2


def test_budget_cap_stops_writes_what_it_has_and_resumes(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    args = ["model=gpt4o", "modality=mm", "runner.concurrency=1"]
    args.append(f"model.base_url={loopback.openai_base_url}")
    stopped = run(tmp_path, *args, "runner.max_cost_usd=0.01", env={"OPENAI_API_KEY": KEY})
    assert stopped.returncode == EXIT_BUDGET
    assert "runner.max_cost_usd=0.01" in stopped.stderr and "Traceback" not in stopped.stderr
    (run_dir,) = run_dirs(tmp_path)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "stopped_by_budget"
    assert 0 < summary["n_judgments"] < LIMIT
    assert summary["cost"]["total_usd"] <= 0.01
    assert summary["n_judgments"] == loopback.request_count

    resumed = run(
        tmp_path,
        *args,
        "runner.max_cost_usd=1.0",
        f"hydra.run.dir={run_dir}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert resumed.returncode == 0, resumed.stderr
    assert len(rows(run_dir)) == LIMIT
    assert loopback.request_count == LIMIT


def test_flickr8k_expert_image_only_sweep(tmp_path: Path, loopback: LoopbackServer) -> None:
    root = shared_data("flickr8k_expert")
    loopback.responder = lambda request: "3\nThe caption fits the picture."
    result = run(
        tmp_path,
        "dataset=flickr8k_expert",
        f"dataset.path={root}",
        "modality=image",
        "model=gpt4o_mini",
        f"model.base_url={loopback.openai_base_url}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == 0, result.stderr
    records = rows(run_dirs(tmp_path)[0])
    assert len(records) == LIMIT
    assert all(
        r["label"] == 3 and set(r["human_labels"]) == {"expert_1", "expert_2", "expert_3"}
        for r in records
    )
    body = loopback.requests[0].body
    text = next(p["text"] for p in body["messages"][-1]["content"] if p["type"] == "text")
    assert "from 1 to 4" in text


def test_hm_sweep_with_a_label_file(tmp_path: Path, loopback: LoopbackServer) -> None:
    root = shared_data("hm_sample")
    with (root / "articles.csv").open(encoding="utf-8") as handle:
        next(handle)
        ids = [next(handle).split(",", 1)[0] for _ in range(4)]
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "query_id,query,article_id,assessor\n"
        + "".join(f"q1,black dress,{article},{i % 3}\n" for i, article in enumerate(ids)),
        encoding="utf-8",
    )
    result = run(
        tmp_path,
        "dataset=hm_sample",
        f"dataset.path={root}",
        f"dataset.labels_file={labels}",
        "dataset.annotators=[assessor]",
        "modality=mm",
        "model=gpt4o_mini",
        f"model.base_url={loopback.openai_base_url}",
        env={"OPENAI_API_KEY": KEY},
    )
    assert result.returncode == 0, result.stderr
    records = rows(run_dirs(tmp_path)[0])
    assert len(records) == 4 and all(r["image_sha256s"] for r in records)
    text = loopback.requests[0].body["messages"][-1]["content"][0]["text"]
    assert "prod_name:" in text and "colour_group_name:" in text


def http_request_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    """Log lines of the HTTP client, one per request (``[time][logger][INFO] - HTTP Request:``)."""
    text = result.stdout + result.stderr
    return [line for line in text.splitlines() if "[INFO] - HTTP Request:" in line]


def test_console_has_no_line_per_request_unless_asked(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    args = ["model=gpt4o_mini", "runner.cache=false", "report.build=false"]
    args.append(f"model.base_url={loopback.openai_base_url}")
    env = {"OPENAI_API_KEY": KEY}

    quiet = run(tmp_path, *args, env=env)
    assert quiet.returncode == 0, quiet.stderr
    assert http_request_lines(quiet) == []
    assert "κ=" in quiet.stderr  # mmjudge's own closing line is still there
    (run_dir,) = run_dirs(tmp_path)
    logs = list(run_dir.glob("*.log"))
    assert logs and all("HTTP Request:" not in log.read_text() for log in logs)

    verbose = run(tmp_path, *args, "hydra.verbose=true", env=env)
    assert verbose.returncode == 0, verbose.stderr
    # The HTTP client logs the requests that go through the SDK: the judge's first (the
    # calls after it take the fast path, wire.py, which the client does not see).
    lines = http_request_lines(verbose)
    assert 1 <= len(lines) <= LIMIT
    assert "HTTP Request:" in next(iter(run_dirs(tmp_path)[-1].glob("*.log"))).read_text()
    # "[time][logger][INFO] - HTTP Request: ...": ask for that logger alone by name
    logger = lines[0].split("][")[1]
    named = run(tmp_path, *args, f"hydra.verbose=[{logger}]", env=env)
    assert named.returncode == 0, named.stderr
    assert 1 <= len(http_request_lines(named)) <= LIMIT
    # the console's log lines go to stderr, beside mmjudge's own
    assert "[openai._base_client][DEBUG]" in verbose.stderr
    assert "[openai._base_client]" not in named.stderr  # other libraries stay quiet
