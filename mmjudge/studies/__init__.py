"""Studies over saved runs and judges' labels: the cost–accuracy frontier and the choice of a
judge, ensembles' members, disagreements, drift, slices, robustness, stability, races."""
