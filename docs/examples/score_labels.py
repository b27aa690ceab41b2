"""Score a judge's label file against human labels, as `mmjudge agree` does."""

from pathlib import Path

import mmjudge

# Quiet runs without a report (everything is written under the current folder).
QUIET = ["report.build=false", "runner.progress=false"]

# Label files in TREC qrels form ("query 0 doc grade"): here written from a lexical run's
# rows, the human grade of the first annotator beside the judge's.
summary = mmjudge.run_cell(["model=lexical", *QUIET], Path("results") / "lexical_run")
rows = mmjudge.open_run(Path("results") / "lexical_run").judgments()
human = [f"{r.query_id} 0 {r.result_id} {min(r.human_labels.values())}" for r in rows]
judge = [f"{r.query_id} 0 {r.result_id} {r.label}" for r in rows if r.label is not None]
Path("human.qrels").write_text("\n".join(human) + "\n", encoding="utf-8")
Path("lexical.qrels").write_text("\n".join(judge) + "\n", encoding="utf-8")

scores = mmjudge.score_labels("human.qrels", ["lexical.qrels"], n_boot=200)
row = scores["lexical"]
print(f"lexical: n={row.n}, kappa {row.score.kappa.estimate:.3f}, alpha {row.score.alpha:.3f}")
print(scores.text("table"))
