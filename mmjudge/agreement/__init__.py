"""Agreement between judges and people: κ, α and the rest as pure functions of labels,
intervals from resampling queries, and system rankings. Ensembles built from saved runs are
:mod:`mmjudge.ensembles`."""
