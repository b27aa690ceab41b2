"""mmjudge race through the command line, against an OpenAI-compatible server on 127.0.0.1:
a judge answering at random is dropped within two rounds, the report says when and why, and a
race killed in a round and run again makes no call twice and reaches the same choice."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mmjudge.api.race_result import round_line
from mmjudge.config.race import RaceConfig
from mmjudge.errors import MMJudgeError
from mmjudge.grid.race import RaceCell, RaceResult
from mmjudge.grid.race_start import race_record, taken_up
from mmjudge.report.race_section import race_context
from mmjudge.store.race_file import read_race_file, write_race_file
from mmjudge.studies import race_rule
from tests.fixtures.loopback_server import LoopbackServer, RecordedRequest, user_text
from tests.helpers import DEMO_DIR, installed, isolated_overrides, sweep_env

#: Judges served by the loopback server, as model files of a config folder of one's own.
MODEL_FILE = """\
name: {name}
provider: openai_compatible
model_id: {name}
supports_images: true
temperature: 0.0
max_tokens: 20
api_key_env: null
base_url: http://127.0.0.1:9/v1
price_key: self-hosted-gpu
"""


def demo_items() -> list[dict[str, object]]:
    lines = (DEMO_DIR / "items.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


class Judges:
    """Answers as a careful judge (``good``: the annotators' lower median; ``fair`` moves one
    grade in five by one, ``twin`` one in 25), a coin (``coin``: a grade drawn from the
    prompt's hash) or with no grade at all (``mute``), and counts every request by (model,
    prompt)."""

    def __init__(self) -> None:
        self.grades: list[tuple[str, str, int]] = []
        for item in demo_items():
            fields = item["fields"]
            assert isinstance(fields, dict) and isinstance(item["labels"], dict)
            grades = sorted(item["labels"].values())
            self.grades.append(
                (str(item["query"]), str(fields["name"]), grades[(len(grades) - 1) // 2])
            )
        self.asked: Counter[tuple[str, str]] = Counter()

    def __call__(self, request: RecordedRequest) -> str:
        text = user_text(request.body)
        model = str(request.body.get("model")) if isinstance(request.body, dict) else ""
        self.asked[(model, text)] += 1
        digest = int(hashlib.sha256(text.encode()).hexdigest(), 16)
        if model == "coin":
            return f"{digest % 3}\nA coin."
        if model == "mute":
            return "I would rather not say."
        grade = next(g for q, n, g in self.grades if q in text and n in text)
        if (model == "fair" and digest % 5 == 0) or (model == "twin" and digest % 25 == 0):
            grade = 1 if grade != 1 else 2
        return f"{grade}\nAs a careful judge."


def config_folder(root: Path, names: list[str]) -> Path:
    folder = root / "conf"
    (folder / "model").mkdir(parents=True)
    for name in names:
        (folder / "model" / f"{name}.yaml").write_text(MODEL_FILE.format(name=name))
    return folder


def race_command(root: Path, server: LoopbackServer, models: str, *extra: str) -> list[str]:
    given = {item.split("=", 1)[0] for item in extra}
    isolation = [f"{k}={v}" for k, v in isolated_overrides(root).items() if k not in given]
    return [
        sys.executable,
        "-m",
        "mmjudge",
        "race",
        "-cd",
        str(root / "conf"),
        f"model={models}",
        f"model.base_url={server.openai_base_url}",
        "runner.progress=false",
        *extra,
        *isolation,
    ]


@pytest.mark.slow
def test_a_judge_answering_at_random_is_dropped_within_two_rounds(tmp_path: Path) -> None:
    config_folder(tmp_path, ["good", "fair", "coin"])
    judges = Judges()
    with LoopbackServer(responder=judges) as server:
        command = race_command(
            tmp_path, server, "good,fair,coin", "race.round_items=40", "hydra.sweep.dir=race"
        )
        done = subprocess.run(
            command, cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=300
        )
        # the same race into another folder: every answer comes from the response cache
        again = subprocess.run(
            [*(c for c in command if c != "hydra.sweep.dir=race"), "hydra.sweep.dir=again"],
            cwd=tmp_path,
            env=sweep_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    race = read_race_file(tmp_path / "race")
    assert race is not None
    names = list(race.names)
    coin = next(i for i, name in enumerate(names) if "coin" in name)
    dropped = next(r.round for r in race.rounds if coin not in r.active)
    assert dropped <= 2
    assert race.outcome is not None and "coin" not in race.outcome.name
    line = next(x for x in done.stderr.splitlines() if x.startswith(f"race round {dropped}:"))
    assert "coin" in line and "stops" in line
    page = (tmp_path / "reports" / "race" / "index.html").read_text(encoding="utf-8")
    assert 'id="race"' in page
    assert "coin × text stops: more than δ below it" in page
    # the cells' table and the spend table say what the race did with each cell
    stopped = f"stopped after round {dropped}"
    assert f'<td class="l">{stopped}</td><td>{40 * dropped}</td>' in page
    assert f"complete · race: {stopped}" in page and "complete · race: chosen" in page
    chosen = race.outcome.name.split(" × ", 1)[1]
    assert f'The race chose</dt><dd><a href="#race">{chosen} (κ ' in page  # on the card
    # judged only the rounds it was in: 40 items per round it took part in
    rows = (tmp_path / "race" / race.cells[coin].run_dir / "judgments.jsonl").read_text()
    assert len(rows.splitlines()) == 40 * dropped
    assert again.returncode == 0, again.stderr  # the race again, its answers free
    cached = read_race_file(tmp_path / "again")
    assert cached is not None and cached.outcome.name == race.outcome.name
    assert race.paid_usd > 0 and cached.paid_usd == 0.0


@pytest.mark.slow
def test_a_judge_whose_run_fails_leaves_the_race_after_one_round(tmp_path: Path) -> None:
    config_folder(tmp_path, ["good", "fair", "mute"])
    with LoopbackServer(responder=Judges()) as server:
        command = race_command(
            tmp_path, server, "good,fair,mute", "race.round_items=20", "hydra.sweep.dir=race"
        )
        done = subprocess.run(
            command, cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, done.stderr
    race = read_race_file(tmp_path / "race")
    assert race is not None and "good" in race.outcome.name
    mute = next(i for i, cell in enumerate(race.cells) if "mute" in cell.name)
    assert race.outcome.prefixes[mute] == 20  # paid for one round only
    line = next(x for x in done.stderr.splitlines() if x.startswith("race round 1:"))
    assert "mute × text stops (cannot judge: its run ended failed: 20 of 20 answers" in line
    page = (tmp_path / "reports" / "race" / "index.html").read_text(encoding="utf-8")
    assert '<td class="l">cannot judge after round 1</td><td>20</td>' in page


@pytest.mark.slow
def test_a_race_whose_cells_all_reach_their_cap_stops_saying_how_each_ended(
    tmp_path: Path,
) -> None:
    config_folder(tmp_path, ["good", "twin"])
    with LoopbackServer(responder=Judges()) as server:
        command = race_command(
            tmp_path,
            server,
            "good,twin",
            "race.round_items=20",
            "hydra.sweep.dir=race",
            "runner.max_cost_usd=0.0025",  # a round of 20 fits, the second does not
        )
        done = subprocess.run(
            command, cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 2, done.stderr
    (error,) = [x for x in done.stderr.splitlines() if x.startswith("mmjudge race: ")]
    assert "no cell of the race can judge (demo_fashion × good × text: stopped by budget" in error
    assert error.count("runner.max_cost_usd=0.0025") == 2
    race = read_race_file(tmp_path / "race")
    assert race is not None and len(race.rounds) == 1  # taken up from here once raised


def wait_for_rounds(folder: Path, rounds: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        race = read_race_file(folder) if (folder / "race.json").is_file() else None
        if race is not None and len(race.rounds) >= rounds:
            return
        time.sleep(0.05)
    raise AssertionError(f"the race did not reach round {rounds}")


@pytest.mark.slow
def test_a_race_killed_in_a_round_and_run_again_pays_nothing_twice(tmp_path: Path) -> None:
    config_folder(tmp_path, ["good", "twin", "coin"])
    judges = Judges()
    with LoopbackServer(responder=judges, latency_s=0.1) as server:
        command = race_command(
            tmp_path, server, "good,twin,coin", "race.round_items=30", "hydra.sweep.dir=race"
        )
        process = subprocess.Popen(
            command,
            cwd=tmp_path,
            env=sweep_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, as a terminal's Ctrl-C reaches
        )
        wait_for_rounds(tmp_path / "race", 1, process)
        deadline = time.monotonic() + 60
        while sum(judges.asked.values()) < 3 * 30 + 10 and time.monotonic() < deadline:
            time.sleep(0.01)  # until the second round's calls are under way
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 130, err.decode()
        assert b"Take the race up where it stopped" in err
        stopped_at = len(read_race_file(tmp_path / "race").rounds)  # type: ignore[union-attr]
        again = subprocess.run(
            command, cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=300
        )
        assert again.returncode == 0, again.stderr
        asked_twice = [key for key, n in judges.asked.items() if n > 1]
        assert not asked_twice, f"{len(asked_twice)} prompts were sent twice"
        resumed = read_race_file(tmp_path / "race")
        # the same race from scratch, in another folder with a cache of its own
        fresh = tmp_path / "fresh"
        fresh.mkdir()
        config_folder(fresh, ["good", "twin", "coin"])
        whole = subprocess.run(
            race_command(
                fresh, server, "good,twin,coin", "race.round_items=30", "hydra.sweep.dir=race"
            ),
            cwd=fresh,
            env=sweep_env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert whole.returncode == 0, whole.stderr
    reference = read_race_file(fresh / "race")
    assert resumed is not None and reference is not None
    assert len(resumed.rounds) > stopped_at
    assert resumed.outcome.name == reference.outcome.name  # type: ignore[union-attr]
    assert [r.active for r in resumed.rounds] == [r.active for r in reference.rounds]


def result(folder: Path, overrides: tuple[str, ...] = ("model=a,b",)) -> RaceResult:
    cells = [
        RaceCell(0, "d × a × text", overrides, folder / "a", 0.001, 1.0),
        RaceCell(1, "d × b × text", overrides, folder / "b", 0.002, 2.0),
    ]
    return RaceResult(folder, cells, 100, RaceConfig(), 0)


def test_a_folder_holding_another_race_is_refused(tmp_path: Path) -> None:
    write_race_file(tmp_path, race_record(result(tmp_path)))
    assert taken_up(tmp_path, result(tmp_path, ("model=a,b", "hydra.sweep.dir=x"))) == []
    with pytest.raises(MMJudgeError, match="holds another race"):
        taken_up(tmp_path, result(tmp_path, ("model=a,c",)))
    other = result(tmp_path)
    other.settings = RaceConfig(delta=0.05)
    with pytest.raises(MMJudgeError, match="holds another race"):
        taken_up(tmp_path, other)
    # where people's grades come from, and their price, do not make another race
    asked = result(tmp_path, ("model=a,b", "race.labels=ask"))
    asked.settings = RaceConfig(labels="ask")
    write_race_file(tmp_path, race_record(asked))
    regraded = result(tmp_path, ("model=a,b", "race.labels=ask", "race.label_oracle=g.qrels"))
    regraded.settings = RaceConfig(labels="ask", label_oracle="g.qrels", label_usd=0.5)
    assert taken_up(tmp_path, regraded) == []
    regraded.settings = RaceConfig(labels="uniform", label_usd=0.5)
    with pytest.raises(MMJudgeError, match="holds another race"):
        taken_up(tmp_path, regraded)


def test_the_race_file_is_valid_json_with_no_number_that_is_not_finite(tmp_path: Path) -> None:
    record = dataclasses.replace(race_record(result(tmp_path)), paid_usd=float("nan"))
    write_race_file(tmp_path, record)
    text = (tmp_path / "race.json").read_text()
    assert "NaN" not in text and json.loads(text)["paid_usd"] is None
    assert read_race_file(tmp_path) == dataclasses.replace(record, paid_usd=0.0)


def test_a_race_file_of_the_first_layout_reads_as_this_one(tmp_path: Path) -> None:
    """``race.json`` as the last release wrote it (the item count as ``population``, the
    rounds' dollars as ``usd``, money as ``spent_usd``): read into the same record."""
    first = {
        "schema_version": 1,
        "settings": {"alpha": 0.05, "delta": 0.02, "round_items": 40, "rho": 1.0, "max_usd": None},
        "seed": 0,
        "population": 240,
        "cells": [
            {
                "index": 0,
                "name": "d × a × text",
                "overrides": ["model=a"],
                "run_dir": "d.a.text.default",
                "usd_per_judgment": 0.001,
                "forecast_usd": 0.24,
            }
        ],
        "rounds": [
            {
                "schema_version": 1,
                "round": 1,
                "prefix": 40,
                "alpha_round": 0.01,
                "alpha_total": 0.01,
                "z": None,
                "kappas": [0.5],
                "candidate": 0,
                "chosen": 0,
                "ending": "one cell",
                "active": [],
                "changes": [],
                "settled": [],
                "judgments": 40,
                "usd": 0.04,
            }
        ],
        "spent_usd": 0.03,
        "full_grid_usd": 0.24,
        "outcome": None,
    }
    (tmp_path / "race.json").write_text(json.dumps(first))
    race = read_race_file(tmp_path)
    assert race is not None and race.n_items == 240 and race.paid_usd == 0.03
    (decision,) = race.rounds
    assert decision.list_usd == 0.04 and decision.target == "items" and decision.z != decision.z
    assert race.settings.target == "population"  # the default, as a race resumed today takes
    assert race.cells[0].run_dir == "d.a.text.default"


@pytest.mark.slow
@pytest.mark.needs_extra
@pytest.mark.skipif(
    not installed("hydra_plugins.hydra_joblib_launcher"),
    reason="hydra-joblib-launcher is not installed (pip install -e '.[joblib]')",
)
def test_a_race_through_a_hydra_launcher_decides_as_the_library_does(tmp_path: Path) -> None:
    config_folder(tmp_path, ["good", "twin", "coin"])
    judges = Judges()
    with LoopbackServer(responder=judges) as server:
        runs = {}
        for name, extra in (("own", ()), ("joblib", ("hydra/launcher=joblib",))):
            done = subprocess.run(
                race_command(
                    tmp_path,
                    server,
                    "good,twin,coin",
                    "race.round_items=60",
                    f"hydra.sweep.dir={name}",
                    f"paths.response_cache={tmp_path / name}.sqlite",
                    *extra,
                ),
                cwd=tmp_path,
                env=sweep_env(),
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr
            runs[name] = read_race_file(tmp_path / name)
    own, launched = runs["own"], runs["joblib"]
    assert own is not None and launched is not None
    assert [r.active for r in launched.rounds] == [r.active for r in own.rounds]
    assert launched.outcome.name == own.outcome.name  # type: ignore[union-attr]
    saved = (tmp_path / "joblib" / "multirun.yaml").read_text()
    assert "JoblibLauncher" in saved


def test_a_pair_with_no_item_graded_by_both_reads_as_missing_not_nan_in_every_view(
    tmp_path: Path,
) -> None:
    reference = np.tile([0.0, 1.0, 2.0], 20)
    first_half, second_half = reference.copy(), reference.copy()
    first_half[30:], second_half[:30] = np.nan, np.nan  # each failed where the other answered
    inputs = race_rule.race_inputs(reference, [first_half, second_half], [1e-3, 2e-3], (0, 1, 2))
    decision = race_rule.decide_round(inputs, [reference.size] * 2, RaceConfig(), 1)
    stop = decision.changes[0]
    assert stop.action == "stopped" and stop.evidence.n_items == 0
    race = result(tmp_path)
    race.rounds.append(decision)
    line = round_line(race, decision)
    assert "nan" not in line and "κ diff – (no item graded by both) vs d × a × text" in line
    write_race_file(tmp_path, race_record(race))
    assert race.fates == {"d × a × text": "chosen", "d × b × text": "stopped after round 1"}
    (section,) = race_context([tmp_path])
    (event,) = section.rows[0].events[:1]
    assert "nan" not in event and "with a × text – (no item graded by both)" in event


class CallJudges(Judges):
    """:class:`Judges` that also answers a call about several results (``R1``, ``R2``…):
    each result graded as alone, the grades as the JSON object the call's schema asks for."""

    def __call__(self, request: RecordedRequest) -> str:
        text = user_text(request.body)
        parts = re.split(r"\n\n(R\d+)\n", text)
        if len(parts) < 3:
            return super().__call__(request)
        model = str(request.body.get("model")) if isinstance(request.body, dict) else ""
        self.asked[(model, text)] += 1
        head, blocks = parts[0], parts[1:]
        answer = {}
        for marker, block in zip(blocks[::2], blocks[1::2], strict=True):
            grade = next(g for q, n, g in self.grades if q in head and n in block)
            answer[marker] = grade
        return json.dumps(answer)


@pytest.mark.slow
def test_a_race_over_results_per_call_decides_between_its_cells(tmp_path: Path) -> None:
    """``prompt.passages_per_call`` as a race axis (issue: several results per call): the K=5
    cell sends one call per five results of a query, answers through the structured output,
    and races beside the K=1 cell on the same items, each result its own row."""
    config_folder(tmp_path, ["good", "coin"])
    judges = CallJudges()
    with LoopbackServer(responder=judges) as server:
        command = race_command(
            tmp_path,
            server,
            "good,coin",
            "prompt.passages_per_call=1,5",
            "race.round_items=40",
            "hydra.sweep.dir=race",
        )
        done = subprocess.run(
            command, cwd=tmp_path, env=sweep_env(), capture_output=True, text=True, timeout=300
        )
        sent = list(server.requests)
    assert done.returncode == 0, done.stderr
    race = read_race_file(tmp_path / "race")
    assert race is not None and race.outcome is not None
    assert "coin" not in race.outcome.name
    names = list(race.names)
    assert any("default-k5" in n for n in names) and len(names) == 4
    k5 = next(c for c in race.cells if "good" in c.name and "default-k5" in c.name)
    rows = [
        json.loads(line)
        for line in (tmp_path / "race" / k5.run_dir / "judgments.jsonl").read_text().splitlines()
    ]
    calls = {row["call_id"] for row in rows if row.get("call_id")}
    assert rows and all(row["label"] is not None for row in rows)
    # a query's results go five to a call: far fewer calls than results
    assert len(calls) < len(rows) / 3
    structured = [r for r in sent if isinstance(r.body, dict) and "response_format" in r.body]
    assert structured and all(r.body["model"] in ("good", "coin") for r in structured)
