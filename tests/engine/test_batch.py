"""Batch mode end to end: python -m mmjudge.sweep runner.mode=batch with the official SDKs against
the loopback server's files, batches and message-batches endpoints. Covers pricing at the batch
discount, splitting, follow-up batches for failed and expired items, results out of order, resume
after SIGKILL without resubmitting, and the sync-vs-batch forecast."""

from __future__ import annotations

import hashlib
import json
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from mmjudge.engine.batch_packing import CUSTOM_ID_PREFIX, custom_id
from mmjudge.store.batches import BatchState
from mmjudge.store.status import EXIT_FAILED, EXIT_PARTIAL
from tests.fixtures.loopback_server import (
    ANTHROPIC_BATCHES_PATH,
    ANTHROPIC_PATH,
    OPENAI_BATCH_PATH,
    OPENAI_BATCHES_PATH,
    OPENAI_FILES_PATH,
    OPENAI_PATH,
    BatchPlan,
    Behaviour,
    LoopbackServer,
    RecordedRequest,
)
from tests.helpers import run_sweep, start_sweep

KEY = "sk-test-loopback-0123456789abcdef"
KEYS = {"OPENAI_API_KEY": KEY, "ANTHROPIC_API_KEY": KEY}
LIMIT = 16
PROVIDERS = {
    # provider -> (model, extra overrides, batch-create path, synchronous path)
    "openai": ("gpt4o", (), OPENAI_BATCHES_PATH, OPENAI_PATH),
    "anthropic": (
        "claude35_sonnet",
        ("pricing=2024-08-16",),
        ANTHROPIC_BATCHES_PATH,
        ANTHROPIC_PATH,
    ),
}


def quick(tmp_path: Path, cache: str) -> tuple[str, ...]:
    """The first items only, retries that hardly wait, no report, and the named cache file."""
    return (
        f"dataset.limit={LIMIT}",
        f"paths.response_cache={tmp_path / cache}",
        "runner.backoff_base_s=0.01",
        "runner.backoff_max_s=0.05",
        "report.build=false",
    )


def run(
    tmp_path: Path, *args: str, cache: str = "cache.sqlite"
) -> subprocess.CompletedProcess[str]:
    return run_sweep(tmp_path, *args, *quick(tmp_path, cache), env=KEYS)


def batch_args(server: LoopbackServer, provider: str, *extra: str) -> list[str]:
    model, overrides, _create, _sync = PROVIDERS[provider]
    url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return [
        f"model={model}",
        *overrides,
        "runner.mode=batch",
        "runner.batch_poll_s=0.05",
        f"model.base_url={url}",
        *extra,
    ]


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "judgments.jsonl").read_text().splitlines()]


def run_dirs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "results" / "runs").iterdir())


def state(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "batches.json").read_text())


def key(row: dict[str, Any]) -> tuple[str, str]:
    return row["query_id"], row["result_id"]


def creates(server: LoopbackServer, provider: str) -> int:
    return server.counts().get(PROVIDERS[provider][2], 0)


def sync_calls(server: LoopbackServer, provider: str) -> int:
    return server.counts().get(PROVIDERS[provider][3], 0)


# --- unit level ----------------------------------------------------------------------------


def test_custom_ids_fit_every_provider_and_follow_the_request() -> None:
    first = custom_id("q 1\tresult/ü:7", "a" * 64)
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", first) and first.startswith(CUSTOM_ID_PREFIX)
    assert custom_id("q 1\tresult/ü:7", "a" * 64) == first
    assert custom_id("q 1\tresult/ü:7", "b" * 64) != first  # a changed prompt is a new item
    assert custom_id("q 1\tresult/ü:8", "a" * 64) != first


def test_unreadable_state_file_fails_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "batches.json"
    path.write_text("{not json")
    with pytest.raises(Exception, match="remove it to submit every unfinished item again"):
        BatchState(path)


