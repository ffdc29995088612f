"""Cline / Roo Code task histories: text answers pair with their calls, real breaks stay."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.diagnosis.rows import message_facts
from inspector.formats import FormatError, anthropic, cline, load
from inspector.formats.jsondoc import text_of
from inspector.formats.private import calls_of
from tests.formats.shapes import (
    check_written_back,
    damaged,
    examples,
    findings,
    outline,
    repair,
    repaired_round_trip,
)
from tests.testdata import CORPUS, files, read

HISTORIES = files(CORPUS / "cline")
RESUMED = CORPUS / "cline" / "mike4567-MRA04242026__api_conversation_history.json"
FINISHED = (
    CORPUS
    / "cline"
    / (
        "gmfstu-Online-Card-Architecture__exported_conversation_1769053680585"
        "__api_conversation_history.json"
    )
)

TASK = {"type": "text", "text": "<task>\nfix the bug\n</task>"}
ENV = {"type": "text", "text": "<environment_details>\n# Current Time\nnow\n</environment_details>"}


def use(cid: str, name: str = "read_file", **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": args or {"path": "a.py"}}


def said(*blocks: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks), **keys}


def asked(*blocks: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks), **keys}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def doc(*records: dict[str, Any]) -> bytes:
    return orjson.dumps(list(records))


def texts(data: bytes) -> Counter[str]:
    """Every text a history holds, in text blocks, string contents and results."""
    out: Counter[str] = Counter()
    for record in orjson.loads(data):
        content = record.get("content") if isinstance(record, dict) else None
        blocks = [text(content)] if isinstance(content, str) else content or []
        for block in blocks:
            if block.get("type") == "text":
                out[block["text"]] += 1
            elif block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                out[block["content"]] += 1
    return out


# A native-tool session as Cline writes it when it has no provider id for a call: text answers.
SESSION = doc(
    asked(TASK, ENV, ts=1),
    said(text("Reading both."), use("t1"), use("t2", "write_to_file", path="b.py"), ts=2),
    asked(
        text("[read_file for 'a.py'] Result:\nprint(1)"),
        text("Skipping tool due to user rejecting a previous tool. [write_to_file for 'b.py']"),
        ENV,
        ts=3,
    ),
    said(text("Running it."), use("t3", "execute_command", command="ls"), ts=4),
    asked(
        text("[TASK RESUMPTION] This task was interrupted 3 minutes ago."),
        ENV,
        ts=5,
    ),
    said(text("Done."), ts=6),
)


@pytest.mark.parametrize("path", HISTORIES, ids=lambda p: p.name)
def test_real_history_loads_as_cline_and_round_trips_byte_for_byte(path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == "cline"
    assert parsed.problems == []
    assert cline.serialise(list(parsed.messages), parsed) == data
    assert len(parsed.sources) == len(parsed.messages)


def test_the_resumed_session_has_its_eight_real_breaks_not_231():
    parsed = load(read(RESUMED))
    calls = [c for m in parsed.messages for c in calls_of(m)]
    results = [m for m in parsed.messages if m["role"] == "tool"]
    assert (len(calls), len(results)) == (231, 223)
    assert parsed.meta["text_results"] == 223
    dangling = [f for f in findings(parsed) if f[0] == "PAIR-1"]
    assert len(dangling) == 8
    assert {f[0] for f in findings(parsed)} == {"PAIR-1"}
    doc_ = orjson.loads(read(RESUMED))
    for _, lines, _ in dangling:
        # The message after each call left unanswered is Cline resuming the task.
        after = doc_[lines[0]]
        assert after["role"] == "user"
        assert any(t.startswith("[TASK RESUMPTION]") for t in map(str, _texts(after)))
    assert Counter(parsed.causes.values())["turn_aborted"] == 8


def _texts(record: dict[str, Any]) -> list[str]:
    content = record["content"]
    return [content] if isinstance(content, str) else [b.get("text", "") for b in content]


def test_the_repaired_session_keeps_every_text_and_adds_only_the_eight_results():
    data = read(RESUMED)
    parsed = load(data)
    written, again = repaired_round_trip(cline, parsed)
    before, after = texts(data), texts(written)
    assert before - after == Counter()
    added = after - before
    assert sum(added.values()) == 8
    assert all(t.startswith("Tool call was interrupted; no result.") for t in added)
    out = orjson.loads(written)
    assert len(out) == len(orjson.loads(data))
    for record in out:  # each new result leads the user message after its call
        blocks = record["content"] if isinstance(record["content"], list) else []
        for k, block in enumerate(blocks):
            if block.get("type") == "tool_result":
                assert all(b.get("type") == "tool_result" for b in blocks[:k])
    assert again.format == "cline"


def test_the_finished_task_has_only_its_unanswered_completion():
    parsed = load(read(FINISHED))
    calls = [c for m in parsed.messages for c in calls_of(m)]
    assert (len(calls), sum(m["role"] == "tool" for m in parsed.messages)) == (47, 46)
    assert [(f[0], f[2]) for f in findings(parsed)] == [("PAIR-1", calls[-1]["tool_call_id"])]
    assert calls[-1]["name"] == "attempt_completion"


def test_text_answers_pair_in_call_order_and_a_skipped_call_never_ran():
    parsed = cline.parse(SESSION)
    assert [(m["role"], m["metadata"].get("tool_call_id")) for m in parsed.messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "t1"),
        ("tool", "t2"),
        ("user", None),
        ("assistant", None),
        ("user", None),
        ("assistant", None),
    ]
    assert parsed.messages[2]["content"] == "[read_file for 'a.py'] Result:\nprint(1)"
    assert parsed.messages[3]["metadata"]["name"] == "write_to_file"
    assert parsed.not_started == {"t2"}
    assert parsed.causes == {5: "turn_aborted"}
    assert findings(parsed) == [("PAIR-1", [4], "t3")]


def test_the_interrupted_call_is_answered_first_in_the_next_user_message():
    parsed = cline.parse(SESSION)
    written, _ = repaired_round_trip(cline, parsed)
    out = orjson.loads(written)
    assert out[:4] == orjson.loads(SESSION)[:4]
    assert out[5] == orjson.loads(SESSION)[5]
    resumed = out[4]
    assert resumed["ts"] == 5
    head = resumed["content"][0]
    assert (head["type"], head["tool_use_id"]) == ("tool_result", "t3")
    assert head["content"].startswith("Tool call was interrupted; no result.")
    assert resumed["content"][1:] == orjson.loads(SESSION)[4]["content"]


def test_a_call_at_the_end_gets_a_user_message_of_its_own():
    data = doc(asked(TASK), said(use("t1")))
    written, _ = repaired_round_trip(cline, cline.parse(data))
    last = orjson.loads(written)[-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result"]


def test_roo_code_results_pair_by_id_and_renamed_ids_stay_paired():
    data = doc(
        asked(TASK),
        said(use("r1"), ts=2),
        asked({"type": "tool_result", "tool_use_id": "r1", "content": "one"}, ENV),
        said(use("r1", path="b.py")),
        asked({"type": "tool_result", "tool_use_id": "r1", "content": "two"}),
    )
    parsed = cline.parse(data)
    assert {r for r, *_ in findings(parsed)} == {"ID-1"}
    written, again = repaired_round_trip(cline, parsed)
    out = orjson.loads(written)
    assert out[3]["content"][0]["id"] == "r1_1"
    assert out[4]["content"][0] == {"type": "tool_result", "tool_use_id": "r1_1", "content": "two"}
    assert out[:3] == orjson.loads(data)[:3]
    assert outline(again.messages)[-1] == ("tool", "r1_1", "two")


def test_old_xml_tool_calls_are_text_and_make_no_finding():
    data = doc(
        asked(TASK),
        said(text("Let me look.\n<read_file>\n<path>a.py</path>\n</read_file>")),
        asked(text("[read_file for 'a.py'] Result:\nprint(1)"), ENV),
        said(text("It prints 1.")),
    )
    parsed = cline.parse(data)
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "user", "assistant"]
    assert repair(parsed).actions == []


def test_roo_code_reasoning_is_thinking_and_its_records_are_kept():
    reasoning = {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    data = doc(
        asked(TASK),
        reasoning,
        said({"type": "reasoning", "text": "plan", "summary": []}, use("r1"), ts=3),
    )
    parsed = cline.parse(data)
    assert parsed.meta["reasoning_records"] == 1
    assert parsed.messages[1]["content"] == [{"type": "thinking", "thinking": "plan"}]
    written, _ = repaired_round_trip(cline, parsed)
    out = orjson.loads(written)
    assert out[1] == reasoning
    assert out[-1]["content"][0]["tool_use_id"] == "r1"


@pytest.mark.parametrize(
    ("records", "field"),
    [
        ([asked(TASK), {"role": "system", "content": "x"}], "'role'"),
        ([asked(TASK), {"role": "assistant"}], "'content'"),
        ([asked(TASK), said({"type": "server_tool_use", "id": "s"})], "'server_tool_use'"),
        ([asked(TASK, {"type": "input_audio"})], "'input_audio'"),
        ([asked(TASK), "text"], "not an object"),
    ],
    ids=["role", "content", "assistant-block", "user-block", "record"],
)
def test_a_record_this_reader_does_not_know_refuses_the_file_naming_it(records, field):
    with pytest.raises(FormatError, match=field) as caught:
        cline.parse(doc(*records))
    assert "message 2" in str(caught.value) or "message 1" in str(caught.value)


def test_a_plain_anthropic_list_is_not_taken_for_a_task_history():
    answer = {"type": "tool_result", "tool_use_id": "t1", "content": "print(1)"}
    data = doc(asked(text("hi")), said(use("t1")), asked(answer), said(text("It prints 1.")))
    assert cline.sniff(data) == 0
    with pytest.raises(FormatError, match="<task>"):
        cline.parse(data)
    assert load(data).format == "anthropic"
    assert cline.sniff(read(RESUMED)[:65536]) > anthropic.sniff(read(RESUMED)[:65536])


def test_cline_text_result_words_are_kept_when_its_call_is_renamed():
    data = doc(
        asked(TASK),
        said(use("cline")),
        asked(text("[read_file for 'a.py'] Result:\none")),
        said(use("cline", path="b.py")),
        asked(text("[read_file for 'b.py'] Result:\ntwo")),
    )
    written, _ = repaired_round_trip(cline, cline.parse(data))
    out = orjson.loads(written)
    assert out[3]["content"][0]["id"] == "cline_1"
    assert out[4] == orjson.loads(data)[4]


def test_every_text_of_a_repaired_history_is_kept():
    parsed = cline.parse(SESSION)
    written = cline.serialise(repair(parsed).messages, parsed)
    assert texts(SESSION) - texts(written) == Counter()
    assert text_of(cline.parse(written).messages[-1]["content"]) == "Done."


MESSAGES = orjson.loads(SESSION)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.sampled_from(range(len(MESSAGES))), min_size=1, max_size=10).map(
        lambda picks: doc(MESSAGES[0], *(MESSAGES[i] for i in picks))
    )
)
def test_shuffled_histories_are_repaired_into_histories_that_need_no_more(data: bytes) -> None:
    check_written_back(data)


def test_load_refuses_a_history_it_cannot_read_instead_of_guessing_another_shape():
    data = doc(asked(TASK, ENV), said({"type": "server_tool_use", "id": "s1"}), asked(ENV))
    with pytest.raises(FormatError, match="server_tool_use") as caught:
        load(data)
    assert caught.value.unread
    assert "Cline" in str(caught.value)
    assert [name for name, _ in caught.value.attempts] == ["cline"]


def test_a_roo_code_history_resumed_after_an_interruption_is_healthy():
    # Roo Code answers a call cut by an interruption itself when the task resumes.
    roo = asked(text("<user_message>\nfix it\n</user_message>"), ENV, ts=1)
    data = doc(
        roo,
        said(use("toolu_1", "execute_command", command="make"), ts=2),
        asked(
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "Task was interrupted before this tool call could be completed.",
            },
            text("[TASK RESUMPTION] This task was interrupted just now."),
            ENV,
            ts=3,
        ),
    )
    assert cline.sniff(data) == 0.9
    parsed = load(data)
    assert parsed.format == "cline"
    assert repair(parsed).actions == []
    assert parsed.causes == {}


def test_the_ui_log_beside_the_history_is_refused_with_where_the_conversation_is():
    ui = orjson.dumps(
        [
            {"ts": 1769053680628, "type": "say", "say": "text", "text": "fix the bug"},
            {"ts": 1769053680700, "type": "say", "say": "api_req_started", "text": "{}"},
            {"ts": 1769053690000, "type": "ask", "ask": "followup", "text": "which file?"},
        ]
    )
    with pytest.raises(FormatError, match=r"open api_conversation_history\.json") as caught:
        load(ui)
    assert caught.value.unread


def test_the_timeline_shows_each_records_time_model_and_tokens_as_cline_wrote_them() -> None:
    parsed = load(read(RESUMED), "cline")
    doc = orjson.loads(read(RESUMED))
    facts = message_facts(parsed)
    assert len(facts) == len(parsed.messages)
    replies = 0
    for message, fact, (number, *_) in zip(parsed.messages, facts, parsed.sources, strict=True):
        record = doc[number - 1]
        assert fact is not None
        stamp = datetime.fromtimestamp(record["ts"] / 1000, UTC)
        assert datetime.fromisoformat(fact["at"]) == stamp
        if message["role"] == "assistant" and "metrics" in record:
            replies += 1
            assert fact["model"] == record["modelInfo"]["modelId"]
            assert fact["tokens_in"] == record["metrics"]["tokens"]["prompt"]
            assert fact["tokens_out"] == record["metrics"]["tokens"]["completion"]
            assert fact["cache_read"] == record["metrics"]["tokens"]["cached"]
        else:
            assert fact["tokens_out"] is None
    assert replies == sum(1 for r in doc if r["role"] == "assistant" and "metrics" in r) > 0


def test_a_roo_code_history_gives_its_times_and_an_odd_time_is_left_unsaid() -> None:
    history = [
        {"role": "user", "content": [TASK, ENV], "ts": 1760000000000},
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}], "ts": 1e300},
    ]
    facts = message_facts(load(orjson.dumps(history), "cline"))
    assert [f["at"] if f else None for f in facts] == ["2025-10-09T08:53:20Z", None]
    assert all(f and f["model"] is None and f["tokens_in"] is None for f in facts)


CLI_SESSION = CORPUS / "cline" / "cline-cline__sdk_fixtures_session_session.messages.json"
CLI_CRASHED = CORPUS / "cline" / "derived__cline-sdk-success__crashed-in-tool.messages.json"


def test_the_cline_clis_session_file_is_read_as_cline_with_its_own_facts() -> None:
    data = read(CLI_SESSION)
    parsed = load(data)  # found by its sniff, not told
    doc = orjson.loads(data)
    assert parsed.format == "cline" and parsed.meta["session_id"] == doc["sessionId"]
    facts = message_facts(parsed)
    replies = [m for m in doc["messages"] if "metrics" in m]
    assert replies
    assert sum(f["tokens_out"] or 0 for f in facts if f) == sum(
        m["metrics"]["outputTokens"] for m in replies
    )
    assert sum(f.get("cache_read") or 0 for f in facts if f) == sum(
        m["metrics"]["cacheReadTokens"] for m in replies
    )
    models = {f["model"] for f in facts if f and f["model"]}
    assert models == {m["modelInfo"]["id"] for m in doc["messages"] if "modelInfo" in m}
    calls = sum(1 for m in doc["messages"] for b in m["content"] if b["type"] == "tool_use")
    assert sum(len(calls_of(m)) for m in parsed.messages) == calls
    assert findings(parsed) == []


def test_a_cut_cline_cli_session_is_repaired_in_its_own_file_keeping_its_keys() -> None:
    data = read(CLI_CRASHED)
    parsed = load(data, "cline")
    assert [(rule, call) for rule, _, call in findings(parsed)] == [("PAIR-1", "tool-call-1")]
    out, again = repaired_round_trip(cline, parsed)
    before, after = orjson.loads(data), orjson.loads(out)
    assert {k: v for k, v in after.items() if k != "messages"} == {
        k: v for k, v in before.items() if k != "messages"
    }
    assert after["messages"][: len(before["messages"])] == before["messages"]
    (added,) = after["messages"][len(before["messages"]) :]
    call = before["messages"][-1]["content"][-1]
    assert added["role"] == "user"
    assert [b["tool_use_id"] for b in added["content"] if b["type"] == "tool_result"] == [
        call["id"]
    ]
    assert out.startswith(b'{\n  "version"') and out.endswith(b"}\n")  # as the CLI writes it
    assert findings(again) == []


# The small files (the large real histories make each example slow, not different).
SMALL_HISTORIES = [p for p in HISTORIES if len(read(p)) < 64 * 1024]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(damaged([read(p) for p in SMALL_HISTORIES]))
def test_damaged_histories_are_repaired_into_histories_that_need_no_more(data: bytes) -> None:
    # Histories and session files with lines dropped, doubled, swapped or cut, or a value replaced:
    # whatever they read as, the repair written back in that shape needs no more.
    check_written_back(data)
