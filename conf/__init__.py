"""The shipped configuration groups, as package data (Hydra's ``pkg://mmjudge.conf``)."""
