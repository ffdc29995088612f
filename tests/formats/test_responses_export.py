"""Responses export: every item goes out as the kind it was read as, in its place, under its id.

A history read from Responses is exported (``to_wire``, the body the
inspector checks and offers) with each call and output item of its own kind
(``custom_tool_call`` with ``input``, ``computer_call``, ``shell_call``...),
in the order it was read, with its item id; a result the repair inserts is
the output kind of its call. A cut call's reasoning item goes with it. The
oracle's real bodies are the reference: exported again, each of their items
is what the provider was sent.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.engine.providers import RESPONSES_CALLS, check
from inspector.formats import canonical, responses, strip_private
from tests.engine.helpers import repair_history
from tests.testdata import CORPUS, ORACLE, files, read

Item = dict[str, Any]

USER = {"role": "user", "content": "go on"}
LATER = {"role": "user", "content": "well?"}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e1"}

# One call item of each client kind, as the API writes them, and an output for each.
CALLS: dict[str, Item] = {
    "function_call": {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_f",
        "name": "get_rate",
        "namespace": "get_rate",
        "arguments": '{"pair":"USD/EUR"}',
        "status": "completed",
    },
    "custom_tool_call": {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_c",
        "name": "execute_sql",
        "input": "SELECT * FROM users;",
    },
    "computer_call": {
        "type": "computer_call",
        "id": "cu_1",
        "call_id": "call_u",
        "action": {"type": "click", "button": "left", "x": 10, "y": 20},
        "pending_safety_checks": [],
        "status": "completed",
    },
    "local_shell_call": {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_l",
        "action": {"type": "exec", "command": ["ls", "-la"], "env": {}},
        "status": "completed",
    },
    "shell_call": {
        "type": "shell_call",
        "id": "sh_1",
        "call_id": "call_s",
        "action": {"commands": ["echo 4"], "timeout_ms": 1000},
        "status": "completed",
    },
    "apply_patch_call": {
        "type": "apply_patch_call",
        "id": "apc_1",
        "call_id": "call_p",
        "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-a\n+b\n"},
        "status": "completed",
    },
    "tool_search_call": {
        "type": "tool_search_call",
        "id": "ts_1",
        "call_id": "call_t",
        "execution": "client",
        "arguments": {"queries": ["rates"]},
        "status": "completed",
    },
}
OUTPUTS: dict[str, Item] = {
    "function_call": {"type": "function_call_output", "call_id": "call_f", "output": "0.92"},
    "custom_tool_call": {
        "type": "custom_tool_call_output",
        "call_id": "call_c",
        "output": "Result: 3 rows returned",
    },
    "computer_call": {
        "type": "computer_call_output",
        "call_id": "call_u",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBO"},
        "acknowledged_safety_checks": [],
    },
    "local_shell_call": {
        "type": "local_shell_call_output",
        "call_id": "call_l",
        "output": '{"stdout": "a.py\\n"}',
    },
    "shell_call": {
        "type": "shell_call_output",
        "call_id": "call_s",
        "output": [{"stdout": "4\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}],
        "status": "completed",
    },
    "apply_patch_call": {
        "type": "apply_patch_call_output",
        "call_id": "call_p",
        "status": "completed",
        "output": "Updated a.py",
    },
    "tool_search_call": {
        "type": "tool_search_output",
        "id": "tso_1",
        "call_id": "call_t",
        "execution": "client",
        "status": "completed",
        "tools": [{"type": "function", "name": "get_rate", "parameters": {}}],
    },
}
KINDS = list(CALLS)


def exported(items: list[Any]) -> list[Any]:
    """The Responses body the inspector makes of these items, read and stripped."""
    parsed = responses.parse(orjson.dumps(items))
    wire = formats.to_wire(parsed.messages, "responses")
    assert check("responses", wire).accepted
    found: list[Any] = wire["input"]
    return found


def repaired_export(items: list[Any]) -> tuple[list[Any], list[Any]]:
    """The repaired history's export and the repaired file, each accepted by the check."""
    parsed = responses.parse(orjson.dumps(items))
    repaired = repair_history(parsed.messages).messages
    wire, _ = formats.export_wire(repaired, "responses")
    written = orjson.loads(responses.serialise(repaired, parsed))
    assert check("responses", wire).accepted, [p.text for p in check("responses", wire).problems]
    assert check("responses", written).accepted
    return wire["input"], written


