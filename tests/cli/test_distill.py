"""``mmjudge distill``: each input it cannot learn from ends in one line and exit status 2,
before anything is trained (no torch needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmjudge.cli.distill import main
from tests.distill.toy import write_source


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One toy source for the module (no test changes it)."""
    return write_source(tmp_path_factory.mktemp("toy"))


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["--judge", "nobody"], "--judge 'nobody': no such judge in"),
        ([], "holds several judges; pick one with --judge NAME (dull, sharp)"),
        (["--teacher", "humans", "--judge", "sharp"], "--judge goes with --teacher judge"),
        (["--teacher", "humans", "--labels", "x.qrels"], "--labels goes with --teacher labels"),
        (["--teacher", "humans", "--holdout", "0.9"], "pairs left to train on"),
        (["--teacher", "humans", "--epochs", "0"], "--epochs and --batch-size must be"),
    ],
)
def test_bad_input_is_one_line(
    source: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    words: str,
) -> None:
    status = main([str(source), "--out", str(tmp_path / "judge"), *arguments])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert err.startswith("mmjudge distill: ") and words in err and "\n" not in err
    assert not (tmp_path / "judge" / "model").exists()


def test_an_occupied_out_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_source(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me", encoding="utf-8")
    status = main([str(source), "--out", str(tmp_path / "mine"), "--teacher", "humans"])
    assert status == 2 and "a folder with other files in it" in capsys.readouterr().err
    assert (tmp_path / "mine" / "notes.txt").read_text(encoding="utf-8") == "keep me"
