"""The demo datasets, as package data (``pkg://mmjudge/datasets/<name>``)."""