@pytest.mark.parametrize("kind", KINDS)
def test_each_call_kind_goes_out_as_it_was_read(kind):
    items = [USER, REASONING, CALLS[kind], OUTPUTS[kind], LATER]
    assert exported(items) == items


@pytest.mark.parametrize("kind", KINDS)
def test_each_call_kind_keeps_its_kind_in_a_canonical_file(kind):
    """What a call carries of its item is public: a canonical download exports the same."""
    items = [USER, REASONING, CALLS[kind], OUTPUTS[kind], LATER]
    parsed = responses.parse(orjson.dumps(items))
    data = orjson.dumps(strip_private(parsed.messages))
    again = canonical.parse(data)
    assert formats.to_wire(again.messages, "responses")["input"] == items


def test_all_kinds_in_one_turn_keep_their_order_and_ids():
    items = [USER, REASONING, *CALLS.values(), *OUTPUTS.values(), LATER]
    assert exported(items) == items


def test_reasoning_between_calls_stays_where_it_was():
    second = {**REASONING, "id": "rs_2", "encrypted_content": "e2"}
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    items = [
        USER,
        REASONING,
        CALLS["function_call"],
        second,
        CALLS["custom_tool_call"],
        search,
        OUTPUTS["function_call"],
        OUTPUTS["custom_tool_call"],
        LATER,
    ]
    parsed = responses.parse(orjson.dumps(items))
    calls = parsed.messages[1]["metadata"]["tool_calls"]
    assert [call.get("after_parts") for call in calls] == [1, 2]
    assert exported(items) == items


@pytest.mark.parametrize("kind", KINDS)
def test_an_inserted_result_is_the_output_kind_of_its_call(kind):
    items = [USER, CALLS[kind], LATER]
    wire, written = repaired_export(items)
    for body in (wire, written):
        assert body[:2] == items[:2]
        made = body[2]
        assert made["type"] == RESPONSES_CALLS[kind]
        assert made["call_id"] == CALLS[kind]["call_id"]
        if kind == "tool_search_call":
            # Its result is the tools it found: none (no tool list is made up).
            assert made == {"type": "tool_search_output", "call_id": "call_t", "tools": []}
        elif kind in ("computer_call", "shell_call"):
            # Its result is a screenshot, or the chunks a command wrote and how it
            # ended: none is made up. The model is told in words right after it.
            empty = {"type": "computer_screenshot"} if kind == "computer_call" else []
            assert made == {**made, "output": empty, "status": "incomplete"}
            told = body[3]
            assert told["role"] == "user"
            assert told["content"][0]["text"].startswith("Tool call was interrupted; no result.")
            assert body[4:] == [LATER]
        else:
            assert made["output"].startswith("Tool call was interrupted; no result.")
        if kind == "apply_patch_call":
            assert made["status"] == "failed"  # a required field: the patch is not known to apply


def test_a_screenshot_from_another_shape_answers_a_computer_call():
    # A canonical history (or one of another tool) answering a computer call with an
    # image: the screenshot is that image.
    messages = [
        {"role": "user", "content": "click it", "metadata": {}},
        {
            "role": "assistant",
            "content": "",
            "metadata": {
                "tool_calls": [
                    {
                        "tool_call_id": "call_u",
                        "name": "computer_call",
                        "arguments": {"action": {"type": "screenshot"}},
                        "item": {"type": "computer_call", "id": "cu_1"},
                    }
                ]
            },
        },
        {
            "role": "tool",
            "content": [{"type": "image", "media_type": "image/png", "data": "iVBO"}],
            "metadata": {"tool_call_id": "call_u"},
        },
    ]
    sent = formats.to_wire(messages, "responses")["input"]
    assert sent[2] == {
        "type": "computer_call_output",
        "call_id": "call_u",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBO"},
    }
    assert len(sent) == 3
    # Words that are no screenshot are not sent as one: they follow it as a message.
    messages[2]["content"] = "clicked"
    sent = formats.to_wire(messages, "responses")["input"]
    assert sent[2]["status"] == "incomplete"
    assert sent[3] == {"role": "user", "content": [{"type": "input_text", "text": "clicked"}]}


