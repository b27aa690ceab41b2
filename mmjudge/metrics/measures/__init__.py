"""The agreement measures, one module each. A module here declares one
:class:`~mmjudge.metrics.catalogue.Measure` and registers it
(:func:`~mmjudge.metrics.catalogue.register`); :func:`mmjudge.metrics.catalogue.measures`
loads every module of this package, so a new file is all a new measure needs."""
