"""Canary checks against a loopback judge (the OpenAI wire format) whose answers, and the
model it says answered, can be made to change between checks."""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from mmjudge.cli.monitor import EXIT_MOVED, main
from mmjudge.store.bounds import Bounds
from mmjudge.store.monitor_history import CheckEntry, append_entry, read_history
from tests.fixtures.loopback_server import LoopbackServer, RecordedRequest, user_text

ITEMS = 40


class Judge:
    """Grades each prompt by a hash of its text; once ``moving`` is set, the prompts whose
    hash falls in that share get the next grade."""

    def __init__(self) -> None:
        self.moving = 0.0
        self.moved: set[str] = set()

    def __call__(self, request: RecordedRequest) -> str:
        text = user_text(request.body)
        digest = hashlib.sha256(text.encode()).digest()
        grade = digest[0] % 3
        if digest[1] / 256 < self.moving:
            self.moved.add(text)
            grade = (grade + 1) % 3
        return f"{grade}\nA reason."


def _entry(name: str, **fields: object) -> CheckEntry:
    """A check's entry as the history keeps it, named ``name``."""
    values: dict[str, object] = {
        "check": name,
        "series": "demo.m.text.default",
        "time": "2026-12-01T00:00:00+00:00",
        "run_dir": f"checks/{name}",
        "status": "complete",
        "dataset": "demo",
        "model": "m",
        "model_id": "m-1",
        "modality": "text",
        "prompt_id": "default",
        "n_items": 3,
        "items_sha256": "0" * 64,
        "models": {"m-1": 3},
        "fingerprints": {},
        "kappa_people": Bounds(0.5, 0.2, 0.8),
        "label_distribution": {"0": 1, "2": 2},
        "spent_usd": 0.01,
        **fields,
    }
    return CheckEntry(**values)  # type: ignore[arg-type]


def _check(tmp_path: Path, server: LoopbackServer, *extra: str) -> int:
    return main(
        [
            "check",
            "model=gpt4o_mini",
            "modality=text",
            f"model.base_url={server.openai_base_url}",
            f"dataset.limit={ITEMS}",
            "runner.progress=false",
            f"paths.results={tmp_path / 'results'}",
            f"paths.reports={tmp_path / 'reports'}",
            f"paths.response_cache={tmp_path / 'cache.sqlite'}",
            f"paths.prepared_cache={tmp_path / 'prepared'}",
            *extra,
        ]
    )


def _history(tmp_path: Path) -> list[CheckEntry]:
    return list(read_history(tmp_path / "results" / "monitor" / "history.jsonl").checks)


@pytest.mark.slow
def test_an_unchanged_judge_passes_and_a_moved_one_is_flagged_with_its_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    judge = Judge()
    with LoopbackServer(responder=judge) as server:
        assert _check(tmp_path, server) == 0  # the first check is the baseline
        sent = server.request_count
        assert _check(tmp_path, server) == 0
        assert server.request_count == 2 * sent  # the response cache was bypassed
        first, second = _history(tmp_path)
        assert first.comparison is None and second.comparison is not None
        assert second.comparison.baseline == first.check
        drift = second.comparison.drift
        assert drift.changed == 0 and drift.change_share.estimate == 0
        assert drift.kappa.estimate == pytest.approx(1.0)
        assert second.models == {"gpt-4o-mini-2024-07-18": second.n_items}
        assert second.fingerprints == {"fp_loopback": second.n_items}
        assert second.spent_usd > 0 and second.moved == ()
        capsys.readouterr()
        judge.moving = 0.3
        assert _check(tmp_path, server) == EXIT_MOVED
    third = _history(tmp_path)[-1].comparison
    assert third is not None
    share = len(judge.moved) / third.drift.n_paired
    change = third.drift.change_share
    assert third.drift.changed == len(judge.moved) > 0
    assert change.estimate == pytest.approx(share)
    assert change.low is not None and change.high is not None
    assert change.low <= share <= change.high and change.low > 0.05
    assert third.baseline == first.check
    err = [line for line in capsys.readouterr().err.splitlines() if "monitor" in line]
    assert len(err) == 1 and err[0].startswith("mmjudge monitor: moved: ")
    assert f"{100 * share:.1f}% of labels changed" in err[0]


@pytest.mark.slow
def test_a_new_model_identifier_is_flagged_and_shown_on_the_timeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    with LoopbackServer(responder=Judge()) as server:
        assert _check(tmp_path, server) == 0
        server.served_model = "gpt-4o-mini-2099-01-01"
        server.fingerprint = "fp_new"
        capsys.readouterr()
        assert _check(tmp_path, server) == EXIT_MOVED
        (line,) = [x for x in capsys.readouterr().err.splitlines() if "monitor" in x]
        assert line == (
            "mmjudge monitor: moved: the provider answered as a new model: gpt-4o-mini-2099-01-01"
        )
        assert _check(tmp_path, server, "allow_new_model=true") == 0
    latest = _history(tmp_path)[-1].comparison
    assert latest is not None
    assert latest.new_models == ("gpt-4o-mini-2099-01-01",)
    assert latest.new_fingerprints == ("fp_new",)
    assert (
        main(["report", f"paths.results={tmp_path / 'results'}", f"out={tmp_path / 'page'}"]) == 0
    )
    page = (tmp_path / "page" / "index.html").read_text(encoding="utf-8")
    assert '<td class="l moved">gpt-4o-mini-2099-01-01</td>' in page
    assert "vegaEmbed" in page and "fp_new" in page


