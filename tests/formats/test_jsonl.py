"""The shared JSONL reader: every line accounted for, nothing skipped silently."""

from __future__ import annotations

import importlib

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.formats.base import FormatError
from inspector.formats.jsonl import (
    has_glued,
    head_records,
    join_lines,
    read_jsonl,
    record_type,
    release,
    unglue,
)


def test_records_carry_their_line_numbers_and_exact_bytes() -> None:
    data = b'{"a": 1}\n\n{"b":2}\n'
    read = read_jsonl(data)
    assert [(r.line, r.raw, r.value) for r in read.records] == [
        (1, b'{"a": 1}', {"a": 1}),
        (3, b'{"b":2}', {"b": 2}),
    ]
    assert read.problems == []
    assert read.final_newline is True


def test_glued_records_are_split_and_reported() -> None:
    read = read_jsonl(b'{"a":1}\n{"b":"}{"}{"c":[3]}\n')
    assert [(r.line, r.value, r.glued) for r in read.records] == [
        (1, {"a": 1}, False),
        (2, {"b": "}{"}, True),
        (2, {"c": [3]}, True),
    ]
    assert [(p.line, p.kind) for p in read.problems] == [(2, "glued")]


def test_glued_line_with_non_ascii_text_splits_at_the_right_byte() -> None:
    read = read_jsonl('{"t":"café ☕"}{"u":2}'.encode())
    assert [r.value for r in read.records] == [{"t": "café ☕"}, {"u": 2}]


def test_cut_last_line_is_truncated_and_earlier_lines_are_read() -> None:
    read = read_jsonl(b'{"a":1}\n{"b":')
    assert [r.value for r in read.records if r.ok] == [{"a": 1}]
    assert [(p.line, p.kind) for p in read.problems] == [(2, "truncated")]
    assert read.final_newline is False


def test_bad_line_in_the_middle_is_unreadable_with_a_reason() -> None:
    read = read_jsonl(b'{"a":1}\nnot json\n{"c":3}\n')
    assert [r.value for r in read.records if r.ok] == [{"a": 1}, {"c": 3}]
    (problem,) = read.problems
    assert (problem.line, problem.kind) == (2, "unreadable")
    assert problem.reason.startswith("not valid JSON")
    bad = [r for r in read.records if not r.ok]
    assert [(r.line, r.raw) for r in bad] == [(2, b"not json")]


def test_record_followed_by_garbage_is_not_taken_for_glued_records() -> None:
    read = read_jsonl(b'{"a":1}xyz\n')
    assert [(p.line, p.kind) for p in read.problems] == [(1, "unreadable")]


def test_byte_order_mark_and_crlf_are_read_and_kept() -> None:
    data = b'\xef\xbb\xbf{"a":1}\r\n{"b":2}\r\n'
    read = read_jsonl(data)
    assert [r.value for r in read.records] == [{"a": 1}, {"b": 2}]
    assert read.crlf is True
    assert join_lines([r.raw for r in read.records], read.final_newline) == data


def test_head_records_ignores_a_line_cut_by_the_sample() -> None:
    head = b'{"a":1}\n{"b":2}\n{"c":'
    assert head_records(head) == [{"a": 1}, {"b": 2}]
    assert head_records(b'{"a":1}\n{"b":2}\n{"c":3}\n', limit=2) == [{"a": 1}, {"b": 2}]


def test_join_lines_keeps_a_missing_final_newline() -> None:
    assert join_lines([b"{}", b"[]"], final_newline=False) == b"{}\n[]"
    assert join_lines([b"{}"]) == b"{}\n"
    assert join_lines([]) == b""


_LINES = st.one_of(
    st.dictionaries(
        st.text(max_size=5), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8), max_size=3
    ).map(orjson.dumps),
    st.sampled_from([b"", b"   ", b"\r", b"not json", b'{"cut": ', b"[1, 2]", b"\xef\xbb\xbf{}"]),
)


@given(lines=st.lists(_LINES, max_size=8), crlf=st.booleans(), final=st.booleans())
def test_every_line_is_a_record_with_its_number_and_bytes_or_a_problem(
    lines: list[bytes], crlf: bool, final: bool
) -> None:
    # The reader slices lines out of the file; what it gives must be what
    # splitting the file would: each non-blank line once, by number, byte for byte.
    ending = b"\r\n" if crlf else b"\n"
    data = ending.join(lines) + (ending if final and lines else b"")
    read = read_jsonl(data)
    split = data.split(b"\n")
    if data.endswith(b"\n"):
        split.pop()
    expected = [(n, raw) for n, raw in enumerate(split, 1) if raw.strip()]
    whole = [(r.line, r.raw) for r in read.records if not r.glued]
    glued_lines = {r.line for r in read.records if r.glued}
    assert whole == [(n, raw) for n, raw in expected if n not in glued_lines]
    for record in read.records:
        if record.ok:
            assert record.value == orjson.loads(record.raw.removeprefix(b"\xef\xbb\xbf"))
    failed = {r.line for r in read.records if not r.ok}
    assert failed == {p.line for p in read.problems if p.kind in ("unreadable", "truncated")}


