"""``label_rows`` reads the five fields the statistics need from each row; it must give exactly
what decoding each whole row gives, whatever the rows' texts hold."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mmjudge.records import JudgmentRecord
from mmjudge.store import rows
from mmjudge.store.rows import LABEL_FIELDS, human_grades, label_rows

#: Texts that look like the keys the reader looks for, or that end in a backslash.
TRICKY = [
    '2, "label": 9, "error": "boom"',
    "ends with a backslash \\",
    'a quote \\", "label": 7',
    'newline\n, "human_labels": {}',
    "non-ASCII: relevância ✓ 相关",
    "",
]


def _record(n: int, **changes: Any) -> JudgmentRecord:
    text = TRICKY[n % len(TRICKY)]
    record = JudgmentRecord(
        run_id="r",
        dataset="d",
        query_id=f"q{n % 3}",
        result_id=f'p"{n}\\',
        modality="text",
        provider="openai",
        model="m",
        prompt_id="default",
        prompt_hash=None,
        image_sha256s=[text],
        raw_output=text,
        label=n % 3,
        explanation=text,
        parse_error=text or None,
        human_labels={"a": 1, "label": 2, "error": 0, "query_id": 1},
        input_tokens=10,
        output_tokens=2,
        cost_usd=0.001,
        latency_s=0.1,
        cached=False,
        error=None,
        timestamp="2026-01-01T00:00:00+00:00",
        usage={"input_tokens": 10},
        entry_grades={"error": 3, "label": 1},
        spans={"error": ', "error": "no"'},
    )
    return dataclasses.replace(record, **changes)


def rows_with_offsets(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """The reference reader: ``(byte offset, row)`` for each row that decodes whole to an
    object; a partial last line is skipped."""
    if not path.is_file():
        return
    position = 0
    with path.open("rb") as handle:
        for line in handle:
            start = position
            position += len(line)
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                yield start, row


def _expected(path: Path) -> list[tuple[int, tuple[Any, ...]]]:
    return [
        (offset, tuple(row.get(name) for name in LABEL_FIELDS))
        for offset, row in rows_with_offsets(path)
    ]


def _read(path: Path) -> list[tuple[int, tuple[Any, ...]]]:
    """What label_rows gives, human grades read from the JSON text it may keep them as."""
    return [
        (offset, (query_id, result_id, label, human_grades(humans), error))
        for offset, (query_id, result_id, label, humans, error) in label_rows(path)
    ]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(lines), encoding="utf-8")
    return path


def test_rows_written_here_read_in_place_as_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = [_record(n) for n in range(12)]
    records += [
        _record(20, label=None, error="provider failed after 3 tries"),
        _record(21, query_id=7, label=1.5),  # type: ignore[arg-type]
        _record(22, human_labels={}),
    ]
    path = _write(tmp_path / "j.jsonl", [r.to_json() + "\n" for r in records])
    decoded_whole: list[bytes] = []
    original = rows._label_values_decoded
    monkeypatch.setattr(
        rows, "_label_values_decoded", lambda raw: decoded_whole.append(raw) or original(raw)
    )
    assert _read(path) == _expected(path)
    assert decoded_whole == []  # every row was read in place


def test_other_layouts_are_decoded_whole(tmp_path: Path) -> None:
    row = json.loads(_record(1).to_json())
    shuffled = dict(reversed(list(row.items())))
    lines = [
        json.dumps(row, separators=(",", ":")) + "\n",  # compact separators
        json.dumps(shuffled) + "\n",  # human labels before the label
        json.dumps({**row, "schema_version": 99}) + "\n",  # another version
        json.dumps({k: v for k, v in row.items() if k != "error"}) + "\n",  # a key missing
        "\n",
        "[1, 2]\n",  # not an object
        "{not json}\n",
        json.dumps(row) + "\n",
        json.dumps(row)[:-30],  # partial last line of a killed run
    ]
    path = _write(tmp_path / "j.jsonl", lines)
    found = _read(path)
    assert found == _expected(path)
    assert len(found) == 5
    assert found[1][1][2] == row["label"] and found[1][1][3] == row["human_labels"]


def test_a_missing_file_has_no_rows(tmp_path: Path) -> None:
    assert _read(tmp_path / "absent.jsonl") == []


def test_values_msgspec_refuses_are_decoded_as_json_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``NaN``, ``Infinity`` and numbers beyond a float's range are read by ``json.loads``
    and refused by msgspec: those rows are decoded whole, to the same values."""
    records = [
        _record(1, label=float("nan")),  # type: ignore[arg-type]
        _record(2, query_id=2**70),  # type: ignore[arg-type]
        _record(3, human_labels={"a": float("inf")}),  # type: ignore[dict-item]
        _record(4),
    ]
    lines = [r.to_json() + "\n" for r in records]
    lines.append(records[3].to_json().replace('"label": 1', '"label": 1e400') + "\n")
    lines.append(records[3].to_json().replace('{"a": 1,', '{"a": 1e400,') + "\n")
    path = _write(tmp_path / "j.jsonl", lines)
    decoded_whole: list[bytes] = []
    original = rows._label_values_decoded
    monkeypatch.setattr(
        rows, "_label_values_decoded", lambda raw: decoded_whole.append(raw) or original(raw)
    )
    found = _read(path)
    assert len(found) == 6 and len(decoded_whole) == 3  # NaN, Infinity, 1e400 as the label
    assert found[4][1][2] == float("inf")
    assert found[5][1][3]["a"] == float("inf")  # in the human grades, read when needed
    assert repr(found) == repr(_expected(path))  # repr: nan equals itself there
    assert found[1][1][0] == 2**70


def test_iter_rows_reads_what_json_reads_and_skips_what_it_cannot(tmp_path: Path) -> None:
    """Whole rows are decoded by msgspec where it can, else by ``json``: the same values as
    ``json.loads`` line by line, with blank, partial and undecodable lines skipped."""
    good = [_record(1).to_json(), _record(2, label=float("nan")).to_json()]  # type: ignore[arg-type]
    good.append(_record(3).to_json().replace('"label": 1', '"label": 1e400'))
    good.append(json.dumps({"text": "\ud800 lone surrogate", "n": 2**80}))
    raw = ("\n".join(good) + "\n\n   \n").encode("utf-8", "surrogatepass")
    raw += b'{"query_id": "\xff\xfe"}\n' + b'{"query_id": "q9", "lab'
    path = tmp_path / "j.jsonl"
    path.write_bytes(raw)
    found = list(rows.iter_rows(path))
    assert repr(found) == repr([json.loads(line) for line in good])
