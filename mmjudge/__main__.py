"""``python -m mmjudge`` runs the default sweep cell."""

from mmjudge.sweep import main

main()
