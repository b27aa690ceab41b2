"""Forked children of this process: the values sent between them (pickles after their
length), and a child's tie to its parent.

Both ends run the same code from the same files (a fork), so pickles are safe here and
cheap; nothing read from a pipe ever comes from outside the process's own family.
"""

from __future__ import annotations

import os
import pickle
import signal
from typing import IO, Any

#: ``prctl`` option: the signal a process gets when its parent ends.
_PR_SET_PDEATHSIG = 1


def write_message(pipe: IO[bytes], value: Any) -> None:
    """``value`` pickled, after its length."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(len(data).to_bytes(8, "big") + data)
    pipe.flush()


def read_message(pipe: IO[bytes]) -> Any:
    """The next value :func:`write_message` wrote; raises ``EOFError`` on a short read."""
    header = pipe.read(8)
    if len(header) < 8:
        raise EOFError("no message")
    size = int.from_bytes(header, "big")
    data = pipe.read(size)
    if len(data) < size:
        raise EOFError("message cut short")
    return pickle.loads(data)


def die_with_parent(parent: int) -> None:
    """In a forked child: have the kernel kill it when ``parent`` (the process that forked it)
    ends, so a child whose parent was killed does not go on using a core (Linux; elsewhere
    nothing changes); leave at once if the parent has already gone."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(1)
