"""A tiny catalogue and saved runs over it, for the distillation tests: queries name a colour
and a garment; a result of the same garment and colour is grade 2, the same garment in
another colour grade 1, another garment grade 0. The people give exactly those grades; judge
``sharp`` agrees with them, judge ``dull`` gives grade 0 to every grade-1 item."""

from __future__ import annotations

import json
from pathlib import Path

from tests.fixtures.synthetic import Key, write_run

COLOURS = ("red", "blue", "green", "black", "white", "yellow", "pink", "grey")
GARMENTS = ("shirt", "dress", "jacket", "skirt")


def items(n_queries: int = 8) -> list[dict[str, object]]:
    """Six results per query, graded by the rule above."""
    rows: list[dict[str, object]] = []
    for q in range(n_queries):
        colour, garment = COLOURS[q % len(COLOURS)], GARMENTS[q % len(GARMENTS)]
        other_colour = COLOURS[(q + 3) % len(COLOURS)]
        other_garment = GARMENTS[(q + 1) % len(GARMENTS)]
        results = [
            (f"{colour} {garment}", 2),
            (f"soft {colour} {garment} in cotton", 2),
            (f"{other_colour} {garment}", 1),
            (f"plain {other_colour} {garment}", 1),
            (f"{colour} {other_garment}", 0),
            (f"{other_colour} {other_garment}", 0),
        ]
        for r, (name, grade) in enumerate(results):
            rows.append(
                {
                    "query_id": f"q{q}",
                    "query": f"{colour} {garment}",
                    "result_id": f"q{q}r{r}",
                    "fields": {"name": name},
                    "labels": {"annotator_a": grade},
                }
            )
    return rows


def write_source(root: Path, n_queries: int = 8, *, text: bool = True) -> Path:
    """A sweep folder ``root/sweep`` with two judges' runs over the toy catalogue (written to
    ``root/datasets/toy``, where the runs' config points); ``text=False`` leaves the results
    without text."""
    rows = items(n_queries)
    dataset = root / "datasets" / "toy"
    dataset.mkdir(parents=True, exist_ok=True)
    with (dataset / "items.jsonl").open("w", encoding="utf-8") as handle:
        for row in rows:
            shown = row if text else {**row, "fields": {"name": ""}}
            handle.write(json.dumps(shown) + "\n")
    human: dict[Key, dict[str, int]] = {}
    for row in rows:
        grade = row["labels"]["annotator_a"]  # type: ignore[index]
        human[(str(row["query_id"]), str(row["result_id"]))] = {"annotator_a": int(grade)}
    people = {key: grades["annotator_a"] for key, grades in human.items()}
    dull = {key: (0 if grade == 1 else grade) for key, grade in people.items()}
    write_run(root, "sweep/sharp", people, human, model="sharp")  # type: ignore[arg-type]
    write_run(root, "sweep/dull", dull, human, model="dull")  # type: ignore[arg-type]
    return root / "sweep"
