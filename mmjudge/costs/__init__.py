"""Costs: price sheets, image-token rules, the ledger, forecasts, re-pricing and token counts.

Everything here is a pure function of usage and a price sheet, so a finished run can be
re-priced under any sheet without calling a provider.
"""
