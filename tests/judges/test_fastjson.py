"""JSON read with msgspec gives what json.loads gives (mmjudge/judges/fastjson.py), on the texts
where the two could differ."""

from __future__ import annotations

import json

import pytest

from mmjudge.judges import fastjson

#: Texts where msgspec and json.loads could differ: big and negative-zero numbers, float
#: round trips, repeated keys, values only json.loads reads, surrogates, a BOM, whitespace.
JSON_TEXTS = [
    b'{"id": "x", "choices": [{"message": {"content": "2\\nok"}}], "usage": {"a": 1}}',
    b'{"a": 123456789012345678901234567890, "b": -0.0, "c": 1.0000000000000002}',
    b'{"a": 1, "a": 2}',
    b'{"a": 1e400}',
    b'{"a": NaN, "b": -Infinity}',
    b'{"a": "\\ud800 \\u0000 \\u00e9"}',
    b'\xef\xbb\xbf{"a": 1}',
    b' [1, 2.5e-3, "x"] ',
]


@pytest.mark.parametrize("raw", JSON_TEXTS)
def test_values_are_those_json_loads_gives(raw: bytes) -> None:
    assert repr(fastjson.loads(raw)) == repr(json.loads(raw))
    if not raw.startswith(b"\xef\xbb\xbf"):  # json.loads refuses a BOM in a str
        text = raw.decode("utf-8")
        assert repr(fastjson.loads(text)) == repr(json.loads(text))


@pytest.mark.parametrize("bad", [b"", b"{", b"[1,]", b"<html>"])
def test_text_that_is_not_json_raises_what_json_loads_raises(bad: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        fastjson.loads(bad)
