"""Write the demo catalogue's replay judges (``datasets/demo_fashion/judges/*.jsonl``): three
judges' grades of every demo item, for racing and replaying with no key and no call.

- ``careful``: the annotators' consensus (their lower median), one grade in 20 moved by one;
- ``hasty``: the consensus with one grade in four moved by one;
- ``coin``: a grade drawn at random.

Deterministic (seeded), so running it again writes the same files:

    python scripts/demo_judges.py
"""

from __future__ import annotations

import json
import random
from pathlib import Path

DEMO = Path(__file__).resolve().parent.parent / "datasets" / "demo_fashion"
#: Each judge: the share of items whose grade it moves off the consensus (None: a coin).
JUDGES = {"careful": 0.05, "hasty": 0.25, "coin": None}


def moved(grade: int, grades: list[int], rng: random.Random) -> int:
    """A neighbouring grade on the scale."""
    steps = [g for g in (grade - 1, grade + 1) if g in grades]
    return rng.choice(steps)


def main() -> None:
    items = [json.loads(line) for line in (DEMO / "items.jsonl").read_text().splitlines() if line]
    scale = sorted({g for item in items for g in item["labels"].values()})
    out = DEMO / "judges"
    out.mkdir(exist_ok=True)
    for seed, (name, share) in enumerate(JUDGES.items()):
        rng = random.Random(seed)
        rows = []
        for item in items:
            given = sorted(item["labels"].values())
            consensus = given[(len(given) - 1) // 2]
            if share is None:
                grade = rng.choice(scale)
            else:
                grade = moved(consensus, scale, rng) if rng.random() < share else consensus
            rows.append(
                {"query_id": item["query_id"], "result_id": item["result_id"], "grade": grade}
            )
        text = "".join(json.dumps(row) + "\n" for row in rows)
        (out / f"{name}.jsonl").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
