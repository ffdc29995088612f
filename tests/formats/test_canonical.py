"""The canonical shape (SPEC §2) as a file: a bare list or a ``{"messages": [...]}`` wrapper."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inspector.formats import FormatError, canonical, private

MESSAGES = [
    {"role": "system", "content": "be brief", "metadata": {}},
    {"role": "user", "content": "hi", "metadata": {}},
    {
        "role": "assistant",
        "content": "",
        "metadata": {"tool_calls": [{"tool_call_id": "c1", "name": "f", "arguments": {}}]},
    },
    {"role": "tool", "content": "ok", "metadata": {"tool_call_id": "c1"}},
]


def test_sniff_is_sure_only_when_messages_carry_metadata():
    assert canonical.sniff(orjson.dumps(MESSAGES)) > 0.8
    assert canonical.sniff(b'[{"role": "user", "content": "hi"}]') < 0.5
    assert canonical.sniff(b"hello") == 0.0


def test_bare_list_reads_as_is_with_record_numbers():
    parsed = canonical.parse(orjson.dumps(MESSAGES))
    assert parsed.format == "canonical"
    assert parsed.messages == MESSAGES
    assert parsed.sources == [[1], [2], [3], [4]]
    assert parsed.problems == []


def test_missing_metadata_and_null_content_are_filled_in():
    parsed = canonical.parse(b'[{"role": "user", "content": null}]')
    assert parsed.messages == [{"role": "user", "content": "", "metadata": {}}]


def test_bad_records_are_problems_named_by_record_number():
    data = orjson.dumps(
        [
            {"role": "user", "content": "hi"},
            "oops",
            {"role": "bot", "content": "x"},
            {"role": "user"},
        ]
    )
    parsed = canonical.parse(data)
    assert [m["content"] for m in parsed.messages] == ["hi", ""]
    assert parsed.sources == [[1], [4]]
    assert [(p.line, p.reason) for p in parsed.problems] == [
        (2, "a message must be an object, not a string"),
        (3, "role 'bot' is not one of system, user, assistant, tool"),
    ]


def test_bad_tool_call_metadata_is_a_problem_not_a_crash():
    bad = {"role": "assistant", "content": "", "metadata": {"tool_calls": "nope"}}
    parsed = canonical.parse(orjson.dumps([{"role": "user", "content": "hi"}, bad]))
    assert parsed.problems[0].line == 2
    assert "tool_calls" in parsed.problems[0].reason


def test_nothing_readable_is_a_format_error():
    with pytest.raises(FormatError, match="no record is a canonical message"):
        canonical.parse(b"[1, 2, 3]")
    with pytest.raises(FormatError, match="empty"):
        canonical.parse(b"[]")
    with pytest.raises(FormatError, match="not a list of messages"):
        canonical.parse(b'{"hello": 1}')


def test_other_shapes_are_refused_with_the_shape_they_are():
    chat = [
        {"role": "assistant", "tool_calls": [{"id": "a"}]},
        {"role": "tool", "tool_call_id": "a"},
    ]
    with pytest.raises(FormatError, match="openai-chat shape"):
        canonical.parse(orjson.dumps(chat))
    with pytest.raises(FormatError, match="gemini shape"):
        canonical.parse(b'[{"role": "model", "parts": [{"text": "x"}]}]')


def test_unchanged_history_writes_the_same_bytes():
    data = orjson.dumps({"messages": MESSAGES, "title": "t"}, option=orjson.OPT_INDENT_2)
    parsed = canonical.parse(data)
    assert canonical.serialise(parsed.messages, parsed) == data


def test_changed_history_keeps_the_wrapper_and_layout_and_drops_private_keys():
    data = (
        orjson.dumps({"title": "t", "messages": MESSAGES[:3]}, option=orjson.OPT_INDENT_2) + b"\n"
    )
    parsed = canonical.parse(data)
    healed = {"role": "tool", "content": "gone", "metadata": {"tool_call_id": "c1", "_x": 1}}
    out = canonical.serialise([*parsed.messages, healed], parsed)
    assert out.endswith(b"}\n") and b'\n  "title"' in out
    doc = orjson.loads(out)
    assert list(doc) == ["title", "messages"]
    assert doc["messages"][-1] == {
        "role": "tool",
        "content": "gone",
        "metadata": {"tool_call_id": "c1"},
    }


def test_round_trip_gives_the_same_messages():
    parsed = canonical.parse(orjson.dumps(MESSAGES))
    changed = [*parsed.messages, {"role": "user", "content": "more", "metadata": {}}]
    again = canonical.parse(canonical.serialise(changed, parsed))
    assert again.messages == changed


@settings(max_examples=200)
@given(
    st.lists(st.integers(0, 3), max_size=12),
    st.lists(st.integers(0, 3), max_size=12),
)
def test_same_start_counts_the_leading_run_of_the_same_objects(left, right):
    # Equal dicts that are not the same object end the run: repair's
    # untouched messages are the same objects, a changed one is a new dict.
    pool = [{"role": "user", "content": "x"} for _ in range(4)]
    before = [pool[i] for i in left]
    after = [pool[i] for i in right]
    expected = 0
    for a, b in zip(before, after, strict=False):
        if a is not b:
            break
        expected += 1
    assert private.same_start(before, after) == expected
    assert private.same_start(before, [dict(m) for m in after]) == 0
