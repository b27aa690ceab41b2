"""The ``mmjudge`` command: one thin module per subcommand over the library."""
