"""Running a cell: requests go to the judge under one policy (cache, claims, budget, backoff,
error tally), one at a time (:mod:`~mmjudge.running.sync`) or through a provider's batch API
(:mod:`~mmjudge.running.batch`); :mod:`~mmjudge.running.cell` takes one sweep cell from its
config to its rows and summary."""
