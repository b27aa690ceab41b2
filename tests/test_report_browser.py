"""The report page in a real browser: headless Chromium loads it from disk without script
errors, the filter script runs (and honours filters given in the address), and a
screenshot shows a rendered page."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from PIL import Image

from mmjudge.report import build_report
from mmjudge.report.synthetic import FakeDataset, FakeJudge, write_sweep

CHROMIUM = shutil.which("chromium")
pytestmark = [
    pytest.mark.needs_extra,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="Chromium is not installed (apt-get install -y --no-install-recommends chromium)",
    ),
]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("browser")
    dataset = FakeDataset("shop", n_queries=12, description="A {colour} {garment}. <b>bold</b>")
    judges = [
        FakeJudge("free", accuracy=0.4),
        FakeJudge("vision", accuracy=0.6, usd_per_judgment=0.001),
        FakeJudge("vision", modality="mm", accuracy=0.8, usd_per_judgment=0.0013),
    ]
    sweep = write_sweep(base / "sweeps" / "web", [dataset], judges)
    return build_report(sweep.root, base / "reports", max_disagreements=10) / "index.html"


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="mmjudge-chromium-") as profile:
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def console_errors(stderr: str) -> list[str]:
    """Console messages that report a script error."""
    return [
        line
        for line in stderr.splitlines()
        if ":CONSOLE" in line and re.search(r"Uncaught|Error|error", line)
    ]


def test_page_loads_without_script_errors_and_the_filters_run(page: Path) -> None:
    result = chromium("--dump-dom", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert not console_errors(result.stderr)
    dom = result.stdout
    assert 'data-ready="1"' in dom  # the filter script ran to its end
    total = len(re.findall(r'<div class="item"', dom))
    assert total > 0
    assert re.search(rf">{total} of {total} items shown<", dom)
    assert "&lt;b&gt;bold&lt;/b&gt;" in dom and "<b>bold</b>" not in dom


def test_filters_can_be_set_from_the_address(page: Path) -> None:
    result = chromium("--dump-dom", page.as_uri() + "?judge=free%20%C2%B7%20text%20only")
    assert result.returncode == 0 and not console_errors(result.stderr)
    dom = result.stdout
    items = re.findall(r'<div class="item" data-judge="([^"]*)"[^>]*?( hidden(?:="")?)?>', dom)
    shown = [judge for judge, hidden in items if not hidden]
    assert shown and set(shown) == {"free · text only"}
    assert len(shown) < len(items)
    assert re.search(rf">{len(shown)} of {len(items)} items shown<", dom)


def test_screenshot_shows_a_rendered_page(page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    result = chromium(f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert not console_errors(result.stderr)
    with Image.open(shot) as image:
        assert image.size == (1280, 2000)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, figures and colour, not blank
    white = max(count for count, colour in colours if colour == (255, 255, 255))
    assert white < 0.97 * 1280 * 2000
