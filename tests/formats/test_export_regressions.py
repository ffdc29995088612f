"""A repaired history exports to every provider's shape in a form that provider accepts.

Each example below is a case the fuzzer or a corpus file found: the
canonical history is fine (repair leaves it as it is, or repairs it), but a
naive export gives a body the provider refuses. The export must fit the
provider's rules without inventing events. The property at the end throws
every kind of content part the shape modules make at the export.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.engine.providers import PROVIDERS, validate
from inspector.formats import anthropic, gemini, openai_chat, responses
from tests.engine.helpers import repair_history
from tests.testdata import CORPUS, read

Message = dict[str, Any]


def msg(role: str, content: Any, **md: Any) -> Message:
    return {"role": role, "content": content, "metadata": md}


def call(cid: str, name: str = "shell", arguments: Any = None) -> dict[str, Any]:
    return {"tool_call_id": cid, "name": name, "arguments": arguments or {"cmd": "ls"}}


REASONING = {
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Planning"}],
    "content": None,
    "encrypted_content": None,
}


def assert_accepted_everywhere(messages: list[Message]) -> None:
    repaired = repair_history(messages).messages
    for provider in PROVIDERS:
        wire, _ = formats.export_wire(repaired, provider)
        problems = validate(provider, wire)
        assert problems == [], (provider, [p.text for p in problems], orjson.dumps(wire))


# --- found by the fuzzer and the corpus -------------------------------------------------


def test_history_starting_with_reasoning_only_assistant_message():
    # A Codex rollout whose first item is a reasoning item: Anthropic refused
    # "messages.0: all messages must have non-empty content ...".
    messages = [
        msg("assistant", [REASONING]),
        msg("user", [{"type": "text", "text": "Create a test file"}]),
        msg("assistant", "On it.", tool_calls=[call("call_1")]),
        msg("tool", "done", tool_call_id="call_1"),
    ]
    assert_accepted_everywhere(messages)
    wire = anthropic.to_wire(messages)
    assert [m["role"] for m in wire["messages"]] == ["user", "assistant", "user"]


def test_assistant_message_of_unknown_parts_between_turns():
    # A damaged part (a flipped byte in "type") is not one the API knows.
    broken = {" ype": "output_text", "text": "Created it."}
    messages = [
        msg("user", "go"),
        msg("assistant", "", tool_calls=[call("a")]),
        msg("tool", "", tool_call_id="a"),
        msg("assistant", [broken]),
        msg("user", "next"),
    ]
    assert_accepted_everywhere(messages)
    roles = [m["role"] for m in anthropic.to_wire(messages)["messages"]]
    assert roles == ["user", "assistant", "user", "user"]


def test_claude_code_whitespace_text_blocks_before_thinking():
    # Claude Code stores the API's "\n\n" text block ahead of a thinking block;
    # Anthropic refuses it: "text content blocks must contain non-whitespace text".
    path = (
        CORPUS
        / "claude-code"
        / "projects"
        / "-experiments-ideas"
        / "03eb5929-52b3-4b13-ada3-b93ae35806b8.jsonl"
    )
    parsed = formats.load(read(path))
    diagnosis = diagnose(parsed)
    assert not any(v["after"] for v in diagnosis.providers.values()), diagnosis.providers
    wire, _ = formats.export_wire(parsed.messages, "anthropic")
    blocks = [b for m in wire["messages"] for b in m["content"] if isinstance(m["content"], list)]
    assert all(b["text"].strip() for b in blocks if b["type"] == "text")
    assert any(b["type"] == "thinking" for b in blocks)  # what is real stays


# --- Anthropic ----------------------------------------------------------------------------


def test_anthropic_drops_blank_text_and_the_messages_it_empties():
    messages = [
        msg("user", "  "),
        msg("user", "hi"),
        msg(
            "assistant",
            [{"type": "text", "text": "\n\n"}, {"type": "text", "text": "ok"}],
            tool_calls=[call("a")],
        ),
        msg("tool", "r", tool_call_id="a"),
        msg("assistant", [{"type": "text", "text": " "}]),
        msg("user", [{"type": "text", "text": ""}]),
        msg("user", "bye"),
    ]
    assert_accepted_everywhere(messages)
    assert anthropic.to_wire(messages)["messages"] == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "a", "name": "shell", "input": {"cmd": "ls"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "r"}]},
        {"role": "user", "content": "bye"},
    ]


def test_anthropic_system_message_mid_history_is_user_text():
    messages = [
        msg("system", "be brief"),
        msg("user", "hi"),
        msg("assistant", "hello"),
        msg("system", "now be formal"),
        msg("user", "ok"),
    ]
    wire = anthropic.to_wire(messages)
    assert wire["system"] == "be brief"
    assert wire["messages"][2] == {"role": "user", "content": "[system message]\nnow be formal"}
    assert all(m["role"] in ("user", "assistant") for m in wire["messages"])


def test_anthropic_blank_system_prompt_is_left_out():
    wire = anthropic.to_wire([msg("system", " "), msg("user", "hi")])
    assert "system" not in wire


def test_anthropic_final_assistant_text_loses_trailing_whitespace():
    # The API refuses "final assistant content cannot end with trailing whitespace".
    messages = [msg("user", "hi"), msg("assistant", [{"type": "text", "text": "Done.\n"}])]
    assert anthropic.to_wire(messages)["messages"][-1]["content"] == [
        {"type": "text", "text": "Done."}
    ]
    plain = anthropic.to_wire([msg("user", "hi"), msg("assistant", "Done. ")])
    assert plain["messages"][-1]["content"] == "Done."


# --- OpenAI Chat --------------------------------------------------------------------------


def test_openai_chat_never_sends_an_empty_content_array():
    messages = [
        msg("user", [{"type": "gemini", "part": {"text": "t", "thought": True}}]),
        msg("user", "hi"),
        msg("assistant", [{"type": "thinking", "thinking": "hm"}], tool_calls=[call("a")]),
        msg("tool", "r", tool_call_id="a"),
        msg("assistant", [REASONING]),
        msg("user", "next"),
    ]
    assert_accepted_everywhere(messages)
    wire = openai_chat.to_wire(messages)["messages"]
    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "user"]
    assert wire[1]["content"] is None
    assert all(m["content"] != [] for m in wire)


def test_openai_chat_text_that_is_not_a_string_does_not_crash_the_export():
    wire = openai_chat.to_wire([msg("system", [{"type": "text", "text": 5}]), msg("user", "hi")])
    assert wire["messages"][0] == {"role": "system", "content": ""}


# --- Responses ----------------------------------------------------------------------------


def test_responses_leaves_out_call_items_kept_as_parts_and_repeated_items():
    stray_call = {"type": "function_call", "call_id": None, "name": "f", "arguments": "{}"}
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    messages = [
        msg("user", [{"type": "thinking", "thinking": "x"}]),
        msg("user", "hi"),
        msg("assistant", [stray_call, search, {"type": "text", "text": "found"}]),
        msg("user", "again"),
        msg("assistant", [search, {"type": "text", "text": "same"}]),
    ]
    assert_accepted_everywhere(messages)
    items = responses.to_wire(messages)["input"]
    assert [i.get("type") for i in items].count("web_search_call") == 1
    assert not any(i.get("type") == "function_call" for i in items)
    assert all(i.get("content") != [] for i in items)


# --- Gemini -------------------------------------------------------------------------------


def test_gemini_drops_turns_left_without_parts_and_joins_their_neighbours():
    messages = [
        msg("user", "hi"),
        msg("assistant", "looking"),
        msg("user", [{"type": "thinking", "thinking": "x"}]),
        msg("assistant", "", tool_calls=[call("a")]),
        msg("tool", '{"ok": true}', tool_call_id="a"),
        msg("assistant", [REASONING]),
        msg("user", [{"type": "text", "text": ""}, {"type": "text", "text": "more"}]),
    ]
    assert_accepted_everywhere(messages)
    contents = gemini.to_wire(messages)["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert contents[1]["parts"][0] == {"text": "looking"}
    assert "functionCall" in contents[1]["parts"][1]
    assert contents[2]["parts"][1:] == [{"text": "more"}]


def test_gemini_call_and_response_parts_reading_could_not_pair_are_not_sent():
    messages = [
        msg("user", [{"type": "gemini", "part": {"functionResponse": "garbage"}}, "x"]),
        msg("user", "hi"),
        msg(
            "assistant",
            [{"type": "gemini", "part": {"functionCall": None}}, {"type": "text", "text": "ok"}],
            tool_calls=[call("a")],
        ),
        msg("tool", "r", tool_call_id="a"),
    ]
    assert_accepted_everywhere(messages)
    contents = gemini.to_wire(messages)["contents"]
    calls = [p for c in contents for p in c["parts"] if "functionCall" in p]
    responses_ = [p for c in contents for p in c["parts"] if "functionResponse" in p]
    assert len(calls) == len(responses_) == 1


# --- every kind of part, every kind of turn -----------------------------------------------

IDS = ["c1", "c2", "functions.search:0", "", "call_0"]
PARTS: list[Any] = [
    {"type": "text", "text": ""},
    {"type": "text", "text": " "},
    {"type": "text", "text": "\n\n"},
    {"type": "text", "text": "words"},
    {"type": "text", "text": "tail \n"},
    {"type": "text", "text": 5},
    REASONING,
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "thinking", "thinking": "t", "signature": "s"},
    {"type": "redacted_thinking", "data": "x"},
    {"type": "gemini", "part": {"text": "th", "thought": True}},
    {"type": "gemini", "part": {"functionCall": None}},
    {"type": "gemini", "part": {"functionResponse": {"name": "f", "response": {}}}},
    {"type": "gemini", "part": {"functionCall": {"name": "f", "args": {}}}},
    {"type": "gemini", "part": None},
    {"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="},
    {"type": "image", "url": "https://example.com/a.png"},
    {"type": "function_call", "call_id": "zz", "name": "f", "arguments": "{}"},
    {"type": "function_call", "call_id": None},
    {"type": "function_call_output", "call_id": "zz", "output": "o"},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type": "tool_use", "id": "tu", "name": "f", "input": {}},
    {"type": "tool_result", "tool_use_id": "tu", "content": "r"},
    {"type": "image_url", "image_url": {"url": "https://example.com"}},
    {"type": "refusal", "refusal": "no"},
    "bare string",
    None,
]
CONTENT = st.one_of(
    st.sampled_from(["", " ", "\n", "hello", "trailing \n"]),
    st.lists(st.sampled_from(PARTS), max_size=4),
)
ARGUMENTS = st.sampled_from([{}, {"q": 1}, '{"q": 1}', '{"q": ', "[1]", None, '"s"', "", " \n"])


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool", "tool"]))
    md: dict[str, Any] = {}
    if role == "assistant" and draw(st.booleans()):
        md["tool_calls"] = [
            {
                "tool_call_id": draw(st.sampled_from(IDS)),
                "name": draw(st.sampled_from(["f", "g", None])),
                "arguments": draw(ARGUMENTS),
            }
            for _ in range(draw(st.integers(1, 3)))
        ]
    if role == "tool":
        md["tool_call_id"] = draw(st.sampled_from(IDS))
    return {"role": role, "content": draw(CONTENT), "metadata": md}


EXAMPLES = {"ci": 300, "dev": 50, "fuzz": 5000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(messages(), min_size=1, max_size=10))
def test_any_repaired_history_exports_in_a_form_every_provider_accepts(history):
    assert_accepted_everywhere(history)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_export_of_an_acceptable_history_keeps_every_message(provider):
    # The fitting only ever leaves out what a provider cannot read: a clean
    # history goes out whole.
    messages = [
        msg("system", "sys"),
        msg("user", "hi"),
        msg("assistant", "calling", tool_calls=[call("a"), call("b", "read")]),
        msg("tool", "A", tool_call_id="a"),
        msg("tool", "B", tool_call_id="b"),
        msg("assistant", "done"),
    ]
    wire, _ = formats.export_wire(messages, provider)
    text = orjson.dumps(wire).decode()
    for word in ("sys", "hi", "calling", '"A"', '"B"', "done"):
        assert word in text, (provider, word)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_part_typed_with_a_list_last_in_the_history_is_exported_and_checked(provider):
    # Found by the fuzz test: a part whose type is a list, in the final assistant message,
    # made the exports' and checks' set lookups raise (unhashable type).
    messages = [
        {"role": "user", "content": "hi", "metadata": {}},
        {"role": "assistant", "content": [{"type": [], "text": "done"}], "metadata": {}},
    ]
    wire = formats.to_wire(messages, provider)
    validate(provider, wire)
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": []}]},
        ]
    }
    validate("anthropic", body)
    body["thinking"] = {"type": "enabled"}
    body["messages"].append(
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a"}]}
    )
    validate("anthropic", body)