def test_a_screenshot_is_read_as_the_image_it_is():
    items = [USER, CALLS["computer_call"], OUTPUTS["computer_call"], LATER]
    parsed = responses.parse(orjson.dumps(items))
    result = parsed.messages[2]
    assert result["content"] == [{"type": "image", "media_type": "image/png", "data": "iVBO"}]
    assert "output" not in result["metadata"]["item"]  # the image is held once
    assert exported(items) == items
    # Another provider gets the screenshot as an image in the tool's result.
    wire = formats.to_wire(parsed.messages, "anthropic")
    block = wire["messages"][2]["content"][0]
    assert block["type"] == "tool_result"
    assert block["content"][0]["source"] == {
        "type": "base64",
        "media_type": "image/png",
        "data": "iVBO",
    }
    # A screenshot given by file id stays as it was read.
    by_file = {
        **OUTPUTS["computer_call"],
        "output": {"type": "computer_screenshot", "file_id": "file_1"},
    }
    parsed = responses.parse(orjson.dumps([USER, CALLS["computer_call"], by_file, LATER]))
    assert orjson.loads(parsed.messages[2]["content"]) == by_file["output"]
    assert exported([USER, CALLS["computer_call"], by_file, LATER])[2] == by_file


def test_a_changed_shell_result_keeps_its_chunks_when_they_are_json():
    items = [USER, CALLS["shell_call"], OUTPUTS["shell_call"], LATER]
    parsed = responses.parse(orjson.dumps(items))
    messages = copy.deepcopy(parsed.messages)
    chunks = [{"stdout": "5\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]
    messages[2]["content"] = orjson.dumps(chunks).decode()
    written = orjson.loads(responses.serialise(messages, parsed))
    assert written[2] == {**OUTPUTS["shell_call"], "output": chunks}


def test_a_call_from_another_provider_goes_out_as_a_function_call():
    messages = [
        {"role": "user", "content": "hi", "metadata": {}},
        {
            "role": "assistant",
            "content": "",
            "metadata": {"tool_calls": [{"tool_call_id": "toolu_1", "name": "f", "arguments": {}}]},
        },
    ]
    repaired = repair_history(messages).messages
    wire, _ = formats.export_wire(repaired, "responses")
    assert [item.get("type") for item in wire["input"]] == [
        None,
        "function_call",
        "function_call_output",
    ]
    assert wire["input"][1] == {
        "type": "function_call",
        "call_id": "toolu_1",
        "name": "f",
        "arguments": "{}",
    }


def test_a_canonical_call_carrying_its_whole_item_goes_out_as_that_item():
    item = dict(CALLS["custom_tool_call"])
    messages = [
        {"role": "user", "content": "query", "metadata": {}},
        {
            "role": "assistant",
            "content": "",
            "metadata": {
                "tool_calls": [
                    {
                        "tool_call_id": "call_c",
                        "name": "execute_sql",
                        "arguments": {"input": item["input"]},
                        "item": item,
                    }
                ]
            },
        },
        {"role": "tool", "content": "3 rows", "metadata": {"tool_call_id": "call_c"}},
    ]
    items = formats.to_wire(messages, "responses")["input"]
    assert items[1] == item
    assert items[2] == {"type": "custom_tool_call_output", "call_id": "call_c", "output": "3 rows"}


def test_a_carried_kind_the_arguments_do_not_fit_goes_out_as_a_function_call():
    call = {
        "tool_call_id": "c1",
        "name": "execute_sql",
        "arguments": '{"q": 1}',  # no custom tool ``input``
        "item": {"type": "custom_tool_call", "id": "ctc_9"},
    }
    messages = [
        {"role": "user", "content": "query", "metadata": {}},
        {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
        {"role": "tool", "content": "r", "metadata": {"tool_call_id": "c1"}},
    ]
    items = formats.to_wire(messages, "responses")["input"]
    assert [item["type"] for item in items[1:]] == ["function_call", "function_call_output"]


def test_calls_id_1_told_apart_send_the_item_id_once():
    # The same call item twice (a replayed turn): repair renames the second (ID-1).
    call = CALLS["function_call"]
    items = [USER, call, OUTPUTS["function_call"], LATER, call, OUTPUTS["function_call"]]
    parsed = responses.parse(orjson.dumps(items))
    repaired = repair_history(parsed.messages)
    assert "ID-1" in [a.rule for a in repaired.actions]
    wire, _ = formats.export_wire(repaired.messages, "responses")
    assert check("responses", wire).accepted
    sent = [i for i in wire["input"] if i.get("type") == "function_call"]
    assert [i.get("id") for i in sent] == ["fc_1", None]
    assert [i["call_id"] for i in sent] == ["call_f", "call_f_1"]


SAID = {
    "type": "message",
    "id": "msg_1",
    "status": "completed",
    "role": "assistant",
    "phase": "commentary",
    "content": [{"type": "output_text", "text": "Let me check the rate.", "annotations": []}],
}


def test_an_assistant_message_item_keeps_its_id_status_and_phase():
    # gpt-5 models are told the phase of their earlier messages; its item id goes once.
    items = [USER, SAID, CALLS["function_call"], OUTPUTS["function_call"], LATER]
    made = exported(items)[1]
    assert made["id"] == "msg_1"
    assert (made["status"], made["phase"]) == ("completed", "commentary")
    assert made["content"] == [{"type": "output_text", "text": "Let me check the rate."}]


def test_a_repaired_turn_keeps_its_message_item():
    # The call after the message was never answered: repair inserts its output and
    # the export rebuilds the turn, its message item with it.
    wire, written = repaired_export([USER, SAID, CALLS["function_call"], LATER])
    for body in (wire, written):
        said = [i for i in body if i.get("role") == "assistant"]
        assert [(i["id"], i["phase"]) for i in said] == [("msg_1", "commentary")]
        assert body[3]["type"] == "function_call_output"


def test_a_text_string_message_item_with_an_id_keeps_it():
    item = {"type": "message", "id": "msg_2", "role": "assistant", "content": "Done."}
    made = exported([USER, item])[1]
    assert made["id"] == "msg_2"
    assert made["content"] == [{"type": "output_text", "text": "Done."}]


def test_a_message_item_id_sent_twice_goes_once_and_no_words_are_lost():
    other = {**SAID, "content": [{"type": "output_text", "text": "Something else."}]}
    sent = exported([USER, SAID, LATER, SAID, LATER, other])
    said = [(i.get("id"), i["content"][0]["text"]) for i in sent if i.get("role") == "assistant"]
    # The same item again is the same item (a replayed history); another under its id
    # is not: it goes out without the id, its words kept.
    assert said == [("msg_1", "Let me check the rate."), (None, "Something else.")]


def test_a_refusal_stays_inside_its_message_item():
    refused = {
        "type": "message",
        "id": "msg_3",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}],
    }
    items = [USER, refused, LATER]
    assert exported(items)[1] == refused
    parsed = responses.parse(orjson.dumps(items))
    rebuilt = responses.to_wire(strip_private(copy.deepcopy(parsed.messages)))
    assert rebuilt["input"][1] == refused


def test_item_ids_another_writer_made_are_not_sent_as_the_apis():
    # A DeepSeek response's reasoning item (a uuid) and a proxy's call ids: the API wants
    # ids of its own making ("Expected an ID that begins with 'rs'").
    theirs = {"type": "reasoning", "id": "18165b2d-ce78", "summary": [], "content": []}
    call = {**CALLS["function_call"], "id": "item_c270"}
    sent = exported([USER, theirs, call, OUTPUTS["function_call"], LATER])
    assert [i.get("type") for i in sent[1:3]] == ["function_call", "function_call_output"]
    assert "id" not in sent[1]
    assert {k: v for k, v in call.items() if k != "id"} == sent[1]
    # The file keeps them as they were.
    parsed = responses.parse(orjson.dumps([USER, theirs, call, OUTPUTS["function_call"], LATER]))
    assert orjson.loads(responses.serialise(parsed.messages, parsed))[1:3] == [theirs, call]


def test_items_the_server_ran_go_out_as_they_are():
    server_search = {
        "type": "tool_search_call",
        "id": "tsc_1",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "arguments": {"queries": ["rates"]},
    }
    server_found = {
        "type": "tool_search_output",
        "id": "tso_1",
        "call_id": None,
        "execution": "server",
        "status": "completed",
        "tools": [{"type": "function", "name": "get_rate", "parameters": {}}],
    }
    listed = {"type": "mcp_list_tools", "id": "mcpl_1", "server_label": "docs", "tools": []}
    ran = {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "docs",
        "name": "search",
        "arguments": "{}",
        "output": "found",
    }
    asked = {
        "type": "mcp_approval_request",
        "id": "mcpr_1",
        "server_label": "docs",
        "name": "delete",
        "arguments": "{}",
    }
    answer = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False}
    said = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "done"}],
    }
    items = [USER, server_search, server_found, listed, ran, asked, answer, said, LATER]
    assert exported(items) == items


