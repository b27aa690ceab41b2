"""A response cache file that cannot be used is refused when it is opened, in one line saying
what is wrong and what to do; an answer in it that cannot be read is asked again; a file or
folder that cannot be written is refused before any call."""

from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mmjudge.engine.response_cache import ResponseCache
from mmjudge.errors import CacheError, ConfigError
from mmjudge.records import JudgeResponse, Usage
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import run_sweep

ANSWER = JudgeResponse(text="2\nThe dress is red, as asked.", usage=Usage(input_tokens=9))


def valid_cache(path: Path, answers: int = 300) -> bytes:
    """A cache of several pages, claims table included, checkpointed into one file."""
    cache = ResponseCache(path)
    for i in range(answers):
        cache.put(f"k{i}", JudgeResponse(text="2\n" + "because " * 40, usage=Usage()))
    cache.claims(30.0)
    cache.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return path.read_bytes()


def random_bytes(path: Path) -> None:
    path.write_bytes(bytes((i * 7919 + 13) % 256 for i in range(8192)))


def truncated(path: Path) -> None:
    data = valid_cache(path)
    path.write_bytes(data[: len(data) // 2])


def flipped_bits(path: Path) -> None:
    data = bytearray(valid_cache(path))
    data[4096] ^= 0xFF  # the page type of the responses table's first page
    path.write_bytes(bytes(data))


def bad_header(path: Path) -> None:
    data = valid_cache(path)
    path.write_bytes(b"NotSQLite form\x00\x00" + data[16:])


def text_file(path: Path) -> None:
    path.write_text("key,response\nk1,2\n", encoding="utf-8")


def folder(path: Path) -> None:
    path.mkdir()


def other_responses_table(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE responses (id INTEGER PRIMARY KEY, body TEXT)")
    db.close()


def other_claims_table(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE claims (key TEXT PRIMARY KEY, who TEXT)")
    db.close()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (random_bytes, "is damaged (file is not a database); move it aside (mv "),
        (truncated, "is damaged (database disk image is malformed); move it aside"),
        (flipped_bits, "is damaged (*** in database main *** Page 2:"),
        (bad_header, "is damaged (file is not a database); move it aside"),
        (text_file, "is damaged (file is not a database); move it aside"),
        (folder, "is a folder; give the path of a file"),
        (other_responses_table, "is not an mmjudge response cache (its table responses has no"),
        (other_claims_table, "is not an mmjudge response cache (its table claims has no"),
    ],
)
def test_a_file_that_cannot_serve_as_the_cache_is_refused_in_one_line(
    tmp_path: Path, damage: Callable[[Path], None], said: str
) -> None:
    path = tmp_path / "responses.sqlite"
    damage(path)
    with pytest.raises(CacheError) as raised:
        ResponseCache(path).claims(30.0)
    line = str(raised.value)
    assert said in line and "\n" not in line
    assert isinstance(raised.value, ConfigError)  # exit 2, before any call


def test_the_advice_keeps_the_judgments_and_names_the_move(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    random_bytes(path)
    with pytest.raises(CacheError) as raised:
        ResponseCache(path)
    assert f"(mv {path} {path}.damaged)" in str(raised.value)
    assert "judgments already in run folders are kept" in str(raised.value)


def test_a_folder_that_cannot_be_made_is_refused_in_one_line() -> None:
    line = r"^paths\.response_cache=/proc/nope/c\.sqlite: its folder cannot be made"
    with pytest.raises(CacheError, match=line):
        ResponseCache(Path("/proc/nope/c.sqlite"))


def test_an_empty_file_starts_a_cache(tmp_path: Path) -> None:
    path = tmp_path / "responses.sqlite"
    path.touch()
    cache = ResponseCache(path)
    cache.put("k", ANSWER)
    assert cache.get("k") == ANSWER
    cache.close()


@pytest.mark.parametrize(
    "payload", ["not json", '{"usage": {}}', '{"text": 2}', "[1, 2]", '"text"']
)
def test_an_answer_that_cannot_be_read_is_asked_again_with_one_warning(
    tmp_path: Path, payload: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("good", ANSWER)
    for key in ("bad1", "bad2"):
        cache._db.execute(
            "INSERT INTO responses (key, response, created) VALUES (?, ?, 0)", (key, payload)
        )
    with caplog.at_level(logging.WARNING):
        assert cache.get("bad1") is None
        assert cache.get_many(["good", "bad1", "bad2"]) == {"good": ANSWER}
        claims = cache.claims(30.0)
        assert claims.claim("bad2").state == "claimed"
        claims.complete("bad2", ANSWER)  # the answer asked again replaces it
    assert cache.get("bad2") == ANSWER
    warnings = [r.getMessage() for r in caplog.records if "cannot be read" in r.getMessage()]
    assert len(warnings) == 1 and "asked again and replaced" in warnings[0]
    cache.close()


@contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` (a file or a folder) made read-only for this process until the block ends:
    immutable where the tests run as root (who may write a file whatever its mode), else
    without write permission; the test is skipped where neither can be done."""
    if os.geteuid() == 0:
        chattr = shutil.which("chattr")
        if chattr is None:
            pytest.skip("running as root without chattr: a file cannot be made read-only")
        made = subprocess.run([chattr, "+i", str(path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"chattr +i is refused here: {made.stderr.strip()}")

        def undo() -> None:
            subprocess.run([chattr, "-i", str(path)], check=True)
    else:
        mode = path.stat().st_mode
        path.chmod(mode & ~0o222)

        def undo() -> None:
            path.chmod(mode)

    try:
        if os.access(path, os.W_OK):
            pytest.skip(f"{path} stays writable here")
        yield
    finally:
        undo()


def test_a_read_only_cache_is_refused_before_any_call_and_its_answers_are_kept(
    tmp_path: Path,
) -> None:
    path = tmp_path / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", ANSWER)
    cache.close()
    with read_only(path):
        cache = ResponseCache(path)  # reading it (a dry run's forecast) is fine
        assert cache.get("k") == ANSWER
        with pytest.raises(CacheError) as raised:
            cache.claims(30.0)  # a run's first write, before any call
        cache.close()
    line = str(raised.value)
    assert line == (
        f"the response cache {path} cannot be written (attempt to write a readonly database); "
        "make the file and its folder writable, or set paths.response_cache to a file you can "
        "write to (a copy of this one keeps its answers), or runner.cache=false"
    )
    assert isinstance(raised.value, ConfigError)
    assert ResponseCache(path).get("k") == ANSWER  # nothing was lost


def test_a_cache_in_a_read_only_folder_is_refused_when_opened(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    path = folder / "responses.sqlite"
    cache = ResponseCache(path)
    cache.put("k", ANSWER)
    cache.close()  # the last connection removes the -wal and -shm files, which need the folder
    with read_only(folder), pytest.raises(CacheError) as raised:
        ResponseCache(path).claims(30.0)
    line = str(raised.value)
    assert line.startswith(f"the response cache {path} cannot be written (")
    assert "make the file and its folder writable" in line and "damaged" not in line
    assert "\n" not in line


KEY = {"OPENAI_API_KEY": "sk-test-loopback"}


@pytest.mark.slow
def test_a_sweep_stops_in_one_line_and_keeps_the_judgments_already_made(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    run = ["model=gpt4o_mini", f"model.base_url={loopback.openai_base_url}", "dataset.limit=4"]
    run += ["report.build=false", f"hydra.run.dir={tmp_path / 'run'}"]
    assert run_sweep(tmp_path, *run, env=KEY).returncode == 0
    rows = (tmp_path / "run" / "judgments.jsonl").read_text()
    random_bytes(tmp_path / "cache.sqlite")
    result = run_sweep(tmp_path, *run, "dataset.limit=6", env=KEY)
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("mmjudge: ")]
    assert lines[-1].startswith(f"mmjudge: the response cache {tmp_path / 'cache.sqlite'} is")
    assert "Traceback" not in result.stderr
    assert (tmp_path / "run" / "judgments.jsonl").read_text() == rows


@pytest.mark.slow
def test_a_cache_path_that_cannot_be_written_is_one_line_and_exit_2(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    result = run_sweep(
        tmp_path,
        "model=gpt4o_mini",
        f"model.base_url={loopback.openai_base_url}",
        "dataset.limit=2",
        "report.build=false",
        "paths.response_cache=/proc/nope/c.sqlite",
        env=KEY,
    )
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if not line.startswith("mmjudge: up to")]
    assert errors == [
        "mmjudge: paths.response_cache=/proc/nope/c.sqlite: its folder cannot be made (No such "
        "file or directory); set paths.response_cache to a file in a folder you can write to"
    ]
    assert not (tmp_path / "results" / "runs").exists() or not any(
        (tmp_path / "results" / "runs").iterdir()
    )


@pytest.mark.slow
def test_a_sweep_over_a_read_only_cache_stops_in_one_line_before_any_call(
    tmp_path: Path, loopback: LoopbackServer
) -> None:
    """A traceback at the first answer before (SQLite opens such a file without a word)."""
    run = ["model=gpt4o_mini", f"model.base_url={loopback.openai_base_url}", "dataset.limit=2"]
    run += ["report.build=false", f"hydra.run.dir={tmp_path / 'run'}"]
    assert run_sweep(tmp_path, *run, env=KEY).returncode == 0
    sent = len(loopback.requests)
    path = tmp_path / "cache.sqlite"
    with read_only(path):
        result = run_sweep(tmp_path, *run, "dataset.limit=4", env=KEY)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("mmjudge: ")]
    assert lines[-1].startswith(f"mmjudge: the response cache {path} cannot be written (")
    assert lines[-1].endswith("or runner.cache=false")
    assert len(loopback.requests) == sent
