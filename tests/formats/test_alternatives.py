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


# Quoted keys that overlap (``"x"x"`` holds ``"x"`` twice), share a start, or are
# another's tail: the one pass that finds them all must find each where ``re`` does.
KEYED = (rb'"x"\s*:\s*1', rb'"tool_calls"\s*:', rb'"tool_call_id"\s*:', rb'"id"\s*:\s*"x"')
KEY_PIECES = [b'"x"', b"x", b'"', b":", b" ", b"1", b'"tool_calls"', b'"tool_call_id"', b'"id"']
KEY_PIECES += [b"tool_call", b'_id"', b"{", b"\n"]


@given(st.lists(st.sampled_from(KEY_PIECES), max_size=16), st.integers(0, 3))
def test_each_alternative_finds_its_leftmost_match_as_re_does(pieces, cut):
    data = b"".join(pieces)
    for pattern in KEYED:
        alone = Alternatives(pattern)
        expected = re.compile(pattern).search(data)
        other = data.translate(bytes.maketrans(b"x1", b"1x"))  # as long, other matches
        for sample in (data, other, data[: len(data) - cut] if cut else data, data):
            # Searched again, and on another sample between: what one sample's
            # search found is never taken for another's.
            found = alone.search(sample)
            want = re.compile(pattern).search(sample)
            assert (found and found.span()) == (want and want.span())
        assert (alone.search(data) and alone.search(data).span()) == (expected and expected.span())


def test_a_sample_as_long_as_the_last_is_searched_afresh():
    keys = Alternatives(rb'"tool_calls"\s*:', rb'"x"\s*:\s*1')
    assert keys.search(b'{"tool_calls": []}') is not None
    assert keys.search(b'{"tool_calla": []}') is None
    assert keys.search(b'{"a": 1, "x": 1}').span() == (9, 15)
    assert keys.search(b'{"x": 1, "a": 1}').span() == (1, 7)
