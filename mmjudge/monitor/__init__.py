"""Keeping a chosen judge honest: canary checks that re-judge a fixed set of items and
compare each check with a baseline (:mod:`mmjudge.monitor.check`), kept in an append-only
history (:mod:`mmjudge.store.monitor_history`) that ``mmjudge monitor report`` draws."""
