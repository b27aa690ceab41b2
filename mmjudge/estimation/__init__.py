"""Estimates from few human labels and many judge labels: prediction-powered means and system
measures (PPI++), their strata, planning how many labels to ask for, and which items next."""