# --- a cut call's reasoning goes with it -------------------------------------------------


def partial(cid: str, **extra: Any) -> Item:
    """A function call whose arguments the stream cut off (INT-1 removes it)."""
    return {
        "type": "function_call",
        "id": f"fc_{cid}",
        "call_id": cid,
        "name": "create_ticket",
        "arguments": '{"title": "March invoice run fai',
        **extra,
    }


def whole(cid: str) -> Item:
    return {
        "type": "function_call",
        "id": f"fc_{cid}",
        "call_id": cid,
        "name": "read",
        "arguments": "{}",
    }


def answer(cid: str) -> Item:
    return {"type": "function_call_output", "call_id": cid, "output": "ok"}


def ids(items: list[Any]) -> list[Any]:
    return [i.get("id") or i.get("type") or i.get("role") for i in items]


def test_a_cut_calls_reasoning_item_goes_with_it():
    items = [USER, REASONING, partial("a"), LATER]
    wire, written = repaired_export(items)
    assert ids(wire) == ids(written) == ["user", "user", "user"]
    assert written[1]["content"].startswith("[system note:")  # INT-2 says what was cut


def test_the_reasoning_of_the_calls_kept_stays():
    second = {**REASONING, "id": "rs_2"}
    items = [USER, REASONING, whole("a"), second, partial("b"), answer("a"), LATER]
    wire, written = repaired_export(items)
    expected = ["user", "rs_1", "fc_a", "function_call_output", "user", "user"]
    assert ids(wire) == ids(written) == expected


