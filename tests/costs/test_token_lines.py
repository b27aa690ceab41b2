"""Counting a prompt's tokens line by line (with the lines every prompt repeats counted once)
gives exactly the number tiktoken gives for the whole text."""

from __future__ import annotations

import random

import pytest

from mmjudge.costs import tokens
from mmjudge.costs.tokens import count_tokens
from mmjudge.judges.descriptor import TokenCounting

#: Pieces chosen to meet the pre-tokenizer's edge cases at line starts and ends: runs of
#: newlines and spaces, carriage returns, slashes after newlines, punctuation before a newline,
#: contractions, digits, capitals, accented and non-Latin letters, tabs.
PIECES = [
    "\n",
    "\n\n",
    "\r\n",
    " \n",
    "  \n",
    "\n ",
    "\n  ",
    "\t",
    " ",
    "/",
    "//",
    "\n/",
    ".\n",
    "}\n",
    "'s",
    "'Ll",
    "123",
    "45678",
    "Query",
    "query",
    "RED",
    "red",
    "été",
    "über",
    "日本語",
    "Привет",
    ":",
    ": ",
    "-",
    "—",
    "?",
    "!\n\n",
    "x",
    "A",
    "0 = ",
    "name: ",
    "(",
    ")",
    "\u00a0",
    "😀",
    "a/b",
    "\n\t",
    "#",
    "##",
    "  ",
    "\n\n\n",
    "'",
    '"',
]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 60))) for _ in range(n)]


@pytest.mark.parametrize("model_id", ["gpt-4o-mini", "gpt-4"])
def test_lines_sum_to_the_whole_texts_count(model_id: str) -> None:
    encoding = tokens._encoding(model_id)
    assert encoding.name in tokens._LINE_SUMMABLE
    for text in _texts(7, 3000):
        by_lines = tokens._ordinary_tokens(encoding, text)
        assert by_lines == len(encoding.encode_ordinary(text)), repr(text)


def test_other_encodings_count_the_whole_text() -> None:
    encoding = tokens._encoding("gpt-4o-mini")

    class Other:
        name = "r50k_base"
        encode_ordinary = staticmethod(encoding.encode_ordinary)

    tokens._line_tokens.cache_clear()
    text = "line one\n\nline two\nline three"
    assert tokens._ordinary_tokens(Other(), text) == len(encoding.encode_ordinary(text))
    assert tokens._line_tokens.cache_info().currsize == 0


EXACT = TokenCounting(exact=True)


def test_a_repeated_line_is_encoded_once() -> None:
    tokens._line_tokens.cache_clear()
    instructions = "You grade search results.\nUse this scale:\n0 = not relevant\n"
    first = count_tokens(instructions + "Query: red dress\n", "gpt-4o-mini", EXACT)
    encoded = tokens._line_tokens.cache_info().misses
    second = count_tokens(instructions + "Query: navy skirt\n", "gpt-4o-mini", EXACT)
    assert tokens._line_tokens.cache_info().misses == encoded + 1  # only the new line
    assert first.exact and second.exact
    encoding = tokens._encoding("gpt-4o-mini")
    expected = len(encoding.encode_ordinary(instructions + "Query: navy skirt\n"))
    assert second.tokens == expected
