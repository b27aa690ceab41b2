"""The κ-vs-cost figure's legend stays inside the image and lists only what is drawn."""

from __future__ import annotations

from pathlib import Path

from mmjudge.report import figures
from mmjudge.report.analysis import analyse
from mmjudge.report.load import cell_table
from tests.fake_runs import make_run

MODELS = [
    "gpt4o_mini_with_a_long_name",
    "claude_haiku45_long_config",
    "gemini25_flash_long",
    "llama3_70b_self_hosted",
]


def sweep(root: Path) -> Path:
    """Four free judges of one annotator's labels: one frontier point, no human band."""
    keys = [(f"q{i // 5}", f"r{i}") for i in range(40)]
    human = {key: {"a": i % 3} for i, key in enumerate(keys)}
    for j, model in enumerate(MODELS):
        labels = {
            key: human[key]["a"] if (i + j) % (j + 2) else (human[key]["a"] + 1) % 3
            for i, key in enumerate(keys)
        }
        make_run(root, f"demo.{model}.text.default", labels, human, dataset="demo", model=model)
    return root


def test_the_legend_fits_and_lists_only_what_is_drawn(tmp_path: Path) -> None:
    fig = figures.cost_figure(analyse(cell_table(sweep(tmp_path / "s")), n_boot=20))
    fig.canvas.draw()
    [legend] = fig.legends
    texts = [text.get_text() for text in legend.get_texts()]
    assert not any("human–human" in text for text in texts)  # one annotator: no band
    assert not any("frontier" in text for text in texts)  # one point: no line
    assert sum(any(model in text for text in texts) for model in MODELS) == len(MODELS)
    box = legend.get_window_extent()
    width, _ = fig.canvas.get_width_height()
    assert box.x0 >= 0 and box.x1 <= width