def test_a_call_after_a_cut_one_keeps_its_own_item():
    # The cut call came first: the call kept is still written as its own item, not
    # into the cut one's place (which would send it under the cut call's item id).
    items = [USER, REASONING, partial("a"), whole("b"), answer("b")]
    wire, written = repaired_export(items)
    for body in (wire, written):
        sent = [i for i in body if i.get("type") == "function_call"]
        assert sent == [whole("b")]
        assert ids(body)[:3] == ["user", "rs_1", "fc_b"]


# --- the oracle: real bodies go out again as they were sent ---------------------------------

ORACLE_CASES = files(ORACLE / "responses")


def _items_of_the_model_and_tools(items: list[Any]) -> list[Any]:
    """Every item but user and system messages, an assistant message item as its fields
    (id, status, phase...) and the texts of its parts; one with no text is not sent."""
    out: list[Any] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") not in (None, "message"):
            out.append(item)
        elif item.get("role") == "assistant":
            content = item.get("content")
            if isinstance(content, str):
                content = [{"type": "output_text", "text": content}]
            texts = [part.get("text") for part in content if part.get("text")]
            if texts:
                fields = {k: v for k, v in item.items() if k not in ("type", "content")}
                out.append((fields, texts))
    return out


@pytest.mark.parametrize("path", ORACLE_CASES, ids=[p.name[:80] for p in ORACLE_CASES])
def test_an_oracle_body_goes_out_with_every_item_as_it_was_sent(path):
    case = orjson.loads(read(path))
    request = case["request"]
    if not isinstance(request.get("input"), list):
        pytest.skip("input given as text")
    parsed = responses.parse(orjson.dumps(request))
    wire = formats.to_wire(parsed.messages, "responses")
    sent = request["input"]
    assert _items_of_the_model_and_tools(wire["input"]) == _items_of_the_model_and_tools(sent)
    # The same verdict as the body the provider answered.
    state = check("responses", request).state
    assert check("responses", {**request, "input": wire["input"]}).state == state