# --- end to end ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_batch_sweep_completes_at_half_the_sync_price(
    provider: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    result = run(tmp_path, *batch_args(loopback, provider, "modality=mm"))
    assert result.returncode == 0, result.stderr
    assert creates(loopback, provider) == 1
    assert sync_calls(loopback, provider) == 0
    (batch_dir,) = run_dirs(tmp_path)
    batched = rows(batch_dir)
    assert len(batched) == LIMIT and len({key(r) for r in batched}) == LIMIT
    assert all(r["error"] is None and r["label"] == 2 and not r["cached"] for r in batched)
    saved = state(batch_dir)
    (record,) = saved["batches"]
    assert record["state"] == "collected" and record["n_requests"] == LIMIT
    assert record["provider"] == provider and record["submitted_at"] and record["collected_at"]
    assert sorted(record["items"].values()) == sorted("\t".join(key(r)) for r in batched)
    summary = json.loads((batch_dir / "summary.json").read_text())
    assert summary["calls"]["api_calls"] == LIMIT
    assert summary["config"]["runner"]["mode"] == "batch"

    # The same cell called synchronously (own cache) costs twice as much, row by row.
    url_arg = batch_args(loopback, provider)[-1]
    model, overrides, _create, _sync = PROVIDERS[provider]
    result = run(
        tmp_path, f"model={model}", *overrides, "modality=mm", url_arg, cache="sync.sqlite"
    )
    assert result.returncode == 0, result.stderr
    assert sync_calls(loopback, provider) == LIMIT
    sync_dir = next(d for d in run_dirs(tmp_path) if d != batch_dir)
    sync_cost = {key(r): r["cost_usd"] for r in rows(sync_dir)}
    sync_summary = json.loads((sync_dir / "summary.json").read_text())
    assert summary["forecast"]["usd"] == pytest.approx(sync_summary["forecast"]["usd"] / 2)
    for row in batched:
        assert row["cost_usd"] > 0
        assert row["cost_usd"] == pytest.approx(sync_cost[key(row)] / 2, rel=1e-9)
        assert row["image_cost_usd"] > 0

    # Answers went into the cache: a second batch run submits nothing.
    again = run(tmp_path, *batch_args(loopback, provider, "modality=mm"))
    assert again.returncode == 0, again.stderr
    assert creates(loopback, provider) == 1
    cached_dir = run_dirs(tmp_path)[-1]
    assert all(r["cached"] for r in rows(cached_dir))
    assert not (cached_dir / "batches.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_kill_between_submit_and_collect_resumes_without_resubmitting(
    provider: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.script_batches(BatchPlan(in_progress_polls=10_000))
    args = batch_args(loopback, provider)
    process = start_sweep(tmp_path, *args, *quick(tmp_path, "cache.sqlite"), env=KEYS)
    # Polls start only once the batch is recorded in the state file.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if loopback.batches and loopback.batches[0].polls >= 2:
            break
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(10)
    (batch,) = loopback.batches
    assert batch.polls >= 2 and not batch.ended
    (killed_dir,) = run_dirs(tmp_path)
    saved = state(killed_dir)
    assert [b["state"] for b in saved["batches"]] == ["submitted"]
    assert saved["batches"][0]["id"] == batch.id
    assert not (killed_dir / "judgments.jsonl").exists() or not rows(killed_dir)

    # The batch finishes while nobody watches; the rerun in place only polls and collects.
    loopback.replan(batch.id, BatchPlan(in_progress_polls=0))
    result = run(tmp_path, *args, f"hydra.run.dir={killed_dir}")
    assert result.returncode == 0, result.stderr
    assert creates(loopback, provider) == 1
    if provider == "openai":
        assert loopback.counts()[OPENAI_FILES_PATH] == 1
    assert sync_calls(loopback, provider) == 0
    records = rows(killed_dir)
    assert len(records) == LIMIT and len({key(r) for r in records}) == LIMIT
    assert all(r["error"] is None and r["label"] == 2 for r in records)
    assert [b["state"] for b in state(killed_dir)["batches"]] == ["collected"]

    # Once everything is written, another rerun sends nothing at all.
    before = loopback.request_count
    result = run(tmp_path, *args, f"hydra.run.dir={killed_dir}")
    assert result.returncode == 0, result.stderr
    assert loopback.request_count == before
    assert len(rows(killed_dir)) == LIMIT


@pytest.mark.slow
def test_large_inputs_are_split_by_request_count_and_by_bytes(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    result = run(tmp_path, *batch_args(loopback, "openai", "runner.batch_max_requests=5"))
    assert result.returncode == 0, result.stderr
    sizes = [len(b.custom_ids) for b in loopback.batches]
    assert sizes == [5, 5, 5, 1]
    everything = [cid for b in loopback.batches for cid in b.custom_ids]
    assert len(set(everything)) == LIMIT
    (run_dir,) = run_dirs(tmp_path)
    assert len(rows(run_dir)) == LIMIT
    assert [b["n_requests"] for b in state(run_dir)["batches"]] == sizes

    # By bytes: every uploaded input file stays under the cap.
    loopback.reset()
    limit = 6000
    result = run(
        tmp_path,
        *batch_args(loopback, "anthropic", f"runner.batch_max_bytes={limit}"),
        cache="bytes.sqlite",
    )
    assert result.returncode == 0, result.stderr
    assert len(loopback.batches) > 1
    for recorded in loopback.requests_to(ANTHROPIC_BATCHES_PATH):
        assert recorded.size <= limit
    assert sum(len(b.custom_ids) for b in loopback.batches) == LIMIT


@pytest.mark.slow
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_failed_items_go_into_a_follow_up_batch(
    provider: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.script_batches(BatchPlan(errored=(0, 3), error_status=500, shuffle=True))
    # A failed poll on the way is retried, not fatal.
    loopback.script(Behaviour.server_error(503), path=OPENAI_BATCH_PATH)
    result = run(tmp_path, *batch_args(loopback, provider))
    assert result.returncode == 0, result.stderr
    first, follow_up = loopback.batches
    assert follow_up.custom_ids == [first.custom_ids[0], first.custom_ids[3]]
    (run_dir,) = run_dirs(tmp_path)
    records = rows(run_dir)
    assert len(records) == LIMIT and all(r["error"] is None for r in records)
    attempts = [b["attempt"] for b in state(run_dir)["batches"]]
    assert attempts == [1, 2]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["calls"]["retries"] == 2 and summary["calls"]["api_calls"] == LIMIT


@pytest.mark.slow
def test_samples_in_a_batch_are_requests_of_their_own_at_the_batch_price(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    from mmjudge.costs.reprice import reprice_run

    # Entries go item, its repeat, next item...: entry 1 is a repeat, entry 2 a first answer.
    loopback.script_batches(BatchPlan(errored=(1, 2), error_status=500))
    result = run(tmp_path, *batch_args(loopback, "openai", "runner.samples=2"))
    assert result.returncode == 0, result.stderr
    first, follow_up = loopback.batches
    assert len(first.custom_ids) == 2 * LIMIT == len(set(first.custom_ids))
    assert follow_up.custom_ids == first.custom_ids[1:3]  # the failed repeat retried too
    assert sync_calls(loopback, "openai") == 0
    (run_dir,) = run_dirs(tmp_path)
    answers = {key(r): r for r in rows(run_dir)}
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    repeats = [json.loads(line) for line in lines]
    assert len(answers) == LIMIT and len(repeats) == LIMIT
    assert {r["sample"] for r in repeats} == {1} and all(r["error"] is None for r in repeats)
    for repeat in repeats:  # the same request answered alike, billed at the same batch price
        assert repeat["cost_usd"] > 0 and repeat.get("batch", True)
        assert repeat["cost_usd"] == pytest.approx(answers[key(repeat)]["cost_usd"])
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stability"]["samples"] == 2 and summary["calls"]["api_calls"] == 2 * LIMIT
    own = summary["cost"]["total_usd"] + summary["stability"]["total_usd"]
    priced = reprice_run(run_dir)
    assert priced.repriced.total_usd == pytest.approx(own, rel=1e-12)
    assert priced.basis.n_batch_priced == 2 * LIMIT
    listed = reprice_run(run_dir, sync=True).repriced.total_usd
    assert listed == pytest.approx(2 * own)  # the batch discount on every sample

    # Every sample went into the cache under its own key: a second batch run submits nothing.
    again = run(tmp_path, *batch_args(loopback, "openai", "runner.samples=2"))
    assert again.returncode == 0, again.stderr
    assert len(loopback.batches) == 2


@pytest.mark.slow
def test_failed_items_can_be_called_synchronously(tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.script_batches(BatchPlan(errored=(2, 5, 7)))
    result = run(tmp_path, *batch_args(loopback, "openai", "runner.batch_failed=sync"))
    assert result.returncode == 0, result.stderr
    assert len(loopback.batches) == 1
    assert sync_calls(loopback, "openai") == 3
    (run_dir,) = run_dirs(tmp_path)
    records = rows(run_dir)
    assert len(records) == LIMIT and all(r["error"] is None for r in records)


@pytest.mark.slow
def test_requests_the_provider_rejects_are_not_retried(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.script_batches(BatchPlan(errored=(1,), error_status=400, error_message="bad image"))
    result = run(tmp_path, *batch_args(loopback, "anthropic"))
    assert result.returncode == EXIT_PARTIAL, result.stderr  # 1 failed row of 16: partial
    assert len(loopback.batches) == 1
    (run_dir,) = run_dirs(tmp_path)
    assert json.loads((run_dir / "summary.json").read_text())["status"] == "partial"
    failed = [r for r in rows(run_dir) if r["error"]]
    assert len(failed) == 1
    assert "invalid_request_error" in failed[0]["error"] and "bad image" in failed[0]["error"]
    assert failed[0]["label"] is None and failed[0]["cost_usd"] == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_expired_items_are_resubmitted_within_max_retries(
    provider: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.script_batches(
        BatchPlan(expire=True, expire_after=6), BatchPlan(expire=True, expire_after=4)
    )
    result = run(tmp_path, *batch_args(loopback, provider, "runner.max_retries=1"))
    # Batch mode ends with the statuses sync mode has: 6 failed rows of 16 fail the cell.
    assert result.returncode == EXIT_FAILED, result.stderr
    assert "more than runner.max_error_rate=0.1" in result.stderr
    sizes = [len(b.custom_ids) for b in loopback.batches]
    assert sizes == [LIMIT, LIMIT - 6]  # one follow-up only: max_retries=1
    (run_dir,) = run_dirs(tmp_path)
    records = rows(run_dir)
    assert len(records) == LIMIT
    failed = [r for r in records if r["error"]]
    assert len(failed) == LIMIT - 10
    word = "batch_expired" if provider == "openai" else "expired"
    assert all(word in r["error"] for r in failed)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n_errors"] == LIMIT - 10

    # The failed rows are retried by a rerun in place; the answered ones are not.
    loopback.batch_default = BatchPlan()
    result = run(
        tmp_path,
        *batch_args(loopback, provider, "runner.max_retries=1"),
        f"hydra.run.dir={run_dir}",
    )
    assert result.returncode == 0, result.stderr
    assert len(loopback.batches[-1].custom_ids) == LIMIT - 10
    records = rows(run_dir)
    assert len(records) == LIMIT and all(r["error"] is None for r in records)


def _answer(request: RecordedRequest) -> str:
    """A grade and a reason that depend on the request, so a mix-up shows in the records."""
    digest = hashlib.sha256(json.dumps(request.body, sort_keys=True).encode()).hexdigest()
    return f"{int(digest, 16) % 3}\nReason {digest[:12]}."


@pytest.mark.slow
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_results_out_of_order_are_matched_by_custom_id(
    provider: str, tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.responder = _answer
    loopback.script_batches(BatchPlan(shuffle=True, seed=3))
    result = run(tmp_path, *batch_args(loopback, provider))
    assert result.returncode == 0, result.stderr
    (batch,) = loopback.batches
    served = [line["custom_id"] for line in batch.results]
    assert served != batch.custom_ids and sorted(served) == sorted(batch.custom_ids)
    (run_dir,) = run_dirs(tmp_path)
    item_of = state(run_dir)["batches"][0]["items"]
    by_key = {"\t".join(key(r)): r for r in rows(run_dir)}
    path = PROVIDERS[provider][3]
    labels = set()
    for cid, body in zip(batch.custom_ids, batch.bodies, strict=True):
        expected = _answer(RecordedRequest("POST", path, {}, body, 0, 0.0))
        row = by_key[item_of[cid]]
        assert row["raw_output"] == expected
        assert row["label"] == int(expected[0])
        labels.add(row["label"])
    assert len(labels) > 1


@pytest.mark.slow
def test_dry_run_shows_sync_and_batch_forecasts(tmp_path: Path) -> None:
    result = run(tmp_path, "model=gpt4o", "modality=mm", "runner.dry_run=true")
    assert result.returncode == 0, result.stderr
    assert "sync $" in result.stdout and "batch API $" in result.stdout
    (run_dir,) = run_dirs(tmp_path)
    data = json.loads((run_dir / "forecast.json").read_text())
    sync, batch = data["forecast"], data["forecast_batch"]
    assert data["batch_discount"] == 0.5
    assert batch["calls"] == sync["calls"] == LIMIT
    assert batch["input_tokens"] == sync["input_tokens"]
    assert batch["usd"] == pytest.approx(sync["usd"] / 2)
    assert batch["usd_per_million"] == pytest.approx(sync["usd_per_million"] / 2)


@pytest.mark.slow
def test_bad_mode_and_judges_without_a_batch_api_fail_before_any_call(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    result = run(
        tmp_path, "model=gpt4o", "runner.mode=batches", f"model.base_url={loopback.openai_base_url}"
    )
    assert result.returncode == 2
    assert "runner.mode='batches'" in result.stderr and "Traceback" not in result.stderr
    result = run(tmp_path, "model=lexical", "runner.mode=batch")
    assert result.returncode == 2
    assert "no batch API" in result.stderr and "Traceback" not in result.stderr
    assert loopback.request_count == 0


@pytest.mark.slow
def test_a_server_without_a_batch_api_stops_in_one_line(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    loopback.script(Behaviour.error(404, message="Not found"), path=OPENAI_FILES_PATH)
    result = run(tmp_path, *batch_args(loopback, "openai"))
    assert result.returncode == EXIT_FAILED
    assert "runner.mode=sync" in result.stderr and "Traceback" not in result.stderr
    assert creates(loopback, "openai") == 0
