"""Tests of the project as a whole: the package's shape, the README's commands, CI, the
benchmarks' helpers and the test helpers themselves."""
