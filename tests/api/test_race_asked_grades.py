"""A race that asks for people's grades as it goes (``race.labels=ask``) against judges the
loopback server answers: stopping for a labelling file, taking up half-filled and filled
files, a file of grades as the oracle, and nothing judged or paid for twice across the stops."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mmjudge.store.asked_grades import read_asked_grades
from mmjudge.store.labelling_file import labelling_paths
from mmjudge.store.race_file import read_race_file
from mmjudge.store.status import EXIT_GRADES_NEEDED
from tests.api.test_race import Judges, config_folder, demo_items, race_command
from tests.fixtures.loopback_server import LoopbackServer
from tests.helpers import sweep_env


def people_grades() -> dict[tuple[str, str], int]:
    """The demo's consensus grade of each item (the annotators' lower median)."""
    found = {}
    for item in demo_items():
        labels = item["labels"]
        assert isinstance(labels, dict)
        grades = sorted(labels.values())
        found[(str(item["query_id"]), str(item["result_id"]))] = grades[(len(grades) - 1) // 2]
    return found


def shop_dataset(root: Path, *, with_grades: bool) -> Path:
    """A copy of the demo catalogue as dataset ``shop`` in ``root/conf`` (loaded with
    ``allow_unlabelled``), its people's grades left out unless ``with_grades``, and the
    people's grades written as a qrels file for the race's oracle: that file's path."""
    import shutil

    from tests.helpers import DEMO_DIR

    data = root / "shop"
    shutil.copytree(DEMO_DIR / "images", data / "images")
    items = [dict(item) for item in demo_items()]
    if not with_grades:
        for item in items:
            item.pop("labels")
    (data / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (root / "conf" / "dataset").mkdir(parents=True)
    (root / "conf" / "dataset" / "shop.yaml").write_text(
        f"name: shop\nloader: jsonl\npath: {data}\nitems: items.jsonl\nallow_unlabelled: true\n"
        "scale:\n  grades: [0, 1, 2]\n  relevant_from: 1\n"
    )
    qrels = root / "people.qrels"
    qrels.write_text("".join(f"{q} 0 {r} {g}\n" for (q, r), g in people_grades().items()))
    return qrels


def fill_csv(path: Path, grades: dict[tuple[str, str], int], share: float) -> int:
    """Fill the first ``share`` of the blank grades of a labelling spreadsheet, as a person
    would in a spreadsheet program; how many were filled."""
    with path.open(encoding="utf-8-sig", newline="") as handle:  # as written: marked UTF-8
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    blank = [row for row in rows if not row["grade"]]
    todo = blank[: int(len(blank) * share)]
    for row in todo:
        row["grade"] = str(grades[(row["query_id"], row["result_id"])])
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)
    return len(todo)


