"""Ensembles built from saved runs without new calls: panels, cascades, the defaults a sweep
builds when it ends, and the virtual run folders they are written as."""
