"""The report page in a real browser, with every request off the machine refused: headless
Chromium loads it from disk without script errors, the interactive chart draws (hover shows
a judge's numbers, a click filters the tables), the tables sort and filter, the disagreement
browser draws its items (and honours filters given in the address), and screenshots at a
desktop and a phone width show a rendered page."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mmjudge.ensembles.defaults import build_default_ensembles
from mmjudge.report import build_report
from tests import devtools
from tests.fixtures.synthetic import FakeDataset, FakeJudge, write_sweep

pytestmark = [
    pytest.mark.needs_extra,
    pytest.mark.slow,  # each test drives Chromium for a second or more
    pytest.mark.skipif(
        devtools.CHROMIUM is None,
        reason="Chromium is not installed (apt-get install -y --no-install-recommends chromium)",
    ),
]


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("browser")
    dataset = FakeDataset("shop", n_queries=12, description="A {colour} {garment}. <b>bold</b>")
    judges = [
        FakeJudge("free", accuracy=0.4),
        FakeJudge("vision", accuracy=0.6, usd_per_judgment=0.001),
        FakeJudge("vision", modality="mm", accuracy=0.8, usd_per_judgment=0.0013),
        FakeJudge("mini", accuracy=0.65, usd_per_judgment=0.0002),
    ]
    sweep = write_sweep(base / "sweeps" / "web", [dataset], judges)
    assert build_default_ensembles(sweep.root)  # cascades between the text judges
    return build_report(sweep.root, base / "reports", max_disagreements=10) / "index.html"


def chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert devtools.CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="mmjudge-chromium-") as profile:
        return subprocess.run(
            [
                devtools.CHROMIUM,
                *devtools.FLAGS,
                "--enable-logging=stderr",
                "--v=0",
                "--virtual-time-budget=10000",
                f"--user-data-dir={profile}",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def test_page_loads_offline_without_script_errors(page: Path) -> None:
    result = chromium("--dump-dom", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert not devtools.console_errors(result.stderr)
    dom = result.stdout
    assert re.search(r'id="kappa-chart"[^>]*data-ready="1"', dom)  # vegaEmbed resolved
    assert 'class="mark-symbol' in dom  # the chart's points are drawn
    assert re.search(r'id="table-filters"[^>]*data-ready="1"', dom)
    assert 'data-ready="1"' in dom[dom.index('id="disagreements"') - 200 :]
    total = len(re.findall(r'<div class="item"', dom))
    assert total > 0
    assert re.search(rf">{total} of {total} matching items shown \({total} in all\)<", dom)
    assert "&lt;b&gt;bold&lt;/b&gt;" in dom and "<b>bold</b>" not in dom


def test_browser_filters_can_be_set_from_the_address(page: Path) -> None:
    result = chromium("--dump-dom", page.as_uri() + "?judge=free%20%C2%B7%20text%20only")
    assert result.returncode == 0 and not devtools.console_errors(result.stderr)
    dom = result.stdout
    judges = re.findall(r'<div class="item" data-judge="([^"]*)"', dom)
    found = re.search(r">(\d+) of (\d+) matching items shown \((\d+) in all\)<", dom)
    assert judges and set(judges) == {"free · text only"}
    assert found and int(found.group(1)) == len(judges) < int(found.group(3))


async def _interact(page: devtools.Page) -> dict[str, Any]:
    """Hover and click a point of the chart, sort a table; report what the page shows."""
    await page.wait_for("document.getElementById('kappa-chart').dataset.ready === '1'")
    out: dict[str, Any] = {}
    out["points"] = await page.evaluate(
        "document.querySelectorAll('#kappa-chart .mark-symbol.role-mark path').length"
    )
    # the point of the dearest judge (vision, image + text)
    target = """(function () {
      var paths = Array.prototype.slice.call(
        document.querySelectorAll('#kappa-chart .mark-symbol.role-mark path'));
      return paths.find(function (p) { return p.__data__ && p.__data__.datum
        && p.__data__.datum.model === 'vision' && p.__data__.datum.modality === 'image + text'; });
    })()"""
    await page.evaluate(
        f"""(function () {{ var p = {target}; var r = p.getBoundingClientRect();
        var o = {{bubbles: true, clientX: r.x + r.width / 2, clientY: r.y + r.height / 2}};
        p.dispatchEvent(new PointerEvent('pointermove', o));
        p.dispatchEvent(new MouseEvent('mousemove', o)); }})()"""
    )
    out["tooltip"] = await page.wait_for(
        "(function () { var t = document.getElementById('vg-tooltip-element');"
        " return t && t.textContent.indexOf('κ [95% CI]') >= 0 ? t.textContent : ''; })()"
    )
    await page.evaluate(
        f"""(function () {{ var p = {target}; var r = p.getBoundingClientRect();
        var o = {{bubbles: true, clientX: r.x + r.width / 2, clientY: r.y + r.height / 2}};
        p.dispatchEvent(new MouseEvent('mousedown', o));
        p.dispatchEvent(new MouseEvent('mouseup', o));
        p.dispatchEvent(new MouseEvent('click', o)); }})()"""
    )
    out["filters"] = await page.wait_for(
        "(function () { var v = {}; document.querySelectorAll('#table-filters select')"
        ".forEach(function (s) { v[s.dataset.filter] = s.value; });"
        " return v.model ? v : null; })()"
    )
    out["rows"] = await page.evaluate(
        "Array.prototype.map.call(document.querySelectorAll("
        "'table.explore tbody tr[data-model]:not([hidden])'),"
        " function (r) { return [r.dataset.model, r.dataset.modality]; })"
    )
    await page.evaluate("document.querySelector('#kappa-chart input[type=checkbox]').click()")
    out["with_ensembles"] = await page.wait_for(
        "(function () { var n = document.querySelectorAll("
        "'#kappa-chart .mark-symbol.role-mark path').length; return n > 4 ? n : 0; })()"
    )
    await page.evaluate("document.getElementById('clear-filters').click()")
    first = "document.querySelector('section[id^=dataset-] table.explore')"
    await page.evaluate(f"{first}.querySelectorAll('th[data-sort]')[1].click()")
    out["sorted"] = await page.evaluate(
        f"Array.prototype.map.call({first}.querySelectorAll('tbody tr[data-model]'),"
        " function (r) { return r.dataset.model; })"
    )
    out["errors"] = list(page.errors)
    return out


def test_chart_hover_click_and_table_sorting(page: Path) -> None:
    seen = devtools.run(page.as_uri(), _interact)
    assert not seen["errors"]
    assert seen["points"] == 4  # the four judges of the first dataset; ensembles hidden
    assert seen["with_ensembles"] > 4  # the box adds the cascades
    tooltip = seen["tooltip"]
    for part in ("vision · image + text", "κ [95% CI]", "image part", "text part", "n items"):
        assert part in tooltip, (part, tooltip)
    assert seen["filters"] == {
        "dataset": "",
        "model": "vision",
        "modality": "image + text",
        "prompt": "default",
    }
    assert seen["rows"] and set(map(tuple, seen["rows"])) == {("vision", "image + text")}
    assert seen["sorted"] == sorted(seen["sorted"])  # ascending by judge on the first click


@pytest.mark.parametrize("width", [1400, 390])
def test_screenshot_shows_a_rendered_page(page: Path, tmp_path: Path, width: int) -> None:
    shot = tmp_path / "report.png"
    result = chromium(f"--screenshot={shot}", f"--window-size={width},2000", page.as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    assert not devtools.console_errors(result.stderr)
    with Image.open(shot) as image:
        assert image.size == (width, 2000)
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, figures and colour, not blank
    white = max(count for count, colour in colours if colour == (255, 255, 255))
    assert white < 0.97 * width * 2000
