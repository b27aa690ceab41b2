"""The one seam for running cells: a typed grid composed once (:mod:`~mmjudge.grid.cells`),
launchers that bring cells to a prefix of the items (:mod:`~mmjudge.grid.launch`: in this
process, in processes of their own, or through Hydra's launchers), and one loop of rounds
(:mod:`~mmjudge.grid.rounds`) that a sweep runs once at every item and a race runs until its
rule decides (:mod:`~mmjudge.grid.race`). ``mmjudge sweep -m``, ``mmjudge race``, the library's
:func:`mmjudge.run_sweep` and :func:`mmjudge.run_race`, and the race's simulation over known
grades all go through here."""
