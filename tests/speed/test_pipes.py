"""Forked children (mmjudge/speed/pipes.py): the messages they exchange, and a child ending with
the process that forked it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mmjudge.speed.pipes import read_message, write_message
from tests.helpers import REPO_ROOT


def test_messages_read_back_in_order_and_a_cut_message_is_an_error() -> None:
    pipe = io.BytesIO()
    write_message(pipe, {"a": [1, 2.5, "é"]})
    write_message(pipe, None)
    pipe.seek(0)
    assert read_message(pipe) == {"a": [1, 2.5, "é"]}
    assert read_message(pipe) is None
    with pytest.raises(EOFError):
        read_message(pipe)
    with pytest.raises(EOFError):
        read_message(io.BytesIO(pipe.getvalue()[:12]))


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in {"Z", "X"}


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")
def test_a_child_ends_when_the_process_that_forked_it_is_killed() -> None:
    script = textwrap.dedent(
        """
        import os, signal, sys, time
        from mmjudge.speed.pipes import die_with_parent
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            die_with_parent(parent)
            time.sleep(60)
            os._exit(0)
        print(pid, flush=True)
        time.sleep(0.3)  # the child is set up
        os.kill(parent, signal.SIGKILL)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    child = int(process.stdout.readline())  # not read to its end: the child holds it open
    process.wait(30)
    process.stdout.close()
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _running(child)
    if alive:  # clean up before failing
        os.kill(child, 9)
    assert not alive