def fill_jsonl(path: Path, grades: dict[tuple[str, str], int]) -> None:
    """Fill every blank grade of a labelling JSON-lines file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["grade"] is None:
            row["grade"] = grades[(row["query_id"], row["result_id"])]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, env=sweep_env(), capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_a_race_asking_for_grades_stops_for_them_and_goes_on_with_what_is_filled(
    tmp_path: Path,
) -> None:
    config_folder(tmp_path, ["good", "fair", "coin"])
    judges = Judges()
    grades = people_grades()
    folder = tmp_path / "race"
    with LoopbackServer(responder=judges) as server:
        command = race_command(
            tmp_path,
            server,
            "good,fair,coin",
            "race.round_items=40",
            "race.labels=ask",
            "race.label_usd=0.5",
            "hydra.sweep.dir=race",
        )
        first = run(command, tmp_path)
        assert first.returncode == EXIT_GRADES_NEEDED, first.stderr
        paths = labelling_paths(folder, 1)
        assert paths.csv.is_file() and paths.jsonl.is_file()
        asked = len(paths.jsonl.read_text(encoding="utf-8").splitlines())
        assert 0 < asked < 40
        assert f"round 1 needs people's grades for {asked} of the {asked} items" in first.stderr
        assert "race/labelling/round-1.csv" in first.stderr and "hydra.sweep.dir=" in first.stderr
        race = read_race_file(folder)
        assert race is not None and race.rounds == ()  # nothing decided without the grades
        calls_after_round_one = sum(judges.asked.values())
        assert calls_after_round_one == 3 * 40

        # half filled: the race keeps those grades and asks again for the rest
        filled = fill_csv(paths.csv, grades, 0.5)
        second = run(command, tmp_path)
        assert second.returncode == EXIT_GRADES_NEEDED, second.stderr
        assert f"for {asked - filled} of the {asked} items" in second.stderr
        assert f"({filled} given so far)" in second.stderr
        kept = read_asked_grades(folder)
        assert sum(g.grade is not None for g in kept) == filled and len(kept) == asked
        rewritten = list(csv.DictReader(paths.csv.open(encoding="utf-8-sig")))
        assert sum(bool(row["grade"]) for row in rewritten) == filled
        assert sum(judges.asked.values()) == calls_after_round_one  # nothing judged again

        # filled completely (the other file this time): the race decides and goes on, each
        # round stopping for its own grades, until it ends
        fill_jsonl(paths.jsonl, grades)
        for _ in range(10):
            done = run(command, tmp_path)
            if done.returncode != EXIT_GRADES_NEEDED:
                break
            race = read_race_file(folder)
            assert race is not None
            fill_jsonl(labelling_paths(folder, len(race.rounds) + 1).jsonl, grades)
        assert done.returncode == 0, done.stderr
        asked_twice = [key for key, n in judges.asked.items() if n > 1]
        assert not asked_twice, f"{len(asked_twice)} prompts were sent twice"

        race = read_race_file(folder)
        assert race is not None and race.outcome is not None
        labels = race.outcome.human_labels
        kept = read_asked_grades(folder)
        assert labels is not None and labels.design == "ask"
        assert len(labels.per_round) == len(race.rounds)
        assert labels.total == len(kept) == sum(labels.per_round)
        assert all(g.grade == grades[(g.query_id, g.result_id)] for g in kept)
        rows = [
            len(labelling_paths(folder, r).jsonl.read_text(encoding="utf-8").splitlines())
            for r in range(1, len(race.rounds) + 1)
        ]
        assert tuple(rows) == labels.per_round
        assert f"people's grades: {labels.total} asked" in done.stderr
        assert f"(${labels.total * 0.5:,.2f} at race.label_usd" in done.stderr
        page = (tmp_path / "reports" / "race" / "index.html").read_text(encoding="utf-8")
        assert f"people&#39;s grades: {labels.total} asked" in page
        assert "κ from the asked grades, weighted 1/π [95% interval]" in page
        assert "each judge's κ from them is in" not in page  # the demo's own grades score
        assert page.count(f"({labels.total} graded)") + page.count("too few grades") >= 1

        # the same race answered by a file of the same grades decides the same way (and the
        # judges' answers come from the response cache: nothing is paid again)
        qrels = tmp_path / "grades.qrels"
        qrels.write_text("".join(f"{q} 0 {r} {g}\n" for (q, r), g in grades.items()))
        oracle_command = [
            *(c for c in command if c != "hydra.sweep.dir=race"),
            f"race.label_oracle={qrels}",
            "hydra.sweep.dir=oracle",
        ]
        answered = run(oracle_command, tmp_path)
        assert answered.returncode == 0, answered.stderr
        by_file = read_race_file(tmp_path / "oracle")
        assert by_file is not None and by_file.outcome is not None
        assert by_file.outcome.name == race.outcome.name
        assert by_file.outcome.human_labels == labels
        assert [r.active for r in by_file.rounds] == [r.active for r in race.rounds]
        assert by_file.paid_usd == 0.0 and race.paid_usd > 0
        assert not (tmp_path / "oracle" / "labelling").exists()

        # a file that lacks a grade the race asks for is one line naming it
        (tmp_path / "few.qrels").write_text("q01 0 p081 0\n")
        short = run(
            [
                *(c for c in oracle_command if not c.startswith(("race.label_oracle", "hydra."))),
                f"race.label_oracle={tmp_path / 'few.qrels'}",
                "hydra.sweep.dir=short",
            ],
            tmp_path,
        )
    assert short.returncode == 2, short.stderr
    (line,) = [x for x in short.stderr.splitlines() if x.startswith("mmjudge race:")]
    assert "few.qrels: no grade for query" in line and "which the race asks for" in line


@pytest.mark.slow
def test_a_race_over_a_dataset_without_grades_is_scored_on_the_grades_it_asked_for(
    tmp_path: Path,
) -> None:
    """The case the asked grades exist for: a dataset no person has graded. The race draws
    from every item, a file of grades answers it, and the report and ``mmjudge frontier``
    score each judge on the grades it asked for, weighted 1/π."""
    from tests.helpers import isolated_overrides

    qrels = shop_dataset(tmp_path, with_grades=False)
    judges = ",".join(
        f"pkg://mmjudge/datasets/demo_fashion/judges/{n}.jsonl"
        for n in ("careful", "hasty", "coin")
    )
    command = [
        sys.executable,
        "-m",
        "mmjudge",
        "race",
        "-cd",
        str(tmp_path / "conf"),
        "dataset=shop",
        "model=replay",
        f"model.options.qrels={judges}",
        "race.round_items=40",
        "race.labels=ask",
        f"race.label_oracle={qrels}",
        "hydra.sweep.dir=race",
        *(f"{k}={v}" for k, v in isolated_overrides(tmp_path).items()),
    ]
    done = run(command, tmp_path)
    assert done.returncode == 0, done.stderr
    race = read_race_file(tmp_path / "race")
    assert race is not None and race.outcome is not None and race.n_items == len(demo_items())
    assert "careful" in race.outcome.name
    page = (tmp_path / "reports" / "race" / "index.html").read_text(encoding="utf-8")
    assert "No judge has a κ" not in page  # the main part scores them on the asked grades
    assert (
        "On <b>shop</b>, which holds no grade of its own, every κ and every Δκ is instead "
        "against the human grades asked adaptively by the race" in page
    )
    # every cell's κ from the asked grades in the race section, with its count
    assert len(re.findall(r"\(\d[\d,]* graded\)", page)) == 3
    frontier = run([*command[:3], "frontier", "race", "--n-boot", "50"], tmp_path)
    assert frontier.returncode == 0, frontier.stderr
    total = race.outcome.human_labels.total  # type: ignore[union-attr]
    assert f"race (asked_grades.json): {total} grades over" in frontier.stdout
    assert "cheapest as good    replay-careful" in frontier.stdout
