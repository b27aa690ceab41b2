"""Values sent between this process and a forked child of it: pickles after their length.

Both ends run the same code from the same files (a fork), so pickles are safe here and
cheap; nothing read from a pipe ever comes from outside the process's own family.
"""

from __future__ import annotations

import pickle
from typing import IO, Any


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
