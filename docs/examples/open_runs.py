"""Open a saved run and a saved sweep and read them back."""

import mmjudge

# Quiet runs without a report (everything is written under the current folder).
QUIET = ["report.build=false", "runner.progress=false"]

# Something to open: a sweep of one judge over two prompts.
folder = mmjudge.run_sweep(["model=lexical", "prompt=default,terse", *QUIET]).path

sweep = mmjudge.open_sweep(folder)
print(f"{folder.name}: {len(sweep.cells)} cells, {len(sweep.ensembles)} ensembles")

run = mmjudge.open_run(sweep.cells[0].path)
print(f"{run.summary.name}: {run.status}, {run.summary.n_judgments} rows")
first = run.judgments()[0]
print(f"first row: query {first.query_id}, result {first.result_id}, grade {first.label}")
print(f"humans said {first.human_labels}")