@pytest.mark.parametrize(
    "path",
    [*files(CORPUS / "responses"), *ORACLE_CASES],
    ids=lambda p: p.name[:80],
)
def test_an_unchanged_file_round_trips_byte_for_byte(path):
    data = read(path)
    if ORACLE in path.parents:  # an oracle case: its request, as a file
        data = orjson.dumps(orjson.loads(data)["request"], option=orjson.OPT_INDENT_2)
    parsed = responses.parse(data)
    assert responses.serialise(parsed.messages, parsed) == data
    assert responses.serialise(copy.deepcopy(parsed.messages), parsed) == data


# --- generated histories --------------------------------------------------------------------

EXAMPLES = {"ci": 200, "dev": 50, "fuzz": 3000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]


@st.composite
def turns(draw: st.DrawFn) -> list[Item]:
    """A user message, then an assistant turn of calls of any kind, some answered."""
    out: list[Item] = [{"role": "user", "content": "u"}]
    kinds = draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=4))
    made: list[Item] = []
    answers: list[Item] = []
    for kind in kinds:
        if draw(st.booleans()):
            out.append({**REASONING, "id": "rs"})
        call = dict(CALLS[kind])
        made.append(call)
        fate = draw(st.sampled_from(["answered", "answered", "missing", "cut"]))
        if fate == "cut":
            call.clear()
            call.update(partial("cut"))
        elif fate == "answered":
            answers.append(dict(OUTPUTS[kind]))
        out.append(call)
    return out + draw(st.permutations(answers))


def _number(items: list[Item]) -> list[Item]:
    """Every call its own call id and item id (a history's ids are its own)."""
    counter = 0
    latest: dict[str, str] = {}
    for item in items:
        kind = item.get("type")
        if kind == "reasoning":
            counter += 1
            item["id"] = f"rs_{counter}"
        elif kind in RESPONSES_CALLS:
            counter += 1
            latest[item["call_id"]] = new = f"call_{counter}"
            item["call_id"] = new
            item["id"] = f"{item['id'].split('_')[0]}_{counter}"
        elif isinstance(kind, str) and kind.endswith("_output"):
            item["call_id"] = latest.get(item["call_id"], item["call_id"])
            if "id" in item:
                counter += 1
                item["id"] = f"out_{counter}"
    return items


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(turns(), min_size=1, max_size=4))
def test_any_repaired_history_goes_out_with_each_kind_answered_by_its_own(pieces):
    items = _number([copy.deepcopy(item) for piece in pieces for item in piece])
    wire, written = repaired_export(items)
    for body in (wire, written):
        calls = {i["call_id"]: i for i in body if i.get("type") in RESPONSES_CALLS}
        for item in body:
            if item.get("type", "").endswith("_output"):
                call = calls[item["call_id"]]
                assert item["type"] == RESPONSES_CALLS[call["type"]]
        # Every call kept goes out as the item it was read from, under its item id.
        cut = partial("x")["arguments"]
        kept = [i for i in items if i.get("type") in RESPONSES_CALLS and i.get("arguments") != cut]
        sent = [i for i in body if i.get("type") in RESPONSES_CALLS]
        assert [(i["type"], i["id"]) for i in sent] == [(i["type"], i["id"]) for i in kept]
        # No reasoning is left without an item of the model after it.
        assert not [p for p in check("responses", body).problems if p.code == "reasoning_alone"]


