"""Re-price a finished run under another price sheet, as `mmjudge reprice` does."""

from pathlib import Path

import mmjudge

# Quiet runs without a report (everything is written under the current folder).
QUIET = ["report.build=false", "runner.progress=false"]

run_dir = Path("results") / "priced_run"
mmjudge.run_cell(["model=lexical", *QUIET], run_dir)

# A local judge reports no token usage, so every figure is zero here; a paid judge's run
# gives its dollars under the older sheet the same way.
priced = mmjudge.reprice(run_dir, "2024-08-16", write=True)
old, new = priced.original, priced.repriced
print(f"{priced.model} per million judgments: ${old.usd_per_million:,.2f} under {old.sheet}")
print(f"{priced.model} per million judgments: ${new.usd_per_million:,.2f} under {new.sheet}")
for note in priced.notes:
    print(f"note: {note}")
print(f"written: {priced.path.name if priced.path else None}")
