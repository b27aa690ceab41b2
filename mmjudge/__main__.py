"""``python -m mmjudge <subcommand> …``: the same as the ``mmjudge`` command."""

from mmjudge.cli.main import run

run()
