"""The provider verdicts' shortcuts give what the plain definitions give.

``provider_verdicts`` makes each provider's body through ``verdicts._Wires``,
which strips private keys once and converts each message once per provider
for the original and the repaired history together (repair hands back
untouched messages as the same objects), instead of calling ``to_wire`` and
``export_wire`` on each. Argument text that cannot be JSON skips the parse.
These tests hold the shortcuts to the plain definitions: over generated
histories with private keys, ids a provider refuses and shared messages, and
over small tables.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.diagnosis import provider_verdicts
from inspector.diagnosis.rows import _render_arguments
from inspector.diagnosis.verdicts import _Wires
from inspector.engine import repair_history
from inspector.engine.canonical import arguments_object
from inspector.engine.providers import PROVIDERS, validate

Message = dict[str, Any]

EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Few ids, so they collide and pair: ones Anthropic refuses (Kimi's, a space,
# an accent), an empty one, and what renaming them would produce.
IDS = ["c1", "c2", "functions.search:0", "x y", "é", "", "functions_search_0", "call"]
# Text arguments of every kind: an object's text, cut, plain, JSON that is no object.
ARGUMENTS = [
    *[{"q": 1}, {}, '{"a": 2}', '{"a": ', "plain", ' {"x": 1}', "[1]", None, "", " \t"],
    *["{}", "3", '"text"', "null", '{"a": 1} {"b": 2}'],
]
TEXTS = ["hi", "", "  ", "found 3", '{"r": 1}']
PARTS = [
    {"type": "text", "text": "hi"},
    {"type": "text", "text": ""},
    {"type": "image", "media_type": "image/png", "data": "AAAA"},
    {"type": "image", "url": "https://example.com/a.png"},
    {"type": "thinking", "thinking": "hmm"},
    {"type": "reasoning", "text": "r"},
    {"type": "gemini", "part": {"text": "g"}},
    {"type": "document", "id": "d1"},
    # Items other providers made, kept as parts: Responses' reasoning and server-run
    # items, Anthropic's server tool use and its result.
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    {"type": "tool_search_call", "call_id": None, "execution": "server", "arguments": {}},
    {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}},
    {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
]


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["system", "user", "assistant", "assistant", "tool", "tool"]))
    if draw(st.booleans()):
        content: Any = draw(st.sampled_from(TEXTS))
    else:
        content = copy.deepcopy(draw(st.lists(st.sampled_from(PARTS), max_size=3)))
    metadata: Message = {}
    if draw(st.booleans()):
        metadata["_rec"] = draw(st.integers(0, 3))  # a shape module's private key
    if role == "assistant" and draw(st.booleans()):
        metadata["tool_calls"] = [
            {
                draw(st.sampled_from(["tool_call_id", "tool_call_id", "id"])): draw(
                    st.sampled_from(IDS)
                ),
                "name": draw(st.sampled_from(["search", "read", None])),
                "arguments": copy.deepcopy(draw(st.sampled_from(ARGUMENTS))),
            }
            for _ in range(draw(st.integers(1, 3)))
        ]
    if role == "tool":
        metadata["tool_call_id"] = draw(st.sampled_from(IDS))
        if draw(st.integers(0, 3)) == 0:
            metadata["name"] = draw(st.sampled_from(["search", "read"]))
    return {"role": role, "content": content, "metadata": metadata}


@st.composite
def histories_and_repairs(draw: st.DrawFn) -> tuple[list[Message], list[Message]]:
    """A history and a later one sharing its message objects (its repair, and more)."""
    history = draw(st.lists(messages(), min_size=1, max_size=12))
    after = list(repair_history(history).messages)
    if draw(st.booleans()):
        # Messages shared again further on, and equal copies that are not shared.
        after += history[: draw(st.integers(0, 3))] + copy.deepcopy(history[-2:])
    return history, after


def plain_verdicts(before: list[Message], after: list[Message]) -> dict[str, Any]:
    """``provider_verdicts`` as it was written first: every body made from scratch."""

    def issues(provider: str, wire: Any) -> list[dict[str, Any]]:
        return [
            {"path": p.path, "index": p.index, "text": p.text} for p in validate(provider, wire)
        ]

    unchanged = len(before) == len(after) and all(
        a is b for a, b in zip(before, after, strict=True)
    )
    verdicts = {}
    for provider in PROVIDERS:
        found_before = issues(provider, formats.to_wire(formats.strip_private(before), provider))
        if unchanged and not found_before:
            found_after: list[dict[str, Any]] = []
        else:
            found_after = issues(provider, formats.export_wire(after, provider)[0])
        verdicts[provider] = {"before": found_before, "after": found_after}
    return verdicts


@EXAMPLES
@given(histories_and_repairs(), st.permutations(PROVIDERS * 2))
def test_wires_give_what_to_wire_and_export_wire_give(pair, order):
    before, after = pair
    wires = _Wires(before, after)
    for provider in order:  # any order, and twice: the memo must not leak between them
        exported, renamed = formats.export_wire(after, provider)
        assert orjson.dumps(wires.before(provider)) == orjson.dumps(
            formats.to_wire(before, provider)
        )
        assert orjson.dumps(wires.after(provider)) == orjson.dumps(exported)
        assert wires.renamed(provider) == renamed


@EXAMPLES
@given(histories_and_repairs())
def test_a_shared_memo_gives_every_history_its_own_body(pair):
    before, after = pair
    for module in formats.WIRE_FORMATS.values():
        memo: dict[Any, Any] = {}
        for history in (before, after, before):
            expected = orjson.dumps(module.to_wire(history))
            assert orjson.dumps(module.to_wire(history, memo=memo)) == expected


@EXAMPLES
@given(histories_and_repairs())
def test_provider_verdicts_match_the_plain_definition(pair):
    before, after = pair
    assert provider_verdicts(before, after) == plain_verdicts(before, after)


@EXAMPLES
@given(st.lists(messages(), min_size=1, max_size=12))
def test_an_untouched_history_gets_the_same_verdicts(history):
    assert provider_verdicts(history, list(history)) == plain_verdicts(history, list(history))


def parse_or_keep(arguments: str, only_objects: bool) -> Any:
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    return value if isinstance(value, dict) or not only_objects else arguments


NOT_ALL_JSON = [
    "",
    " ",
    "plain text",
    "found 12 files",
    '{"a": 1}',
    '  {"a": 1}',
    ' \t\r\n{"a": 1}',
    '\x0c{"a": 1}',  # not JSON whitespace
    '\ufeff{"a": 1}',
    '{"a": ',
    "[1, 2]",
    " [1]",
    "1e5",
    "-3",
    "0.50",
    '"text"',
    "true",
    "null",
    "nul",
    "tru",
    "{",
    "}",
]


@pytest.mark.parametrize("text", NOT_ALL_JSON)
def test_arguments_object_takes_only_json_objects(text):
    # An empty or all-whitespace string is no arguments (SPEC §4 step 1).
    expected = {} if not text.strip() else parse_or_keep(text, only_objects=True)
    assert arguments_object(text) == expected


@pytest.mark.parametrize("text", NOT_ALL_JSON)
def test_timeline_arguments_show_json_pretty_and_anything_else_as_written(text):
    value = parse_or_keep(text, only_objects=False)
    expected = text if value is text else orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    assert _render_arguments(text) == expected


def test_a_shared_result_takes_the_name_its_call_has_in_each_history():
    # Gemini names a response after its call when the result carries no name:
    # the same result object answers a call named differently in each history.
    result = {"role": "tool", "content": "ok", "metadata": {"tool_call_id": "c1"}}

    def turn(name: str) -> list[Message]:
        call = {"tool_call_id": "c1", "name": name, "arguments": {}}
        return [
            {"role": "user", "content": "go", "metadata": {}},
            {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
            result,
        ]

    before, after = turn("search"), turn("read")
    wires = _Wires(before, after)
    for provider in PROVIDERS:
        assert wires.before(provider) == formats.to_wire(before, provider)
        assert wires.after(provider) == formats.export_wire(after, provider)[0]
    names = [
        part["functionResponse"]["name"] for part in wires.after("gemini")["contents"][2]["parts"]
    ]
    assert names == ["read"]
