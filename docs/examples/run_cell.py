"""Forecast one cell, then judge it, and read the typed summary."""

import mmjudge

# What a paid judge would cost on the demo, without calling it (no key needed).
planned = mmjudge.forecast(["model=gpt4o_mini", "modality=text"])
print(f"forecast: {planned.sync.calls} calls, ${planned.sync.usd:.4f} at list prices")
print(f"through a batch API: ${planned.batch.usd:.4f}")

# The free offline judge, judged for real.
summary = mmjudge.run_cell(["model=lexical", "modality=text", "runner.progress=false"])
print(f"{summary.name}: {summary.status.status}, {summary.n_judgments} judgments")
print(f"kappa {summary.metrics.kappa:.3f}, ${summary.cost.total_usd:.4f}")
