"""Agreement between judges and people: κ, α and the rest as pure functions of labels,
intervals from resampling queries, system rankings, and ensembles built from saved runs."""
