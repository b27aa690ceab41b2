"""What the command line prints when a cell or a sweep ends, and the exit code it ends with.

Statuses and their exit codes are defined in :mod:`mmjudge.store.status`; this module keeps
the code a process will exit with (the most severe cell's), and words the lines a stopped
run prints: what was kept and the command that resumes it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterator, Sequence

from mmjudge.engine.interrupt import signal_name
from mmjudge.store import RunSummary
from mmjudge.store.status import EXIT_BUDGET, EXIT_FAILED, EXIT_PARTIAL


def resume_command(
    argv: Sequence[str], directory: str, *, multirun: bool, program: str | None = None
) -> str:
    """The command that picks a stopped run (or sweep) up where it stopped.

    The same arguments, with the run directory pinned (``hydra.run.dir``, or
    ``hydra.sweep.dir`` for a multirun) so finished rows are kept and only the rest is judged.
    """
    key = "hydra.sweep.dir" if multirun else "hydra.run.dir"
    kept = [a for a in argv if not a.lstrip("+~").startswith(("hydra.run.dir=", key + "="))]
    head = program or f"{_python()} -m mmjudge.sweep"
    return " ".join([head, *(shlex.quote(a) for a in kept), shlex.quote(f"{key}={directory}")])


def _python() -> str:
    """How the running interpreter is named in a printed command (relative when it can be)."""
    executable = sys.executable or "python"
    return shlex.quote(executable)


#: The exit status of a command given input it cannot use (a bad file, flag or directory).
EXIT_USAGE = 2


def file_error_line(error: OSError) -> str:
    """One line for a file or folder the command could not read or write: which, why, and
    what to do (the folder settings of a sweep, a report's ``--out``)."""
    what = error.strerror or type(error).__name__
    return (
        f"cannot write or read {error.filename} ({what}); give a folder you can write to "
        "(paths.results, paths.reports, hydra.run.dir; --out for a report) or free space there"
    )


def fail(prog: str, problem: object) -> int:
    """Say what is wrong in one line on stderr (``<prog>: <problem>``) and return the exit
    status for unusable input: every ``mmjudge`` subcommand ends a bad invocation this way."""
    print(f"{prog}: {problem}", file=sys.stderr)
    return EXIT_USAGE


_exit = {"code": 0}


def _severity(code: int) -> int:
    """Rank of an exit code: the same order as :func:`sweep_exit_code`."""
    if code >= 128:
        return 4
    return {0: 0, EXIT_PARTIAL: 1, EXIT_BUDGET: 2, EXIT_FAILED: 3}.get(code, 3)


def note_exit(code: int, *, replace: bool = False) -> None:
    """Remember the exit code for the end of the process (the most severe one wins, unless
    ``replace``: a finished multirun sets the code of the whole sweep)."""
    if replace or _severity(code) > _severity(_exit["code"]):
        _exit["code"] = code


def pending_exit() -> int:
    """The exit code noted so far (0 when every cell was fine)."""
    return _exit["code"]


def interrupted_lines(summary: RunSummary, directory: str, *, multirun: bool) -> str:
    """What an interrupted cell prints: what was kept, and the command that resumes."""
    kept = summary.n_judgments
    total = summary.n_items
    of = f" of {total}" if isinstance(total, int) else ""
    head = f"mmjudge: interrupted; {kept}{of} judgments of this cell are saved. " + (
        "The sweep stops here; resume it (finished rows are kept, answers already paid "
        "for come from the response cache) with:"
        if multirun
        else "Resume it (finished rows are kept) with:"
    )
    return f"{head}\n  {resume_command(sys.argv[1:], directory, multirun=multirun)}"


def stopped_between_calls(signal_number: int, argv: Sequence[str]) -> str:
    """The line for a stop outside the judging loop (reading data, writing the report)."""
    multirun = any(a in ("-m", "--multirun") for a in argv)
    where = "hydra.sweep.dir=<the sweep folder>" if multirun else "hydra.run.dir=<the run folder>"
    return (
        f"stopped by {signal_name(signal_number)}; nothing in flight was lost. Run the same "
        f"command again with {where} to go on where it stopped"
    )


#: The exit status of a command whose reader went away (a shell's for a process that SIGPIPE
#: ended: 128 + 13).
EXIT_PIPE_CLOSED = 128 + 13


@contextlib.contextmanager
def quiet_when_output_closes() -> Iterator[None]:
    """End the command quietly, with :data:`EXIT_PIPE_CLOSED`, when whatever reads its output
    stops reading (``mmjudge testbank show … | head``), rather than with a traceback.

    Output is flushed inside the block, so a pipe that closed while the last lines sat in the
    buffer is caught here too; then standard output is pointed at the null device, so the
    interpreter's own flush at exit has nowhere to fail (the recipe of Python's ``signal``
    documentation).
    """
    try:
        try:
            yield
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(EXIT_PIPE_CLOSED) from None
