"""Run a small grid of cells, as `mmjudge sweep -m` does, and list every cell."""

import mmjudge

# Two prompts x two modalities: the text-only judge cannot look at images, so the image
# cells are skipped, with the reason kept.
sweep = mmjudge.run_sweep(
    [
        "model=lexical",
        "modality=text,image",
        "prompt=default,terse",
        "runner.progress=false",
    ]
)
for cell in sweep.cells:
    if cell.summary is not None and cell.status != "skipped":
        print(f"{cell.summary.name}: {cell.status}, kappa {cell.summary.metrics.kappa:.3f}")
    else:
        print(f"{cell.path.name}: {cell.status} ({cell.skip_reason})")
print(f"cells per status: {sweep.by_status}; ensembles: {len(sweep.ensembles)}")
if sweep.report is not None:
    print(f"report: {sweep.report / 'index.html'}")
