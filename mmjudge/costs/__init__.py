"""Costs: price sheets (:mod:`~mmjudge.costs.sheets`), image-token rules
(:mod:`~mmjudge.costs.image_tokens`), the ledger (:mod:`~mmjudge.costs.ledger`: the cost of a
usage record, the batch discount), each answer priced once (:mod:`~mmjudge.costs.calls`),
forecasts and token counts, a run's dollars (:mod:`~mmjudge.costs.run_dollars`) and re-pricing.

Everything here is a pure function of usage and a price sheet, so a finished run can be
re-priced under any sheet without calling a provider.
"""
