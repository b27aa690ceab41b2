"""A response cache that another connection holds locked is waited for, and past the wait is
called busy — naming who holds it — never damaged; several processes opening one new cache at
once all get it, and every answer each of them writes is there afterwards."""

from __future__ import annotations

import multiprocessing
import os
import queue
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from mmjudge.engine import cache_file
from mmjudge.engine.cell import run_cell
from mmjudge.engine.response_cache import ItemClaims, ResponseCache
from mmjudge.errors import CacheError, ConfigError
from mmjudge.records import JudgeResponse, Usage
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import compose_config

ANSWER = JudgeResponse(text="2\nThe dress is red, as asked.", usage=Usage(input_tokens=9))
#: How long the tests let a step wait for a lock: long enough to see the waiting, short
#: enough for the fast loop.
WAIT_S = 0.15


@contextmanager
def write_lock(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection (in this process) holding the file's write lock until the block
    ends, as a program with an open write transaction does."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    finally:
        db.execute("ROLLBACK")
        db.close()


def assert_busy(error: CacheError, path: Path, holder: str, waited: float) -> None:
    line = str(error)
    assert line.startswith(
        f"the response cache {path} is busy: {holder} still held its write lock after "
        f"{waited:g} s of waiting (the file is not damaged); "
    ), line
    assert "damaged (" not in line and "move it aside" not in line and "mv " not in line
    assert "paths.response_cache" in line and "\n" not in line
    assert isinstance(error, ConfigError)  # exit 2, as a damaged cache


def this_process() -> str:
    return f"another connection in this process (pid {os.getpid()})"


def test_a_write_lock_held_past_the_wait_is_busy_not_damaged(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    ResponseCache(path).close()
    with write_lock(path):
        cache = ResponseCache(path, lock_wait_s=WAIT_S)  # reading needs no lock
        started = time.monotonic()
        with pytest.raises(CacheError) as raised:
            cache.claims(30.0)  # a run's first write, before any call
        assert time.monotonic() - started >= WAIT_S
        cache.close()
    assert_busy(raised.value, path, this_process(), WAIT_S)


def test_readers_are_not_held_up_by_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", ANSWER)
    cache.close()
    with write_lock(path):
        started = time.monotonic()
        reader = ResponseCache(path, lock_wait_s=5.0)
        assert reader.get("k") == ANSWER and reader.get_many(["k", "x"]) == {"k": ANSWER}
        assert len(reader) == 1
        assert time.monotonic() - started < 1.0  # not the 5 s a writer would wait
        reader.close()


def _claim(claims: ItemClaims) -> None:
    claims.claim("k")


def _complete(claims: ItemClaims) -> None:
    claims.complete("k", ANSWER)


def _put(claims: ItemClaims) -> None:
    claims.cache.put("k", ANSWER)


def _release_all(claims: ItemClaims) -> None:
    claims.release_all()


@pytest.mark.parametrize("step", [_claim, _complete, _put, _release_all])
def test_a_step_of_a_run_that_meets_a_held_lock_is_busy_in_one_line(
    tmp_path: Path, step: Callable[[ItemClaims], None]
) -> None:
    path = tmp_path / "responses.sqlite"
    claims = ResponseCache(path, lock_wait_s=WAIT_S).claims(30.0)
    with write_lock(path), pytest.raises(CacheError) as raised:
        step(claims)
    assert_busy(raised.value, path, this_process(), WAIT_S)
    assert claims.claim("k").state == "claimed"  # the lock gone, the cache works on
    claims.cache.close()


@contextmanager
def rollback_mode_lock(path: Path) -> Iterator[sqlite3.Connection]:
    """A new file, not yet in WAL mode, that another connection is writing: switching it to
    WAL mode needs it to itself, and SQLite answers busy at once instead of waiting."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("CREATE TABLE other (x)")
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO other VALUES (1)")
    try:
        yield db
    finally:
        if db.in_transaction:
            db.execute("COMMIT")
        db.close()


def test_a_new_file_being_written_is_waited_for_while_it_is_switched_to_wal(
    tmp_path: Path,
) -> None:
    path = tmp_path / "responses.sqlite"
    with rollback_mode_lock(path) as other:
        timer = threading.Timer(WAIT_S, other.execute, ("COMMIT",))
        timer.start()
        started = time.monotonic()
        cache = ResponseCache(path, lock_wait_s=5.0)
        waited = time.monotonic() - started
        timer.join()
    assert WAIT_S * 0.9 <= waited < 2.0
    cache.put("k", ANSWER)
    assert cache.get("k") == ANSWER
    assert cache._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()


def test_a_new_file_held_past_the_wait_is_busy_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    with rollback_mode_lock(path), pytest.raises(CacheError) as raised:
        ResponseCache(path, lock_wait_s=WAIT_S)
    assert_busy(raised.value, path, this_process(), WAIT_S)


def test_the_holder_cannot_always_be_told(tmp_path: Path) -> None:
    """Without a lock to be seen (as where the system does not list them), the line says so
    and still calls the file busy."""
    path = tmp_path / "responses.sqlite"
    ResponseCache(path).close()
    assert cache_file.lock_holder(path) == (
        "another connection (which one cannot be told from here)"
    )
    with write_lock(path):
        assert cache_file.lock_holder(path) == this_process()


# --- several processes -----------------------------------------------------------------------

ANSWERS_EACH = 6


def _open_and_write(
    path: Path, worker: int, start: Barrier, results: Queue[tuple[int, str]]
) -> None:
    """One round worker: open the new cache as a run does (the file, then its claims), at the
    same moment as the others, and pay for answers of its own."""
    try:
        start.wait(timeout=30)
        cache = ResponseCache(path)
        claims = cache.claims(30.0)
        for answer in range(ANSWERS_EACH):
            key = f"{worker}-{answer}"
            assert claims.claim(key).state == "claimed"
            claims.complete(key, JudgeResponse(text=f"{answer % 3}\n{key}", usage=Usage()))
        claims.release_all()
        cache.close()
        results.put((worker, ""))
    except BaseException as error:  # every failure is reported to the test
        results.put((worker, f"{type(error).__name__}: {error}"))


@pytest.mark.slow
def test_six_to_eight_processes_opening_one_new_cache_never_call_it_damaged(
    tmp_path: Path,
) -> None:
    """50 trials (about 1 in 5 failed before: "damaged (database is locked)")."""
    context = multiprocessing.get_context("fork")
    failures: list[str] = []
    for trial in range(50):
        workers = 6 + trial % 3
        path = tmp_path / f"trial{trial}" / "responses.sqlite"
        start = context.Barrier(workers)
        results: Queue[tuple[int, str]] = context.Queue()
        processes = [
            context.Process(target=_open_and_write, args=(path, worker, start, results))
            for worker in range(workers)
        ]
        for process in processes:
            process.start()
        try:
            said = [results.get(timeout=60) for _ in processes]
        except queue.Empty:
            said = [(-1, "a worker never answered")]
        for process in processes:
            process.join(timeout=30)
        failures += [f"trial {trial}, worker {w}: {text}" for w, text in said if text]
        cache = ResponseCache(path)
        keys = [f"{w}-{a}" for w in range(workers) for a in range(ANSWERS_EACH)]
        found = cache.get_many(keys)
        lost = sorted(set(keys) - set(found))
        failures += [f"trial {trial}: answers lost: {lost}"] if lost else []
        assert all(found[k].text.endswith(f"\n{k}") for k in found)
        assert len(cache) == len(found)  # nothing but the answers written
        cache.close()
    assert failures == []


HOLD = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("holding", flush=True)
time.sleep(60)
"""


@pytest.mark.slow
def test_busy_names_the_process_that_holds_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    ResponseCache(path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "holding\n"
        cache = ResponseCache(path, lock_wait_s=WAIT_S)
        with pytest.raises(CacheError) as raised:
            cache.claims(30.0)
        cache.close()
    finally:
        holder.kill()
        holder.wait()
    name = Path(sys.executable).name[:15]  # the name the kernel gives the process
    assert_busy(raised.value, path, f"process {holder.pid} ({name})", WAIT_S)


@pytest.mark.slow
def test_a_cell_whose_cache_another_program_holds_stops_in_one_line_before_any_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write lock held by another connection in WAL mode: a traceback after the
    connection's 30 s before; now the cache's wait, then the busy line, and nothing sent."""
    monkeypatch.setattr(cache_file, "LOCK_WAIT_S", WAIT_S)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    path = tmp_path / "cache.sqlite"
    ResponseCache(path).close()
    with LoopbackServer() as server:
        cfg = compose_config(
            [
                "model=gpt4o_mini",
                "modality=text",
                f"model.base_url={server.openai_base_url}",
                "dataset.limit=3",
                "runner.progress=false",
                f"paths.response_cache={path}",
                f"paths.prepared_cache={tmp_path / 'prepared'}",
                f"paths.image_cache={tmp_path / 'images'}",
            ]
        )
        with write_lock(path), pytest.raises(CacheError) as raised:
            run_cell(cfg, tmp_path / "run")
        assert server.requests == []
    assert_busy(raised.value, path, this_process(), WAIT_S)


@pytest.mark.slow
def test_a_lock_taken_during_a_run_stops_it_in_one_line_keeping_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another program takes the write lock while the third request is at the server: the run
    stops with the busy line, and every answer that came back keeps its row, stored in the cache
    or not (it was paid for; a rerun must not send it again); calls still in flight at the stop
    are given up."""
    monkeypatch.setattr(cache_file, "LOCK_WAIT_S", WAIT_S)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    path = tmp_path / "cache.sqlite"
    ResponseCache(path).close()
    holders: list[sqlite3.Connection] = []

    def responder(*_: object) -> str:
        if len(holders) < 1 and len(server.requests) >= 3:
            holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            holder.execute("BEGIN IMMEDIATE")
            holders.append(holder)
        return "2\nThe dress is red, as asked."

    with LoopbackServer(responder=responder) as server:
        cfg = compose_config(
            [
                "model=gpt4o_mini",
                "modality=text",
                f"model.base_url={server.openai_base_url}",
                "dataset.limit=20",
                "runner.concurrency=2",
                "runner.progress=false",
                f"paths.response_cache={path}",
                f"paths.prepared_cache={tmp_path / 'prepared'}",
                f"paths.image_cache={tmp_path / 'images'}",
            ]
        )
        try:
            with pytest.raises(CacheError) as raised:
                run_cell(cfg, tmp_path / "run")
        finally:
            for holder in holders:
                holder.close()
        sent = len(server.requests)
    assert_busy(raised.value, path, this_process(), WAIT_S)
    assert 3 <= sent < 20
    rows = (tmp_path / "run" / "judgments.jsonl").read_text(encoding="utf-8").splitlines()
    assert 1 <= len(rows) <= sent
    cache = ResponseCache(path)
    assert len(cache) <= len(rows)  # no answer on file without its row
    cache.close()
