"""Running a cell: requests go to the judge under one policy (cache, claims, budget, backoff,
error tally), one at a time (:mod:`~mmjudge.engine.sync`) or through a provider's batch API
(:mod:`~mmjudge.engine.batch`); :mod:`~mmjudge.engine.cell` takes one sweep cell from its
config to its rows and summary."""
