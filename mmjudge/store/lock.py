"""One process at a time in a run folder.

Two processes judging one cell in one folder would each append rows and pay for items the
other is paying for whenever they do not share a response cache (their claims live in it).
The run holds an exclusive lock on ``<run>/.mmjudge.lock`` for its whole life; a second
process finds it held and stops before any call. The operating system lets the lock go when
its holder exits, however it ends (SIGKILL included), so a killed run never blocks its
resume. The file itself stays (removing it could let two processes lock two files).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from mmjudge.errors import RunFolderBusy

LOCK_FILE = ".mmjudge.lock"

try:
    import fcntl
except ImportError:  # Windows: no advisory locks of this kind; the claims still apply
    fcntl = None  # type: ignore[assignment]


@contextlib.contextmanager
def run_folder_lock(run_dir: Path) -> Iterator[None]:
    """Hold ``run_dir``'s lock while the block runs; :class:`RunFolderBusy`, in one line
    naming the folder, the holder and what to do, when another process holds it."""
    if fcntl is None:
        yield
        return
    path = run_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "another process"
            raise RunFolderBusy(
                f"run folder {run_dir} is in use by {holder}, which is running this cell; "
                "wait for it to finish (or stop it), or give this run another folder "
                "(hydra.run.dir=…, or hydra.sweep.dir=… for a multirun)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # lets the lock go
