"""``mmjudge review``: review files out of saved runs, and corrections back in as a
new assessor's qrels and a new test-bank version."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from mmjudge.cli import agree, export, review
from mmjudge.engine.cell import run_cell
from mmjudge.testbank.bank import read_bank, write_bank
from tests.helpers import DEMO_DIR, compose_config

DEMO_NUGGETS = DEMO_DIR / "testbank_nuggets.jsonl"


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    """A direct and a nuggets cell of the lexical judge on two demo queries, the bank a copy."""
    bank = tmp_path / "bank" / "nuggets.jsonl"
    write_bank(read_bank(DEMO_NUGGETS), bank)
    for prompt in ("default", "nuggets"):
        cfg = compose_config(
            [
                f"prompt={prompt}",
                "dataset.limit=16",
                f"dataset.testbanks.nuggets={bank}",
                f"paths.response_cache={tmp_path / 'cache.sqlite'}",
                "runner.progress=false",
            ]
        )
        run_cell(cfg, tmp_path / "sweep" / prompt)
    return tmp_path / "sweep"


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_export_lists_items_worth_a_look_with_texts_thumbnails_and_entry_grades(
    sweep: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "review" / "review.csv"
    assert review.main(["export", str(sweep), "--out", str(out)]) == 0
    assert "items to review" in capsys.readouterr().err
    rows = _read_csv(out)
    assert rows and all(row["reasons"] for row in rows)
    reasons = {r for row in rows for r in row["reasons"].split("; ")}
    assert {"judge differs from humans", "judges split"} <= reasons
    p052 = next(row for row in rows if row["result_id"] == "p052")
    assert p052["query"] == "red striped t-shirt" and "colour: Pink" in p052["result_text"]
    assert (out.parent / p052["thumbnail"]).is_file() and p052["grades"] == "0,1,2"
    assert "] red = 0" in p052["entries"] and "] striped = 5" in p052["entries"]
    assert p052["human"] == "annotator_a=1; annotator_b=2" and p052["consensus"] == "1"
    assert "lexical/nuggets/text=1" in p052["judges"]
    assert p052["bank_version"] == read_bank(Path(p052["bank"])).version


def test_import_gives_a_new_assessor_and_a_new_bank_version(
    sweep: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "review.csv"
    review.main(["export", str(sweep), "--out", str(out)])
    rows = _read_csv(out)
    bank_file = Path(rows[0]["bank"])
    before = read_bank(bank_file)
    for row in rows:
        row["corrected_grade"] = row["consensus"]  # the reviewer sides with the humans
    q01 = next(row for row in rows if row["query_id"] == "q01")
    q01["add_entries"] = "visual: short sleeves; cotton"
    q01["remove_entries"] = "red"
    with out.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    capsys.readouterr()
    assert review.main(["import", str(out), "--assessor", "maria"]) == 0
    err = capsys.readouterr().err
    assert f"demo_fashion.maria.qrels: {len(rows)} corrected grades" in err
    after = read_bank(bank_file)
    assert after.version != before.version and f"replacing {before.version}" in err
    texts = [(e.text, e.visual) for e in after.for_query("q01")]
    assert texts == [
        ("t-shirt", True),
        ("striped", True),
        ("short sleeves", True),
        ("cotton", False),
    ]
    assert after.for_query("q02") == before.for_query("q02")
    assert read_bank(bank_file.with_name(f"nuggets.{before.version}.jsonl")) == before._replace(
        path=bank_file.with_name(f"nuggets.{before.version}.jsonl")
    )

    # The reviewer is an assessor like any other: the humans' consensus agrees with them fully.
    human = tmp_path / "human.qrels"
    assert export.main([str(sweep / "default"), "--labels", "human", "-o", str(human)]) == 0
    maria = tmp_path / "demo_fashion.maria.qrels"
    args = [str(maria), str(human), "--scale", "0,1,2", "--format", "json", "--n-boot", "0"]
    assert agree.main(args) == 0
    row = json.loads(capsys.readouterr().out)["runs"][0]
    assert row["n"] == len(rows) and row["accuracy"] == pytest.approx(1.0)


def test_jsonl_round_trip_and_bad_input(sweep: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "review.jsonl"
    assert review.main(["export", str(sweep), "--out", str(out), "--max", "3"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3 and isinstance(rows[0]["entries"], list)
    rows[0]["corrected_grade"] = 7
    out.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert review.main(["import", str(out)]) == 2
    err = capsys.readouterr().err
    assert "review.jsonl:1: field 'corrected_grade' must be a whole grade on the scale 0,1,2" in err
    assert review.main(["export", str(sweep), "--out", str(tmp_path / "r.txt")]) == 2
    assert "name a .csv or .jsonl file" in capsys.readouterr().err
    assert review.main(["export", str(tmp_path / "nothing"), "--out", str(out)]) == 2


def test_import_creates_the_out_folder_with_its_parents(
    sweep: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "review.jsonl"
    assert review.main(["export", str(sweep), "--out", str(out), "--max", "2"]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        row["corrected_grade"] = 2
    out.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    folder = tmp_path / "new" / "deeper"
    capsys.readouterr()
    assert review.main(["import", str(out), "--assessor", "ana", "--out", str(folder)]) == 0
    qrels = folder / "demo_fashion.ana.qrels"
    assert qrels.is_file() and len(qrels.read_text(encoding="utf-8").splitlines()) == len(rows)
    blocked = tmp_path / "a_file"
    blocked.write_text("", encoding="utf-8")
    assert review.main(["import", str(out), "--out", str(blocked / "sub")]) == 2
    assert "a file is in the way; name a folder" in capsys.readouterr().err
