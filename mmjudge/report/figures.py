"""Figures: agreement against dollars per million judgments."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

MARKERS = {"text": "o", "mm": "s", "image": "^"}
MODALITY_NAMES = {"text": "text only", "mm": "image + text", "image": "image only"}


def kappa_vs_cost(cells: pd.DataFrame, path: Path) -> Path:
    """κ (y) against $ per million judgments (x, symmetric-log so free judges show at 0),
    one point per model × modality, one panel per dataset."""
    done = cells[(cells["status"] != "skipped") & cells["kappa"].notna()]
    datasets = sorted(done["dataset"].unique()) or ["(no completed runs)"]
    columns = min(len(datasets), 3)
    rows = math.ceil(len(datasets) / columns)
    fig, axes = plt.subplots(
        rows, columns, figsize=(5.2 * columns, 4.2 * rows), squeeze=False, sharey=True
    )
    models = sorted(done["model"].unique())
    colours = {m: plt.get_cmap("tab10")(i % 10) for i, m in enumerate(models)}
    for index, dataset in enumerate(datasets):
        ax = axes[index // columns][index % columns]
        subset = done[done["dataset"] == dataset]
        for _, cell in subset.iterrows():
            ax.scatter(
                cell["usd_per_million"],
                cell["kappa"],
                marker=MARKERS.get(cell["modality"], "D"),
                color=colours[cell["model"]],
                s=60,
                edgecolor="black",
                linewidth=0.5,
                zorder=3,
            )
            ax.annotate(
                f"{cell['model']} ({cell['modality']})",
                (cell["usd_per_million"], cell["kappa"]),
                textcoords="offset points",
                xytext=(5, 4),
                fontsize=7,
            )
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(left=-0.5)
        ax.set_title(dataset)
        ax.set_xlabel("$ per million judgments")
        ax.grid(True, alpha=0.3)
        if index % columns == 0:
            ax.set_ylabel("Cohen's κ vs consensus")
    for index in range(len(datasets), rows * columns):
        axes[index // columns][index % columns].axis("off")
    handles = [
        plt.Line2D([], [], marker=MARKERS[m], linestyle="", color="grey", label=MODALITY_NAMES[m])
        for m in MARKERS
    ]
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
