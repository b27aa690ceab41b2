"""Grade single items with a configured judge, through the runner a sweep uses."""

import asyncio

import mmjudge

with mmjudge.Judge.from_config(["model=lexical", "modality=text"]) as judge:
    grade = judge.grade(
        "red summer dress",
        {"title": "Red linen summer dress", "description": "A light dress for warm days."},
    )
    print(
        f"grade {grade.label}: {grade.explanation} (${grade.cost_usd:.6f}, cached={grade.cached})"
    )

    async def both() -> list[mmjudge.Grade]:
        grades = await asyncio.gather(
            judge.agrade("hiking boots", {"title": "Waterproof hiking boots"}),
            judge.agrade("hiking boots", {"title": "Silk evening scarf"}),
        )
        return list(grades)

    for result in asyncio.run(both()):
        print(f"grade {result.label}: {result.raw_output!r}")
