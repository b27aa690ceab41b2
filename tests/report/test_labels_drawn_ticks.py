"""The tick labels a drawn figure shows (:func:`mmjudge.report.label_placement.text_boxes`):
only those of ticks inside the view, found through matplotlib's public API."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from mmjudge.report.label_placement import text_boxes


def test_only_the_ticks_inside_the_view_are_drawn_texts() -> None:
    fig, ax = plt.subplots()
    try:
        ax.set_xticks([0, 1, 2, 3], labels=["zero", "one", "two", "three"])
        ax.set_yticks([10, 20, 30], labels=["ten", "twenty", "thirty"])
        ax.set_xlim(0.5, 2.5)
        ax.set_ylim(5, 30)  # a tick on the edge of the view is drawn
        ax.set_title("Title")
        fig.canvas.draw()
        texts = [text for text, _box in text_boxes(fig)]
    finally:
        plt.close(fig)
    assert sorted(texts) == sorted(["Title", "one", "two", "ten", "twenty", "thirty"])


def test_a_log_axis_keeps_the_ticks_of_its_view() -> None:
    fig, ax = plt.subplots()
    try:
        ax.set_xscale("log")
        ax.set_xticks([1, 10, 100, 1000], labels=["a", "b", "c", "d"], minor=False)
        ax.minorticks_off()
        ax.set_xlim(5, 200)
        ax.set_yticks([])
        fig.canvas.draw()
        texts = [text for text, _box in text_boxes(fig)]
    finally:
        plt.close(fig)
    assert sorted(texts) == ["b", "c"]
