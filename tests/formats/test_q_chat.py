"""Amazon Q / Kiro CLI conversations (``ConversationState`` JSON): read, repaired in Q's shape.

The corpus files are DERIVED from the serde model of aws/amazon-q-developer-cli
(tests/data/corpus/README.md): a ``data.sqlite3`` row as ``serde_json::to_string``
writes it (``HistoryEntry`` objects) and ``/save`` files of an older ``q chat``
(``[user, assistant]`` pairs, pretty-printed).
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import diagnose, repair_parsed
from inspector.formats import FormatError, q_chat
from tests.testdata import CORPUS, read

FOLDER = CORPUS / "q-chat"
HEALTHY_ROW = FOLDER / "derived__data-sqlite3-row.healthy.json"
KILLED_ROW = FOLDER / "derived__data-sqlite3-row.killed-mid-tool.json"
PAIRS = FOLDER / "derived__q-save.pairs.cancelled-by-user.json"
KILLED_PAIRS = FOLDER / "derived__q-save.pairs.killed-mid-tool.json"


def doc_of(data: bytes) -> dict[str, Any]:
    value = orjson.loads(data)
    assert isinstance(value, dict)
    return value


def repaired(data: bytes) -> bytes:
    parsed = formats.load(data)
    return q_chat.serialise(repair_parsed(parsed).messages, parsed)


ALL = [HEALTHY_ROW, KILLED_ROW, PAIRS, KILLED_PAIRS]


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_a_conversation_is_detected_as_its_shape_and_written_back_byte_for_byte(path):
    data = read(path)
    parsed = formats.load(data)
    assert parsed.format == "q-chat"
    assert q_chat.serialise(parsed.messages, parsed) == data
    assert q_chat.sniff(data[:4096]) >= 0.9


def test_messages_calls_and_results_are_read_paired_by_tool_use_id():
    parsed = formats.load(read(HEALTHY_ROW))
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    doc = doc_of(read(HEALTHY_ROW))
    first_use = doc["history"][0]["assistant"]["ToolUse"]["tool_uses"][0]
    call = parsed.messages[1]["metadata"]["tool_calls"][0]
    assert (call["tool_call_id"], call["name"], call["arguments"]) == (
        first_use["id"], first_use["name"], first_use["args"],
    )  # fmt: skip
    assert parsed.messages[2]["metadata"]["tool_call_id"] == first_use["id"]
    # A Json block is read as its JSON text.
    json_block = doc["history"][2]["user"]["content"]["ToolUseResults"]["tool_use_results"][0]
    assert orjson.loads(parsed.messages[4]["content"]) == json_block["content"][0]["Json"]
    assert not diagnose(parsed).needs_repair
    assert parsed.meta["session_id"] == doc["conversation_id"]
    assert parsed.meta["cwd"] == "/home/dev/projects/billing-api"


def test_a_cancelled_tool_use_reads_as_an_error_result_then_the_prompt():
    parsed = formats.load(read(PAIRS))
    roles = [m["role"] for m in parsed.messages]
    assert roles == ["user", "assistant", "tool", "user", "assistant"]
    assert parsed.messages[2]["metadata"]["is_error"] is True
    assert parsed.messages[2]["content"] == "Tool use was cancelled by the user"
    assert parsed.messages[3]["content"] == "The user interrupted the tool execution."
    assert not diagnose(parsed).needs_repair


def test_a_row_killed_while_its_tool_ran_is_answered_in_next_message_as_q_cancels():
    data = read(KILLED_ROW)
    parsed = formats.load(data)
    assert diagnose(parsed).needs_repair
    out = repaired(data)
    before, after = doc_of(data), doc_of(out)
    assert after["history"] == before["history"]
    assert {k: v for k, v in after.items() if k != "next_message"} == {
        k: v for k, v in before.items() if k != "next_message"
    }
    following = after["next_message"]
    fields = ["additional_context", "env_context", "content", "timestamp", "images"]
    assert list(following) == fields
    assert following["env_context"] == before["history"][-1]["user"]["env_context"]
    cancelled = following["content"]["CancelledToolUses"]
    assert cancelled["prompt"] is None
    (result,) = cancelled["tool_use_results"]
    use = before["history"][-1]["assistant"]["ToolUse"]["tool_uses"][0]
    assert result["tool_use_id"] == use["id"]
    assert result["status"] == "Error"
    assert result["content"][0]["Text"].startswith("Tool call was interrupted; no result.")
    again = formats.load(out, "q-chat")
    assert not diagnose(again).needs_repair
    assert q_chat.serialise(again.messages, again) == out
    # The row is written as Q writes it (serde_json::to_string: no layout).
    assert b"\n" not in out


def test_an_older_pairs_file_stays_pairs_and_gets_no_field_its_version_lacked():
    data = read(KILLED_PAIRS)
    out = repaired(data)
    after = doc_of(out)
    assert all(isinstance(entry, list) and len(entry) == 2 for entry in after["history"])
    assert "timestamp" not in after["next_message"]
    assert out.startswith(b'{\n  "conversation_id"')  # laid out as /save wrote it
    assert not diagnose(formats.load(out, "q-chat")).needs_repair


def test_a_prompt_after_an_unanswered_tool_use_becomes_cancelled_tool_uses_keeping_it():
    doc = doc_of(read(HEALTHY_ROW))
    # The tool use of entry 2 left unanswered: entry 3 holds a new prompt instead.
    doc["history"][2]["user"]["content"] = {"Prompt": {"prompt": "never mind, just explain"}}
    data = orjson.dumps(doc)
    parsed = formats.load(data)
    assert diagnose(parsed).needs_repair
    after = doc_of(repaired(data))
    content = after["history"][2]["user"]["content"]["CancelledToolUses"]
    assert content["prompt"] == "never mind, just explain"
    (result,) = content["tool_use_results"]
    assert result["tool_use_id"] == doc["history"][1]["assistant"]["ToolUse"]["tool_uses"][0]["id"]
    assert result["status"] == "Error"
    # Everything else of the entry, and every other entry, is as it was.
    assert {k: v for k, v in after["history"][2]["user"].items() if k != "content"} == {
        k: v for k, v in doc["history"][2]["user"].items() if k != "content"
    }
    assert after["history"][:2] == doc["history"][:2]
    assert after["history"][2]["assistant"] == doc["history"][2]["assistant"]
    assert after["next_message"] is None


def test_a_result_missing_from_a_tool_use_results_list_is_added_to_it():
    doc = doc_of(read(HEALTHY_ROW))
    second = copy.deepcopy(doc["history"][0]["assistant"]["ToolUse"]["tool_uses"][0])
    second["id"] = "tooluse_second"
    doc["history"][0]["assistant"]["ToolUse"]["tool_uses"].append(second)
    data = orjson.dumps(doc)
    after = doc_of(repaired(data))
    results = after["history"][1]["user"]["content"]["ToolUseResults"]["tool_use_results"]
    first = doc["history"][1]["user"]["content"]["ToolUseResults"]["tool_use_results"][0]
    assert results[0] == first
    assert results[1]["tool_use_id"] == "tooluse_second"
    assert results[1]["status"] == "Error"


def variant_of(doc: dict[str, Any], change: str) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    entry = doc["history"][1]
    if change == "assistant":
        entry["assistant"] = {"Thinking": {"message_id": None, "content": "..."}}
    elif change == "user":
        entry["user"]["content"] = {"ImageOnly": {"images": []}}
    elif change == "block":
        entry["user"]["content"]["ToolUseResults"]["tool_use_results"][0]["content"] = [
            {"Image": {"format": "Png"}}
        ]
    elif change == "status":
        entry["user"]["content"]["ToolUseResults"]["tool_use_results"][0]["status"] = "Cancelled"
    elif change == "entry":
        doc["history"][1] = {"prompt": "hello"}
    return doc


@pytest.mark.parametrize("change", ["assistant", "user", "block", "status", "entry"])
def test_an_unknown_variant_refuses_the_document_rather_than_guess(change):
    data = orjson.dumps(variant_of(doc_of(read(HEALTHY_ROW)), change))
    with pytest.raises(FormatError) as refused:
        q_chat.parse(data)
    assert refused.value.unread
    with pytest.raises(FormatError):
        formats.load(data)


def test_another_document_is_not_this_shape():
    with pytest.raises(FormatError) as refused:
        q_chat.parse(b'{"messages": [{"role": "user", "content": "hi"}]}')
    assert not refused.value.unread
    assert q_chat.sniff(b'{"messages": []}') == 0.0


def test_the_timeline_shows_prompt_times_request_starts_and_the_model():
    parsed = formats.load(read(HEALTHY_ROW))
    facts = q_chat.timeline_facts(parsed)
    assert len(facts) == len(parsed.messages)
    doc = doc_of(read(HEALTHY_ROW))
    assert facts[0] is not None and facts[0]["at"] == doc["history"][0]["user"]["timestamp"]
    assert facts[1] is not None
    assert facts[1]["at"] == "2025-09-12T08:14:03.530000Z"  # request_start_timestamp_ms
    assert facts[1]["model"] == doc["history"][0]["request_metadata"]["model_id"]


def test_a_result_no_tool_use_asked_for_becomes_a_prompt_holding_the_note():
    doc = doc_of(read(HEALTHY_ROW))
    # The reply before entry 3's results made no tool use (as Q's invariants find a
    # ToolUseResults after a Response): those results answer nothing.
    doc["history"][1]["assistant"] = {
        "Response": {"message_id": "m-2", "content": "I will not run anything."}
    }
    data = orjson.dumps(doc)
    parsed = formats.load(data)
    repair = repair_parsed(parsed)
    assert "PAIR-3" in {a.rule for a in repair.actions}
    after = doc_of(q_chat.serialise(repair.messages, parsed))
    prompt = after["history"][2]["user"]["content"]["Prompt"]["prompt"]
    result = doc["history"][2]["user"]["content"]["ToolUseResults"]["tool_use_results"][0]
    assert result["tool_use_id"] in prompt and "exit_status" in prompt  # its content is kept
    assert after["history"][1]["assistant"] == doc["history"][1]["assistant"]
    assert not diagnose(formats.load(orjson.dumps(after), "q-chat")).needs_repair


def test_a_cleared_conversation_reads_as_no_message_and_is_written_back_as_it_is():
    doc = doc_of(read(HEALTHY_ROW))
    doc["history"], doc["valid_history_range"] = [], [0, 0]
    data = orjson.dumps(doc)
    parsed = formats.load(data)
    assert parsed.format == "q-chat" and parsed.messages == []
    assert not diagnose(parsed).needs_repair
    assert q_chat.serialise(parsed.messages, parsed) == data


def test_a_repeated_tool_use_id_is_renamed_in_the_use_and_its_result_alike():
    doc = doc_of(read(HEALTHY_ROW))
    first = doc["history"][0]["assistant"]["ToolUse"]["tool_uses"][0]["id"]
    second = doc["history"][1]["assistant"]["ToolUse"]["tool_uses"][0]
    second["id"] = first
    results = doc["history"][2]["user"]["content"]["ToolUseResults"]["tool_use_results"]
    results[0]["tool_use_id"] = first
    data = orjson.dumps(doc)
    parsed = formats.load(data)
    repair = repair_parsed(parsed)
    assert "ID-1" in {a.rule for a in repair.actions}
    after = doc_of(q_chat.serialise(repair.messages, parsed))
    use = after["history"][1]["assistant"]["ToolUse"]["tool_uses"][0]
    (result,) = after["history"][2]["user"]["content"]["ToolUseResults"]["tool_use_results"]
    assert use["id"] == result["tool_use_id"] == f"{first}_1"
    assert {k: v for k, v in use.items() if k != "id"} == {
        k: v for k, v in second.items() if k != "id"
    }  # orig_name and orig_args kept
    assert result["content"] == results[0]["content"] and result["status"] == "Success"
    assert after["history"][0] == doc["history"][0]
    assert not diagnose(formats.load(orjson.dumps(after), "q-chat")).needs_repair


def test_images_are_kept_whole_through_a_repair_of_their_entry():
    doc = doc_of(read(KILLED_ROW))
    image = {"format": "Png", "source": {"Bytes": [137, 80, 78, 71, 13, 10, 26, 10]}}
    doc["history"][0]["user"]["images"] = [image]
    data = orjson.dumps(doc)
    parsed = formats.load(data)
    assert parsed.messages[0]["content"][1] == {"type": q_chat.IMAGE_PART, "block": image}
    assert q_chat.serialise(parsed.messages, parsed) == data
    after = doc_of(q_chat.serialise(repair_parsed(parsed).messages, parsed))
    assert after["history"][0]["user"]["images"] == [image]


def test_a_rewritten_user_message_keeps_its_prompt_and_images():
    doc = doc_of(read(HEALTHY_ROW))
    image = {"format": "Jpeg", "source": {"Bytes": [255, 216, 255]}}
    doc["history"][2]["user"]["content"] = {"Prompt": {"prompt": "look at this instead"}}
    doc["history"][2]["user"]["images"] = [image]
    data = orjson.dumps(doc)
    after = doc_of(repaired(data))
    user = after["history"][2]["user"]
    assert user["content"]["CancelledToolUses"]["prompt"] == "look at this instead"
    assert user["images"] == [image]


def test_a_blank_reply_dropped_by_the_repair_takes_its_entry_with_it():
    doc = doc_of(read(PAIRS))
    doc["history"][1][1] = {"Response": {"message_id": "m-blank", "content": "  "}}
    doc["history"].append(
        [copy.deepcopy(doc["history"][0][0]), {"Response": {"message_id": "m-3", "content": "ok"}}]
    )
    doc["history"][2][0]["content"] = {"Prompt": {"prompt": "and now?"}}
    doc["valid_history_range"] = [0, 3]
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    parsed = formats.load(data)
    repair = repair_parsed(parsed)
    assert "MSG-1" in {a.rule for a in repair.actions}
    after = doc_of(q_chat.serialise(repair.messages, parsed))
    assert len(after["history"]) == 2 and after["valid_history_range"] == [0, 2]
    merged = after["history"][1][0]["content"]["CancelledToolUses"]
    assert merged["prompt"] == "The user interrupted the tool execution.\nand now?"
    assert not diagnose(formats.load(orjson.dumps(after), "q-chat")).needs_repair
