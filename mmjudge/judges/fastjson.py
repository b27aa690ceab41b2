"""JSON read with msgspec, about four times faster than :func:`json.loads` on the answers and
cached responses a run reads by the thousand, with :func:`json.loads` reading what msgspec
refuses (NaN and infinities, a byte-order mark, numbers beyond a float, lone surrogates), so
every value read is the one :func:`json.loads` gives (tests/judges/test_fastjson.py)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

#: msgspec's decoder: raises :class:`msgspec.MsgspecError` on what it refuses.
decode = msgspec.json.Decoder().decode


def loads(data: str | bytes) -> Any:
    """What ``json.loads(data)`` returns (and raises)."""
    try:
        return decode(data)
    except msgspec.MsgspecError:
        return json.loads(data)