def test_a_call_of_a_kind_no_check_knows_goes_out_as_a_function_call():
    # Found by make fuzz: a damaged type (" unction_call") was read as a call and sent
    # as that kind, so its output answered nothing the provider knows: rejected even
    # after repair. A kind no check reads goes out as a function call, with its output.
    import orjson

    from inspector import formats
    from inspector.diagnosis import diagnose

    body = {
        "model": "gpt-5",
        "input": [
            {"role": "user", "content": "read b"},
            {"type": " unction_call", "call_id": "call-b", "name": "view", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call-b", "output": "rendered"},
            {"role": "user", "content": "thanks"},
        ],
    }
    diagnosis = diagnose(formats.load(orjson.dumps(body)))
    assert not any(v["after"] for v in diagnosis.providers.values()), diagnosis.providers
    wire = formats.to_wire(formats.load(orjson.dumps(body)).messages, "responses")
    kinds = [item.get("type") for item in wire["input"]]
    assert "function_call" in kinds and " unction_call" not in kinds


def _sequence(items: list[Any]) -> list[tuple[Any, ...]]:
    """Each model item of a Responses input as (type, call_id), messages by role."""
    return [
        (i.get("type") or "message", i.get("role"), i.get("call_id"))
        for i in items
        if isinstance(i, dict)
    ]


@pytest.mark.parametrize(
    "name",
    [
        "JeiKeiLim-claude-code-log-viewer-cli__real-v116-session.jsonl",
        "kvsankar-agent-history__codex_with_escalation.jsonl",
        "madshn-localpush__rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    ],
)
def test_a_codex_turns_reasoning_goes_out_before_its_calls_as_codex_sent_it(name: str) -> None:
    # Codex keeps a turn's reasoning items beside its message (metadata "reasoning"); the
    # Responses export sends them again, each before the items the model made after it.
    data = read(CORPUS / "codex" / name)
    sent = [
        orjson.loads(line)["payload"]
        for line in data.splitlines()
        if line.strip() and orjson.loads(line).get("type") == "response_item"
    ]
    written = [i for i in sent if i.get("type") == "reasoning"]
    assert written
    parsed = formats.load(data, "codex")
    wire = formats.to_wire(parsed.messages, "responses")
    exported = [i for i in wire["input"] if i.get("type") == "reasoning"]
    assert exported == written
    # Each reasoning item is followed by what followed it in the rollout.
    items = wire["input"]
    for item in exported:
        after_export = items[items.index(item) + 1]
        after_rollout = sent[sent.index(item) + 1]
        assert _sequence([after_export]) == _sequence([after_rollout])
    repaired, _ = formats.export_wire(repair_history(parsed.messages).messages, "responses")
    assert check("responses", repaired).accepted
    assert [i for i in repaired["input"] if i.get("type") == "reasoning"] == written


def test_a_cut_codex_call_keeps_its_reasoning_before_it_in_the_repaired_export() -> None:
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "e1"}
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "call_c"}
    lines = [
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "go"}],
            },
        },
        {"type": "response_item", "payload": reasoning},
        {"type": "response_item", "payload": call},
    ]
    data = b"\n".join(orjson.dumps({"timestamp": "2026-01-01T00:00:00Z", **line}) for line in lines)
    parsed = formats.load(data + b"\n", "codex")
    repaired = repair_history(parsed.messages)
    wire, _ = formats.export_wire(repaired.messages, "responses")
    assert _sequence(wire["input"]) == [
        ("message", "user", None),
        ("reasoning", None, None),
        ("function_call", None, "call_c"),
        ("function_call_output", None, "call_c"),
    ]
    assert check("responses", wire).accepted
