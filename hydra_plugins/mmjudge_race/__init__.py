"""mmjudge's race as a Hydra sweeper (``hydra/sweeper=mmjudge_race``): ``mmjudge race`` with a
``hydra/launcher=…`` runs each round's cells through that launcher (see
:mod:`hydra_plugins.mmjudge_race.race_sweeper`)."""