def test_a_released_record_decodes_its_line_again_when_read() -> None:
    data = b'\xef\xbb\xbf{"a": 1}\r\n{"b": [2]}\n'
    read = read_jsonl(data)
    first, second = read.records
    release(read.records)
    assert (first.value, second.value) == ({"a": 1}, {"b": [2]})
    assert second.value is not second.value  # decoded afresh each time, nothing held
    assert (first.raw, second.raw) == (b'\xef\xbb\xbf{"a": 1}\r', b'{"b": [2]}')


def test_records_of_glued_lines_keep_their_values_when_released() -> None:
    read = read_jsonl(b'{"a":1}{"b":2}\n')
    values = [record.value for record in read.records]
    release(read.records)
    assert [record.value for record in read.records] == values == [{"a": 1}, {"b": 2}]
    assert all(record.value is value for record, value in zip(read.records, values, strict=True))


def test_unglue_writes_each_record_of_a_glued_line_on_its_own_line() -> None:
    data = b'{"a":1}\n\n{"b":"}{"}{"c":[3]}\nnot json\n{"d":4}{"e":5}'
    read = read_jsonl(data)
    assert has_glued(read.problems)
    out = unglue(data, read.records, read.crlf)
    assert out == b'{"a":1}\n\n{"b":"}{"}\n{"c":[3]}\nnot json\n{"d":4}\n{"e":5}'
    again = read_jsonl(out)
    assert not has_glued(again.problems)
    assert [r.value for r in again.records if r.ok] == [r.value for r in read.records if r.ok]


def test_unglue_keeps_crlf_and_a_byte_order_mark() -> None:
    data = b'\xef\xbb\xbf{"a":1}\r{"b":2}\r\n{"c":3}\r\n'
    read = read_jsonl(data)
    assert unglue(data, read.records, read.crlf) == b'\xef\xbb\xbf{"a":1}\r\n{"b":2}\r\n{"c":3}\r\n'


def test_unglue_gives_a_file_without_glued_lines_back_as_it_is() -> None:
    data = b'{"a":1}\n{"b":2}\n'
    read = read_jsonl(data)
    assert not has_glued(read.problems)
    assert unglue(data, read.records, read.crlf) is data


_RECORDS = st.dictionaries(
    st.text(max_size=5), st.text(max_size=8) | st.integers(-(2**63), 2**63 - 1), max_size=3
)


@given(
    records=st.lists(_RECORDS, min_size=1, max_size=8),
    lost=st.sets(st.integers(0, 6)),
    crlf=st.booleans(),
    final=st.booleans(),
)
def test_a_lost_newline_is_what_unglue_puts_back(
    records: list[dict], lost: set[int], crlf: bool, final: bool
) -> None:
    # Records written one a line, some of the newlines between them lost.
    lines = [orjson.dumps(r) + (b"\r" if crlf else b"") for r in records]
    data = join_lines(lines, final)
    glued = b""
    for n, line in enumerate(lines):
        glued += line + (b"" if n in lost and n + 1 < len(lines) else b"\n")
    if not final:
        glued = glued.removesuffix(b"\n")
    read = read_jsonl(glued)
    assert unglue(glued, read.records, read.crlf) == data


def _head_records_plainly(head: bytes, limit: int) -> list[object]:
    # ``head_records`` as defined, with nothing shared between calls.
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    out = []
    for raw in head.split(b"\n", limit)[:limit]:
        if raw.strip():
            try:
                out.append(orjson.loads(raw))
            except orjson.JSONDecodeError:
                pass
    return out


@given(
    samples=st.lists(st.lists(_LINES, max_size=60).map(b"\n".join), min_size=1, max_size=3),
    limits=st.lists(st.sampled_from([1, 2, 5, 8, 20, 49, 50, 51, 80]), min_size=1, max_size=6),
)
def test_head_records_shared_by_the_sniffers_is_the_plain_definition(
    samples: list[bytes], limits: list[int]
) -> None:
    # The sniffers ask about one sample with several limits, then about the next file's.
    for head in samples:
        for limit in limits:
            assert head_records(head, limit) == _head_records_plainly(head, limit)
            copy = bytes(bytearray(head))  # an equal sample that is another object
            assert head_records(copy, limit) == _head_records_plainly(head, limit)
            # A sample as long, with other values: what the last one held is not taken.
            other = head.translate(_DIGITS)
            assert head_records(other, limit) == _head_records_plainly(other, limit)


_DIGITS = bytes.maketrans(b"0123456789", b"9876543210")


@pytest.mark.parametrize("shape", ["copilot", "kimi_code", "droid", "qwen"])
@pytest.mark.parametrize("kind", [[], {}, 1, None])
def test_a_record_whose_type_is_no_string_is_refused_as_the_shape_words_it(
    shape: str, kind: object
) -> None:
    module = importlib.import_module(f"inspector.formats.{shape}")
    with pytest.raises(FormatError, match=r"^line 1: (a record|an event) of type "):
        module.parse(orjson.dumps({"type": kind}) + b"\n")


def test_a_record_without_a_type_says_so() -> None:
    with pytest.raises(FormatError, match="a record without a 'type' Droid does not write"):
        record_type({"id": 1}, 3, {"message"}, "Droid")
    assert record_type({"type": "message"}, 3, {"message"}, "Droid") == "message"
