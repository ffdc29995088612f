"""``Alternatives``: the sniffers' alternations, searched one alternative at a time."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.formats.detect import Alternatives, _leading_text

PATTERNS = (
    rb'"tool_calls"\s*:',
    rb'"role"\s*:\s*"(tool|developer)"',
    rb"api\.anthropic\.com",
    rb"ab*c",
    rb"x?yz",
    rb"(q|r)s",
)
PIECES = [b'"tool_calls"', b" ", b":", b'"role"', b'"tool"', b'"developer"', b"api.anthropic.com"]
PIECES += [b"apiXanthropic.com", b"ac", b"abbc", b"yz", b"xyz", b"qs", b"rs", b"s", b"{", b"\n"]


@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_finds_a_match_exactly_when_the_whole_alternation_does(pieces):
    data = b"".join(pieces)
    whole = re.compile(b"|".join(PATTERNS))
    assert bool(Alternatives(*PATTERNS).search(data)) == bool(whole.search(data))


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (rb'"tool_calls"\s*:', b'"tool_calls"'),
        (rb"api\.anthropic\.com", b"api"),
        (rb"generateContent", b"generateContent"),
        (rb"ab*c", b"a"),  # b may not be there at all
        (rb"ab?", b"a"),
        (rb"ab{2}", b"a"),
        (rb"ab+", b"ab"),
        (rb"(q|r)s", b""),
    ],
)
def test_leading_text_is_what_every_match_starts_with(pattern, text):
    assert _leading_text(pattern) == text
