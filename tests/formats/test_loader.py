"""``inspector.formats.load``: detection, refusals with reasons, and export to provider shapes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.formats import FormatError, Parsed, export, export_wire, load, strip_private, to_wire

CHAT = [
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
]

SHAPES: list[tuple[str, Any]] = [
    ("canonical", [{"role": "user", "content": "hi", "metadata": {}}]),
    (
        "canonical",
        {"messages": [{"role": "tool", "content": "x", "metadata": {"tool_call_id": "a"}}]},
    ),
    ("openai-chat", CHAT),
    ("openai-chat", {"model": "gpt-4o", "messages": CHAT}),
    (
        "anthropic",
        {
            "model": "claude",
            "max_tokens": 5,
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
            ],
        },
    ),
    (
        "responses",
        {
            "input": [
                {"role": "user", "content": "hi"},
                {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "ok"},
            ]
        },
    ),
    (
        "gemini",
        {
            "contents": [
                {"role": "user", "parts": [{"text": "hi"}]},
                {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]},
            ]
        },
    ),
    (
        "gemini",
        {"sessionId": "s", "messages": [{"id": "1", "type": "user", "content": "hi"}]},
    ),
]


@pytest.mark.parametrize(
    ("expected", "doc"), SHAPES, ids=[f"{s}-{i}" for i, (s, _) in enumerate(SHAPES)]
)
def test_load_detects_the_shape(expected: str, doc: Any):
    parsed = load(orjson.dumps(doc))
    assert isinstance(parsed, Parsed)
    assert parsed.format == expected
    assert parsed.messages
    assert len(parsed.sources) == len(parsed.messages)


def test_load_reads_chat_json_lines():
    data = b"\n".join(orjson.dumps(m) for m in CHAT) + b"\n"
    parsed = load(data)
    assert parsed.format == "openai-chat"
    assert parsed.sources == [[1], [2], [3]]


def test_a_plain_role_content_list_is_read_as_openai_chat():
    parsed = load(b'[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]')
    assert parsed.format == "openai-chat"


@pytest.mark.parametrize("data", [b"", b"   \n\t\n"])
def test_empty_input_says_the_file_is_empty(data: bytes):
    with pytest.raises(FormatError, match="empty"):
        load(data)


def test_binary_input_is_refused_as_binary():
    with pytest.raises(FormatError, match="binary"):
        load(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def test_invalid_utf8_is_named_with_its_offset():
    with pytest.raises(FormatError, match=r"not UTF-8 text \(invalid byte at offset 2\)"):
        load(b'[{\xff"role": "user"}]')


def test_json_that_is_no_transcript_lists_every_shape_tried():
    with pytest.raises(FormatError) as caught:
        load(b'{"hello": "world"}')
    tried = [name for name, _ in caught.value.attempts]
    assert sorted(tried) == sorted(formats.FORMATS)
    assert all(reason for _, reason in caught.value.attempts)
    for name in formats.FORMATS:
        assert f"{name}:" in str(caught.value)


def test_garbage_text_is_a_format_error():
    with pytest.raises(FormatError, match="not a transcript"):
        load(b"hello, this is a shopping list\n- eggs\n")


def test_named_format_is_used_and_its_refusal_explained():
    assert load(orjson.dumps(CHAT), format="openai-chat").format == "openai-chat"
    with pytest.raises(FormatError, match=r"^not gemini: ") as caught:
        load(orjson.dumps(CHAT), format="gemini")
    assert caught.value.attempts[0][0] == "gemini"


def test_unknown_format_name_lists_the_known_ones():
    with pytest.raises(FormatError, match=r"unknown format 'xml'.*openai-chat"):
        load(b"[]", format="xml")


def test_a_shape_module_crash_becomes_a_format_error(monkeypatch: pytest.MonkeyPatch):
    def parse(data: bytes) -> Parsed:
        raise KeyError("oops")

    broken = SimpleNamespace(NAME="broken", sniff=lambda head: 1.0, parse=parse)
    monkeypatch.setattr(formats, "FORMATS", {"broken": broken})
    with pytest.raises(FormatError) as caught:
        load(b'{"a": 1}')
    assert caught.value.attempts == [("broken", "could not be read (KeyError: 'oops')")]


def test_text_input_is_accepted_as_utf8():
    assert load('[{"role": "user", "content": "héllo"}]').messages[0]["content"] == "héllo"


# --- export -------------------------------------------------------------------------------


def history(*ids: str) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go", "metadata": {}}]
    for cid in ids:
        call = {"tool_call_id": cid, "name": "f", "arguments": {}}
        messages.append({"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}})
        messages.append({"role": "tool", "content": "ok", "metadata": {"tool_call_id": cid}})
    return messages


def test_export_renames_ids_anthropic_refuses_without_collisions():
    # The later call's own id is the earlier one's new id: the later one gets a new id
    # too, so the earlier call's id does not change when the later call is appended.
    wire, renamed = export_wire(history("functions.search:0", "functions_search_0"), "anthropic")
    assert renamed == {
        "functions.search:0": "functions_search_0",
        "functions_search_0": "functions_search_0_1",
    }
    ids = [
        block.get("id") or block.get("tool_use_id")
        for message in wire["messages"]
        for block in message["content"]
        if isinstance(block, dict) and block["type"] in ("tool_use", "tool_result")
    ]
    assert ids == ["functions_search_0"] * 2 + ["functions_search_0_1"] * 2
    # An id the provider takes that comes first keeps it; the rewrite goes around it.
    _, renamed = export_wire(history("functions_search_0", "functions.search:0"), "anthropic")
    assert renamed == {"functions.search:0": "functions_search_0_1"}


def test_export_keeps_ids_other_providers_accept():
    messages = history("Bash:4")
    for provider in ("openai-chat", "responses", "gemini"):
        wire, renamed = export_wire(messages, provider)
        assert renamed == {}
        assert wire == to_wire(messages, provider)
        assert b"Bash:4" in orjson.dumps(wire)


def test_export_names_an_empty_id():
    _, renamed = export_wire(history(""), "openai-chat")
    assert renamed == {"": "call"}


def test_export_is_deterministic_json():
    messages = history("a:1", "a:1")
    assert export(messages, "anthropic") == export(messages, "anthropic")
    assert orjson.loads(export(messages, "anthropic"))["messages"][1]["content"][0]["id"] == "a_1"


def test_to_wire_leaves_ids_as_they_are():
    wire = to_wire(history("a:1"), "anthropic")
    assert wire["messages"][1]["content"][0]["id"] == "a:1"


def test_unknown_provider_is_a_value_error():
    with pytest.raises(ValueError, match="unknown provider"):
        export_wire(history("a"), "cohere")


def test_strip_private_removes_underscore_keys_without_touching_the_input():
    message = {"role": "user", "content": "x", "metadata": {"_rec": 3, "note": "kept"}}
    plain = {"role": "user", "content": "y", "metadata": {}}
    clean = strip_private([message, plain])
    assert clean == [{"role": "user", "content": "x", "metadata": {"note": "kept"}}, plain]
    assert message["metadata"] == {"_rec": 3, "note": "kept"}
    assert clean[1] is plain
