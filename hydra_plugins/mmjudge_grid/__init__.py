"""mmjudge's Hydra sweeper: ``mmjudge sweep -m`` runs its grid through it
(``hydra/sweeper=mmjudge``) and ``mmjudge race`` with a ``hydra/launcher=…`` its race
(``hydra/sweeper=mmjudge_race``); see :mod:`hydra_plugins.mmjudge_grid.grid_sweeper`."""
