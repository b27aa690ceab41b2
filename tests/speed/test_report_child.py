"""A single run's report built by a child forked as the run starts
(:mod:`mmjudge.speed.report_child`): the same report as one built here, its error raised here,
and a child that is gone leaves the report to this process."""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from mmjudge.errors import MMJudgeError
from mmjudge.report import build_report
from mmjudge.speed import FAST
from mmjudge.speed.report_child import ReportChild
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only"),
    pytest.mark.slow,  # the child imports and builds a whole report
]

N_BOOT = 50


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ahead") / "sweeps" / "one"
    write_sweep(root, [FakeDataset("shop", n_queries=6, images=0)], [FakeJudge("gpt4o_mini")])
    return root


def _builder() -> Callable[..., Path]:
    return build_report


def _started() -> ReportChild:
    ahead = ReportChild.start(_builder, FAST)
    if ahead is None:
        pytest.skip("another thread runs in this test process, so nothing is forked")
    return ahead


def _reaped(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_child_builds_the_same_report_as_this_process(sweep: Path, tmp_path: Path) -> None:
    ahead = _started()
    out = ahead.build(sweep, tmp_path / "ahead", name="r", n_boot=N_BOOT)
    here = build_report(sweep, tmp_path / "here", name="r", n_boot=N_BOOT)
    assert out == tmp_path / "ahead" / "r" and _reaped(ahead.pid)
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in here.iterdir())
    page, same = ((d / "index.html").read_text(encoding="utf-8") for d in (out, here))
    assert _undated(page) == _undated(same.replace(str(here.parent), str(out.parent)))


def _undated(page: str) -> str:
    """The page without the times it was written at."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+\-]\d\d:\d\d", "<time>", page)


def test_the_childs_error_is_raised_here(tmp_path: Path) -> None:
    ahead = _started()
    with pytest.raises(MMJudgeError, match="no runs found") as raised:
        ahead.build(tmp_path / "empty", tmp_path / "reports")
    with pytest.raises(MMJudgeError) as here:
        build_report(tmp_path / "empty", tmp_path / "reports")
    assert str(raised.value) == str(here.value)


def test_a_child_that_is_gone_leaves_the_report_to_this_process(
    sweep: Path, tmp_path: Path
) -> None:
    ahead = _started()
    os.kill(ahead.pid, signal.SIGKILL)
    out = ahead.build(sweep, tmp_path / "reports", name="r", n_boot=N_BOOT)
    assert (out / "index.html").is_file() and _reaped(ahead.pid)


def test_a_run_that_ends_without_a_report_stops_the_child() -> None:
    ahead = _started()
    ahead.close()
    assert _reaped(ahead.pid)