@pytest.mark.slow
def test_a_check_killed_midway_leaves_the_history_readable_and_the_next_one_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    history = tmp_path / "results" / "monitor" / "history.jsonl"
    with LoopbackServer(responder=Judge()) as server:
        assert _check(tmp_path, server) == 0
        whole = history.read_bytes()
        with history.open("ab") as handle:  # a writer killed halfway through its entry
            handle.write(whole[: len(whole) // 2])
        assert len(read_history(history).checks) == 1
        assert _check(tmp_path, server) == 0
    entries = _history(tmp_path)
    compared = entries[1].comparison
    assert len(entries) == 2 and compared is not None and compared.baseline == entries[0].check
    assert entries[1].status == "complete" and compared.drift.changed == 0


def test_two_writers_never_interleave_their_entries(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    padding = "x" * 5000  # entries longer than a pipe's atomic write

    def write(writer: int) -> None:
        for number in range(100):
            append_entry(path, _entry(f"{writer}-{number}", moved=(padding,)))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = read_history(path).checks
    assert len(entries) == 200 and all(e.moved == (padding,) for e in entries)
    for writer in range(2):
        numbers = [e.check.split("-")[1] for e in entries if e.check.startswith(f"{writer}-")]
        assert numbers == [str(n) for n in range(100)]
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_settings_it_cannot_use_fail_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "max_change=lots"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "max_change=lots" in err
    assert main(["nothing"]) == 2


def test_help_describes_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "mmjudge monitor check" in capsys.readouterr().out


@pytest.mark.slow
def test_a_check_killed_by_sigkill_leaves_the_history_whole_and_the_next_check_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal
    import subprocess
    import sys
    import time

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0000")
    history = tmp_path / "results" / "monitor" / "history.jsonl"
    with LoopbackServer(responder=Judge()) as server:
        assert _check(tmp_path, server) == 0
        server.latency_s = 0.5  # slow answers: the process is killed while they are awaited
        command = [
            sys.executable,
            "-m",
            "mmjudge",
            "monitor",
            "check",
            "model=gpt4o_mini",
            "modality=text",
            f"model.base_url={server.openai_base_url}",
            f"dataset.limit={ITEMS}",
            "runner.concurrency=2",
            "runner.progress=false",
            f"paths.results={tmp_path / 'results'}",
            f"paths.prepared_cache={tmp_path / 'prepared'}",
        ]
        process = subprocess.Popen(command, cwd=tmp_path, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while server.request_count < 44 and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        assert len(read_history(history).checks) == 1  # the killed check appended nothing
        server.latency_s = 0.0
        assert _check(tmp_path, server) == 0
    entries = _history(tmp_path)
    assert len(entries) == 2 and len(history.read_text().splitlines()) == 2
    assert entries[1].status == "complete" and entries[1].n_items == ITEMS
    compared = entries[1].comparison
    assert compared is not None and compared.baseline == entries[0].check
    assert compared.drift.n_paired == ITEMS


def test_an_unchanged_check_has_an_exact_interval_not_a_zero_width_one() -> None:
    from scipy.stats import binomtest

    from mmjudge.studies.drift import drift_summary

    grades = [float(i % 4) for i in range(240)]
    queries = [f"q{i // 8}" for i in range(240)]
    drift = drift_summary(grades, grades, queries, grades=[0, 1, 2, 3], n_boot=200)
    reference = binomtest(0, 240).proportion_ci(confidence_level=0.95, method="exact")
    change = drift.change_share
    assert change.estimate == 0 and change.low == 0 and change.high is not None
    assert abs(change.high - reference.high) < 1e-9 and change.high > 0.015
    every = drift_summary(grades, [g + 1 for g in grades], queries, grades=[0, 1, 2, 3, 4])
    assert every.change_share.estimate == 1
    assert every.change_share.low is not None and every.change_share.low < 0.99


def test_kappa_between_unchanged_checks_has_an_honest_interval_from_the_exact_share() -> None:
    from mmjudge import metrics
    from mmjudge.store.monitor_history import Drift
    from mmjudge.studies.drift import drift_summary

    def drift(n: int, shift: int = 0) -> Drift:
        grades = [float(i % 4) for i in range(n)]
        queries = [f"q{i // 8}" for i in range(n)]
        after = [g + shift for g in grades]
        return drift_summary(grades, after, queries, grades=[0, 1, 2, 3, 4], n_boot=200)

    many, few = drift(240).kappa, drift(40).kappa
    assert many.low is not None and few.low is not None
    assert many.estimate == 1 and many.high == 1 and many.low < 1  # not zero-width
    # p_e = 1/4 with four grades used evenly: κ's low end is the exact share's high end mapped
    share_high = drift(240).change_share.high
    assert share_high is not None
    assert many.low == pytest.approx((1 - share_high - 0.25) / 0.75, abs=1e-12)
    assert round(many.low, 3) == 0.980  # the figure docs/monitoring.md quotes
    assert few.low < many.low < 1  # fewer items, a wider interval
    every = drift(240, shift=1)
    kappa = every.kappa
    expected = metrics.cohen_kappa(
        [float(i % 4) for i in range(240)],
        [float(i % 4) + 1 for i in range(240)],
        labels=[0, 1, 2, 3, 4],
    )
    assert kappa.estimate == pytest.approx(expected) and kappa.low == pytest.approx(expected)
    assert kappa.high is not None and kappa.high > kappa.estimate
    one_grade = drift_summary([1.0] * 30, [1.0] * 30, ["q"] * 30, grades=[0, 1, 2])
    assert one_grade.kappa == Bounds()
