"""A race stopped in the middle of a round, through the command, against a judge server on
127.0.0.1: Ctrl-C (SIGINT to the terminal's process group) with the default launcher and with
joblib's, SIGTERM to the race's process alone, and SIGKILL of that process alone. Every process
is gone within seconds, the exit code is the shell's for the signal, nothing is printed as a
traceback, the printed line run through ``bash -c`` as it stands takes the race up, and no
prompt is ever sent twice."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from mmjudge.store.race_file import read_race_file
from tests.api.test_race import Judges, config_folder, race_command, wait_for_rounds
from tests.fixtures.loopback_server import Behaviour, LoopbackServer, RecordedRequest
from tests.helpers import installed, sweep_env

MODELS = "good,twin,coin"
ROUND_ITEMS = "race.round_items=30"


class TimedJudges(Judges):
    """The demo judges, noting when each request arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    def __call__(self, request: RecordedRequest) -> str:
        self.arrivals.append(time.monotonic())
        return super().__call__(request)


def workers_of(parent: int) -> list[int]:
    """The cell processes a race started (``mmjudge.grid.worker --parent PARENT``)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"mmjudge.grid.worker" in arguments and str(parent).encode() in arguments:
            found.append(int(entry.name))
    return found


def processes_in_group(group: int) -> list[int]:
    """Processes whose process group is ``group`` (a joblib launcher's workers are)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def gone_within(seconds: float, pids_of: object) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pids_of():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def start(tmp_path: Path, server: LoopbackServer, *extra: str) -> subprocess.Popen[bytes]:
    command = race_command(tmp_path, server, MODELS, ROUND_ITEMS, "hydra.sweep.dir=race", *extra)
    return subprocess.Popen(
        command,
        cwd=tmp_path,
        env=sweep_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a terminal's Ctrl-C reaches
    )


def into_second_round(tmp_path: Path, judges: Judges, process: subprocess.Popen[bytes]) -> None:
    wait_for_rounds(tmp_path / "race", 1, process)
    deadline = time.monotonic() + 60
    while sum(judges.asked.values()) < 3 * 30 + 10 and time.monotonic() < deadline:
        time.sleep(0.01)  # until the second round's calls are under way


def resume_line(stderr: str) -> str:
    found = re.search(r"Take the race up where it stopped with:\n  (.+)", stderr)
    assert found, stderr
    return found.group(1)


def finish_and_compare(
    tmp_path: Path, judges: Judges, server: LoopbackServer, line: str, sent_again: int = 0
) -> None:
    """Run the printed line through bash as it stands; the race ends as an uninterrupted one
    does, and no prompt was sent twice (at most ``sent_again`` were: calls given up in flight
    at the stop, counted possibly billed, that the resume sends again)."""
    again = subprocess.run(
        ["bash", "-c", line],
        cwd=tmp_path,
        env=sweep_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert again.returncode == 0, again.stderr
    asked_twice = [key for key, n in judges.asked.items() if n > 1]
    assert len(asked_twice) <= sent_again, f"{len(asked_twice)} prompts were sent twice"
    resumed = read_race_file(tmp_path / "race")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    config_folder(fresh, MODELS.split(","))
    whole = subprocess.run(
        race_command(fresh, server, MODELS, ROUND_ITEMS, "hydra.sweep.dir=race"),
        cwd=fresh,
        env=sweep_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert whole.returncode == 0, whole.stderr
    reference = read_race_file(fresh / "race")
    assert resumed is not None and reference is not None
    assert resumed.outcome.name == reference.outcome.name  # type: ignore[union-attr]
    assert [r.active for r in resumed.rounds] == [r.active for r in reference.rounds]


@pytest.mark.slow
def test_ctrl_c_stops_every_process_and_the_printed_line_takes_the_race_up(
    tmp_path: Path,
) -> None:
    config_folder(tmp_path, MODELS.split(","))
    judges = Judges()
    with LoopbackServer(responder=judges, latency_s=0.1) as server:
        process = start(tmp_path, server)
        into_second_round(tmp_path, judges, process)
        assert workers_of(process.pid)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
        stderr = err.decode()
        assert process.returncode == 130, stderr
        assert gone_within(10, lambda: processes_in_group(process.pid) + workers_of(process.pid))
        assert "Traceback" not in stderr
        assert "stopped by SIGINT" in stderr
        finish_and_compare(tmp_path, judges, server, resume_line(stderr))


@pytest.mark.slow
def test_sigterm_to_the_race_alone_stops_its_cells_and_exits_143(tmp_path: Path) -> None:
    config_folder(tmp_path, MODELS.split(","))
    judges = Judges()
    with LoopbackServer(responder=judges, latency_s=0.1) as server:
        process = start(tmp_path, server)
        into_second_round(tmp_path, judges, process)
        cells = workers_of(process.pid)
        assert cells
        process.send_signal(signal.SIGTERM)  # the race's process alone, as a scheduler would
        _, err = process.communicate(timeout=30)
        stderr = err.decode()
        assert process.returncode == 143, stderr
        assert not workers_of(process.pid)  # it waited for its cells
        assert "Traceback" not in stderr and "stopped by SIGTERM" in stderr
        finish_and_compare(tmp_path, judges, server, resume_line(stderr))


@pytest.mark.slow
def test_a_race_killed_outright_leaves_no_cell_sending_requests(tmp_path: Path) -> None:
    config_folder(tmp_path, MODELS.split(","))
    judges = TimedJudges()
    with LoopbackServer(responder=judges, latency_s=0.1) as server:
        process = start(tmp_path, server)
        into_second_round(tmp_path, judges, process)
        cells = workers_of(process.pid)
        assert cells
        process.send_signal(signal.SIGKILL)
        killed = time.monotonic()
        process.communicate(timeout=30)
        assert gone_within(5, lambda: [p for p in cells if Path(f"/proc/{p}").exists()])
        time.sleep(1.0)
        late = [t for t in judges.arrivals if t > killed + 0.5]
        assert not late, f"{len(late)} requests arrived after the race was killed"
        again = subprocess.run(
            race_command(tmp_path, server, MODELS, ROUND_ITEMS, "hydra.sweep.dir=race"),
            cwd=tmp_path,
            env=sweep_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert again.returncode == 0, again.stderr
    asked_twice = [key for key, n in judges.asked.items() if n > 1]
    assert not asked_twice, f"{len(asked_twice)} prompts were sent twice"


@pytest.mark.slow
@pytest.mark.needs_extra
@pytest.mark.skipif(
    not installed("hydra_plugins.hydra_joblib_launcher"),
    reason="hydra-joblib-launcher is not installed (pip install -e '.[joblib]')",
)
def test_ctrl_c_through_joblib_stops_every_process_and_the_line_takes_the_race_up(
    tmp_path: Path,
) -> None:
    config_folder(tmp_path, MODELS.split(","))
    judges = Judges()
    with LoopbackServer(responder=judges, latency_s=0.1) as server:
        process = start(tmp_path, server, "hydra/launcher=joblib")
        into_second_round(tmp_path, judges, process)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
        stderr = err.decode()
        assert process.returncode == 130, stderr
        assert gone_within(10, lambda: processes_in_group(process.pid))
        assert "Traceback" not in stderr
        finish_and_compare(tmp_path, judges, server, resume_line(stderr))


class SlowTwin(Judges):
    """The demo judges, with ``twin`` answering its second round's calls after
    :attr:`delay_s`: the round of ``good`` ends while ``twin``'s calls are in flight."""

    delay_s = 3.0

    def __call__(self, request: RecordedRequest) -> str | Behaviour:  # type: ignore[override]
        text = super().__call__(request)
        model = request.body.get("model") if isinstance(request.body, dict) else None
        twin_asked = sum(n for (name, _), n in self.asked.items() if name == "twin")
        if model == "twin" and twin_asked > 30:
            return Behaviour(text=text, latency_s=self.delay_s)
        return text


@pytest.mark.slow
@pytest.mark.needs_extra
@pytest.mark.skipif(
    not installed("hydra_plugins.hydra_joblib_launcher"),
    reason="hydra-joblib-launcher is not installed (pip install -e '.[joblib]')",
)
def test_ctrl_c_reaching_an_idle_joblib_worker_loses_no_call_of_a_busy_one(
    tmp_path: Path,
) -> None:
    """A Ctrl-C that finds one joblib worker waiting for its next job and another with calls in
    flight: the idle one takes it without exiting (an exit would have the launcher kill the
    busy one, its answers lost and its prompts sent again on resume), the busy one keeps the
    answers that arrive within ``runner.grace_s``."""
    config_folder(tmp_path, MODELS.split(","))
    judges = SlowTwin()
    with LoopbackServer(responder=judges, latency_s=0.05) as server:
        process = start(tmp_path, server, "hydra/launcher=joblib")
        wait_for_rounds(tmp_path / "race", 1, process)
        good = tmp_path / "race" / "demo_fashion.good.text.default" / "judgments.jsonl"

        def twin_asked() -> int:
            return sum(n for (name, _), n in judges.asked.items() if name == "twin")

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            len(good.read_text().splitlines()) < 60 or twin_asked() <= 30
        ):
            time.sleep(0.02)  # until good has ended its second round, twin's calls held
        asked_then = twin_asked()
        assert 30 < asked_then < 60, asked_then  # twin is in the middle of its round
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
        stderr = err.decode()
        assert process.returncode == 130, stderr
        assert gone_within(10, lambda: processes_in_group(process.pid))
        assert "Traceback" not in stderr
        twin = tmp_path / "race" / "demo_fashion.twin.text.default"
        assert not (twin / "possibly_billed.jsonl").exists()
        assert len((twin / "judgments.jsonl").read_text().splitlines()) == twin_asked()
        finish_and_compare(tmp_path, judges, server, resume_line(stderr))


@pytest.mark.slow
@pytest.mark.parametrize("command", [["-m", "mmjudge", "race"], ["-m", "mmjudge.sweep"]])
def test_a_ctrl_c_while_the_command_loads_ends_it_quietly(
    tmp_path: Path, command: list[str]
) -> None:
    """Stopped at several moments of its start (the interpreter, the imports, the config):
    never a traceback, and the shell's code for the signal."""
    import sys

    for delay in (0.25, 0.5, 0.8, 1.2):  # before that, Python itself is starting up
        process = subprocess.Popen(
            [sys.executable, *command, "model=lexical", "runner.progress=false"],
            cwd=tmp_path,
            env=sweep_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        time.sleep(delay)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert "Traceback" not in err.decode(), (delay, err.decode())
        assert process.returncode in (130, -signal.SIGINT, 0), (delay, process.returncode)
