"""mmjudge.Judge: one item graded through the runner a sweep uses, its retries, response cache
and prices; the real OpenAI SDK talks to the loopback server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import mmjudge
from mmjudge.data.loading import load_dataset
from mmjudge.data.schema import Example
from tests.fixtures.loopback_server import Behaviour, LoopbackServer
from tests.helpers import isolated_overrides

QUIET = ["runner.progress=false", "report.build=false", "runner.backoff_base_s=0.01"]


def where(root: Path) -> list[str]:
    return [f"{k}={v}" for k, v in isolated_overrides(root).items()]


def first_item(cfg: mmjudge.SweepConfig) -> Example:
    return next(iter(load_dataset(cfg.dataset, seed=cfg.seed)))


def grade_item(judge: mmjudge.Judge, item: Example) -> mmjudge.Grade:
    return judge.grade(
        item.query, dict(item.fields), query_id=item.query_id, result_id=item.result_id
    )


@pytest.fixture
def paid(tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Settings of a paid judge answered by the loopback server."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-judge")
    return ["model=gpt4o_mini", f"model.base_url={loopback.openai_base_url}", *QUIET]


def test_the_grade_is_the_row_a_run_writes(tmp_path: Path) -> None:
    settings = ["model=lexical", "dataset.limit=1", *QUIET, *where(tmp_path)]
    mmjudge.run_cell(settings, tmp_path / "run")
    [row] = mmjudge.open_run(tmp_path / "run").judgments()
    cfg = mmjudge.compose(settings)
    with mmjudge.Judge.from_config(cfg) as judge:
        grade = grade_item(judge, first_item(cfg))
    assert (grade.label, grade.raw_output, grade.explanation) == (
        row.label,
        row.raw_output,
        row.explanation,
    )
    assert grade.record.prompt_hash == row.prompt_hash
    assert (grade.record.query_id, grade.record.result_id) == (row.query_id, row.result_id)


def test_a_paid_answer_is_priced_then_served_from_the_cache(
    tmp_path: Path, paid: list[str], loopback: LoopbackServer
) -> None:
    with mmjudge.Judge.from_config([*paid, *where(tmp_path)]) as judge:
        first = judge.grade("red dress", {"title": "Red summer dress"})
        again = judge.grade("red dress", {"title": "Red summer dress"})
        assert (judge.calls, judge.cache_hits) == (1, 1)
        assert judge.spent_usd == pytest.approx(first.cost_usd)
    assert first.label is not None and first.error is None and not first.cached
    assert first.usage.input_tokens > 0 and first.cost_usd > 0
    assert again.cached and again.raw_output == first.raw_output
    assert again.cost_usd == pytest.approx(first.cost_usd)
    assert loopback.request_count == 1


def test_an_item_a_run_judged_comes_from_the_same_cache(
    tmp_path: Path, paid: list[str], loopback: LoopbackServer
) -> None:
    settings = [*paid, "dataset.limit=1", *where(tmp_path)]
    mmjudge.run_cell(settings, tmp_path / "run")
    [row] = mmjudge.open_run(tmp_path / "run").judgments()
    cfg = mmjudge.compose(settings)
    with mmjudge.Judge.from_config(cfg) as judge:
        grade = grade_item(judge, first_item(cfg))
    assert grade.cached and loopback.request_count == 1
    assert (grade.label, grade.raw_output) == (row.label, row.raw_output)
    assert grade.cost_usd == pytest.approx(row.cost_usd)
    assert grade.usage.to_dict() == row.usage


def test_a_server_error_is_retried(
    tmp_path: Path, paid: list[str], loopback: LoopbackServer
) -> None:
    loopback.script(Behaviour.server_error(500), Behaviour.reply("2\nMostly about it."))
    with mmjudge.Judge.from_config([*paid, *where(tmp_path)]) as judge:
        grade = judge.grade("red dress", {"title": "Red summer dress"})
    assert (grade.label, grade.explanation, grade.error) == (2, "Mostly about it.", None)
    assert loopback.request_count == 2


def test_a_failure_after_the_retries_is_kept_in_the_grade(
    tmp_path: Path, paid: list[str], loopback: LoopbackServer
) -> None:
    loopback.script(Behaviour.server_error(500), Behaviour.server_error(500))
    settings = [*paid, "runner.max_retries=1", *where(tmp_path)]
    with mmjudge.Judge.from_config(settings) as judge:
        grade = judge.grade("red dress", {"title": "Red summer dress"})
    assert grade.label is None and grade.error is not None and "500" in grade.error
    assert loopback.request_count == 2


def test_an_unreadable_answer_has_a_parse_error(
    tmp_path: Path, paid: list[str], loopback: LoopbackServer
) -> None:
    loopback.script(Behaviour.reply("I would rather not say."))
    with mmjudge.Judge.from_config([*paid, *where(tmp_path)]) as judge:
        grade = judge.grade("red dress", {"title": "Red summer dress"})
    assert grade.label is None and grade.parse_error and grade.error is None


def test_awaited_together(tmp_path: Path, paid: list[str], loopback: LoopbackServer) -> None:
    async def three(judge: mmjudge.Judge) -> list[mmjudge.Grade]:
        return await asyncio.gather(
            *(judge.agrade("shoes", {"title": f"Shoe model {n}"}) for n in range(3))
        )

    with mmjudge.Judge.from_config([*paid, *where(tmp_path)]) as judge:
        grades = asyncio.run(three(judge))
    assert [g.error for g in grades] == [None, None, None]
    assert loopback.request_count == 3


def test_a_missing_image_is_an_item_error(tmp_path: Path, paid: list[str]) -> None:
    with mmjudge.Judge.from_config([*paid, "modality=mm", *where(tmp_path)]) as judge:
        grade = judge.grade("red dress", {"title": "Red dress"}, [tmp_path / "absent.jpg"])
    assert grade.label is None and "absent.jpg" in (grade.error or "")


def test_a_missing_key_fails_before_any_call(
    tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(mmjudge.CredentialError, match="OPENAI_API_KEY"):
        mmjudge.Judge.from_config(["model=gpt4o_mini", *where(tmp_path)])
    assert loopback.request_count == 0


def test_a_judge_that_cannot_see_images_is_refused(tmp_path: Path) -> None:
    with pytest.raises(mmjudge.ConfigError, match="image"):
        mmjudge.Judge.from_config(["model=lexical", "modality=image", *where(tmp_path)])


def test_a_closed_judge_grades_no_more(tmp_path: Path) -> None:
    judge = mmjudge.Judge.from_config(["model=lexical", *where(tmp_path)])
    assert judge.grade("dress", {"title": "Red dress"}).label is not None
    judge.close()
    judge.close()  # closing twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        judge.grade("dress", {"title": "Red dress"})


def test_grade_works_where_a_loop_is_already_running(tmp_path: Path) -> None:
    """As in a notebook, whose cells run inside an event loop."""

    async def cell(judge: mmjudge.Judge) -> mmjudge.Grade:
        return judge.grade("red dress", {"title": "Red dress"})

    with mmjudge.Judge.from_config(["model=lexical", *where(tmp_path)]) as judge:
        assert asyncio.run(cell(judge)).label is not None
