"""The guard on small bodies of each provider: what it repairs, what it leaves, what it refuses."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import orjson
import pytest

from inspector.engine.providers import check
from inspector.formats import openai_chat
from transcript_inspector import UNREAD, Guarded, guard


def rules(guarded: Guarded) -> list[str]:
    return [f["rule"] for f in guarded.findings]


def chat_call(cid: str, name: str = "search") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": '{"q": "x"}'}}


CHAT_UNANSWERED = {
    "model": "gpt-4.1",
    "temperature": 0,
    "tools": [{"type": "function", "function": {"name": "search", "parameters": {}}}],
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Find it."},
        {"role": "assistant", "content": None, "tool_calls": [chat_call("call_1")]},
        {"role": "user", "content": "Stop, try another way."},
    ],
}


def test_an_unanswered_chat_call_gets_a_result_and_the_rest_stays() -> None:
    sent = orjson.dumps(CHAT_UNANSWERED)
    guarded = guard(CHAT_UNANSWERED, "openai-chat")
    assert orjson.dumps(CHAT_UNANSWERED) == sent  # never mutated
    assert guarded.changed
    messages = guarded.body["messages"]
    assert messages[:3] == CHAT_UNANSWERED["messages"][:3]
    assert messages[3]["role"] == "tool" and messages[3]["tool_call_id"] == "call_1"
    assert messages[3]["content"].startswith("Tool call was interrupted; no result.")
    assert messages[4] == CHAT_UNANSWERED["messages"][3]
    assert {k: v for k, v in guarded.body.items() if k != "messages"} == {
        k: v for k, v in CHAT_UNANSWERED.items() if k != "messages"
    }
    assert rules(guarded) == ["PROV-OPENAI-CHAT", "PAIR-1"]
    assert (
        "messages with role 'tool'" in guarded.findings[0]["text"]
        or "tool_calls" in (guarded.findings[0]["text"])
    )
    assert check("openai-chat", guarded.body).accepted


def test_read_only_tools_get_the_safe_to_retry_wording() -> None:
    guarded = guard(CHAT_UNANSWERED, "openai-chat", read_only=["search"])
    assert "safe to call again" in guarded.body["messages"][3]["content"]


ANTHROPIC_KIMI_IDS = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 512,
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": "Read both."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "functions.read:0", "name": "read", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "functions.read:0", "content": "a"}],
        },
    ],
}


def test_an_id_anthropic_refuses_is_sent_under_one_it_takes() -> None:
    guarded = guard(ANTHROPIC_KIMI_IDS, "anthropic")
    assert guarded.changed
    call = guarded.body["messages"][1]["content"][0]
    result = guarded.body["messages"][2]["content"][0]
    assert call["id"] == result["tool_use_id"] == "functions_read_0"
    assert guarded.body["system"] == ANTHROPIC_KIMI_IDS["system"]
    assert "ID-3" in rules(guarded)
    assert check("anthropic", guarded.body).accepted


RESPONSES_ORPHAN = {
    "model": "gpt-5",
    "instructions": "Be brief.",
    "store": False,
    "input": [
        {"role": "user", "content": "Go."},
        {"type": "function_call_output", "call_id": "call_lost", "output": "42"},
        {"role": "user", "content": "And?"},
    ],
}


def test_a_responses_output_without_its_call_becomes_a_note() -> None:
    guarded = guard(RESPONSES_ORPHAN, "responses")
    assert guarded.changed
    assert guarded.body["input"][0] == RESPONSES_ORPHAN["input"][0]
    assert not any(i.get("type") == "function_call_output" for i in guarded.body["input"])
    assert "42" in orjson.dumps(guarded.body["input"]).decode()
    assert guarded.body["instructions"] == "Be brief."
    assert "PAIR-3" in rules(guarded)
    assert check("responses", guarded.body).accepted


def test_a_body_that_continues_a_stored_response_is_left_alone() -> None:
    body = {**RESPONSES_ORPHAN, "previous_response_id": "resp_123"}
    guarded = guard(body, "responses")
    assert not guarded.changed and orjson.dumps(guarded.body) == orjson.dumps(body)
    assert rules(guarded) == ["PROV-RESPONSES"]
    assert "previous_response_id" in guarded.findings[0]["text"]


GEMINI_SHORT = {
    "systemInstruction": {"parts": [{"text": "Be brief."}]},
    "generationConfig": {"temperature": 0.1},
    "contents": [
        {"role": "user", "parts": [{"text": "Weather in Paris and Rome?"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "weather", "args": {"city": "Rome"}}},
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "weather", "response": {"t": 20}}}],
        },
    ],
}


def test_a_gemini_turn_answered_in_part_is_answered_in_full() -> None:
    guarded = guard(GEMINI_SHORT, "gemini")
    assert guarded.changed
    answers = guarded.body["contents"][2]["parts"]
    assert [p["functionResponse"]["name"] for p in answers] == ["weather", "weather"]
    assert answers[0] == GEMINI_SHORT["contents"][2]["parts"][0]
    assert guarded.body["generationConfig"] == {"temperature": 0.1}
    assert "PAIR-1" in rules(guarded)
    assert check("gemini", guarded.body).accepted


@pytest.mark.parametrize(
    ("provider", "body"),
    [
        ("openai-chat", CHAT_UNANSWERED),
        ("anthropic", ANTHROPIC_KIMI_IDS),
        ("responses", RESPONSES_ORPHAN),
        ("gemini", GEMINI_SHORT),
    ],
)
def test_the_guarded_body_is_a_new_object_and_guarding_it_again_changes_nothing(
    provider: str, body: dict[str, Any]
) -> None:
    once = guard(body, provider)
    assert once.body is not body
    twice = guard(once.body, provider)
    assert not twice.changed and twice.findings == []
    assert orjson.dumps(twice.body) == orjson.dumps(once.body)
    assert twice.body is not once.body


def test_an_accepted_body_comes_back_byte_for_byte_even_with_a_blank_assistant_message() -> None:
    # The inspector would drop the blank placeholder (MSG-1); the provider takes it.
    body = {
        "model": "gpt-4.1",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "hello?"},
        ],
    }
    guarded = guard(body, "openai-chat")
    assert check("openai-chat", body).accepted
    assert orjson.dumps(guarded.body) == orjson.dumps(body)
    assert not guarded.changed and guarded.findings == []


@pytest.mark.parametrize(
    "body",
    [
        None,
        "messages",
        [{"role": "user", "content": "hi"}],
        {},
        {"messages": "hi"},
        {"messages": [{"role": "user", "content": "hi"}, 7, {"role": "tool"}]},
    ],
)
def test_an_odd_body_comes_back_unchanged_with_a_finding(body: Any) -> None:
    guarded = guard(body, "openai-chat")
    assert not guarded.changed
    assert orjson.dumps(guarded.body) == orjson.dumps(body)
    assert guarded.findings


def test_a_body_json_cannot_hold_comes_back_as_it_was() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "when": {1, 2}}
    guarded = guard(body, "openai-chat")
    assert not guarded.changed and guarded.body == body and guarded.body is not body
    assert rules(guarded) == [UNREAD]


def test_an_unknown_provider_is_the_callers_mistake() -> None:
    with pytest.raises(ValueError, match="unknown provider 'cohere'"):
        guard({"messages": []}, "cohere")


def test_importing_the_library_imports_no_django_and_no_web_layer() -> None:
    # After a repair and its findings too (the timeline is worked out when they are read),
    # and with the hooks module: nothing of Django, the web layer or httpx is loaded.
    code = (
        "import sys, transcript_inspector, transcript_inspector.hooks\n"
        "from transcript_inspector import guard\n"
        "ok = guard({'messages': [{'role': 'user', 'content': 'hi'}]}, 'openai-chat')\n"
        "call = {'id': 'c1', 'type': 'function', 'function': {'name': 'f', 'arguments': '{}'}}\n"
        "lost = [{'role': 'user', 'content': 'go'},"
        " {'role': 'assistant', 'content': None, 'tool_calls': [call]},"
        " {'role': 'user', 'content': 'stop'}]\n"
        "fixed = guard({'messages': lost}, 'openai-chat')\n"
        "rules = [f['rule'] for f in fixed.findings]\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'httpx', 'litellm')"
        " or m.startswith(('inspector.web', 'inspector.share', 'inspector.scan',"
        " 'inspector.watch', 'inspector.search', 'inspector.settings')))\n"
        "print(','.join(bad))\n"
        "print(ok.changed, fixed.changed, ','.join(rules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == ["", "False True PROV-OPENAI-CHAT,PAIR-1"], done.stdout


def test_the_start_the_provider_took_keeps_its_ids_when_a_later_turn_is_repaired() -> None:
    # The check takes the empty id of the first turn; the export would rename it. A later
    # lost result makes the body refused: the first turn still goes out as it was sent.
    first_turn = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": None, "tool_calls": [chat_call("")]},
        {"role": "tool", "content": "done", "tool_call_id": ""},
    ]
    start = {"model": "gpt-4.1", "messages": first_turn}
    assert check("openai-chat", start).accepted
    later = [
        {"role": "assistant", "content": "Next.", "tool_calls": [chat_call("call_9")]},
        {"role": "user", "content": "Stop."},
    ]
    guarded = guard({**start, "messages": first_turn + later}, "openai-chat")
    assert guarded.changed
    assert guarded.body["messages"][:3] == first_turn
    assert guard(start, "openai-chat").body["messages"] == first_turn
    assert guarded.body["messages"][4]["tool_call_id"] == "call_9"


def test_a_writer_that_fails_leaves_the_body_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any) -> bytes:
        raise KeyError("state")

    monkeypatch.setattr(openai_chat, "serialise", broken)
    guarded = guard(CHAT_UNANSWERED, "openai-chat")
    assert not guarded.changed
    assert orjson.dumps(guarded.body) == orjson.dumps(CHAT_UNANSWERED)
    assert rules(guarded) == ["PROV-OPENAI-CHAT", UNREAD]
    assert "KeyError" in guarded.findings[-1]["text"]


def test_a_history_the_provider_takes_only_for_what_follows_goes_out_as_it_came() -> None:
    # Responses takes an output sent after the next turn; the shorter history, whose call
    # has no output yet, is refused and repaired. The longer one is accepted: never changed.
    call = {"type": "function_call", "call_id": "c1", "name": "search", "arguments": "{}"}
    later = {"type": "function_call", "call_id": "c2", "name": "search", "arguments": "{}"}
    shorter = {"model": "gpt-5", "input": [{"role": "user", "content": "go"}, call]}
    longer = {
        **shorter,
        "input": [
            *shorter["input"],
            later,
            {"type": "function_call_output", "call_id": "c2", "output": "two"},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
        ],
    }
    assert check("responses", longer).accepted and not check("responses", shorter).accepted
    assert guard(shorter, "responses").changed
    assert not guard(longer, "responses").changed


def test_a_gemini_call_id_stays_on_its_call_when_a_later_response_has_none() -> None:
    # A later id-less response answers a later call with the same real id by name: the
    # reader once took that real id for a made-up one and left it out of every turn.
    def call(cid: str) -> dict[str, Any]:
        return {"functionCall": {"id": cid, "name": "search", "args": {}}}

    first_answer = {"functionResponse": {"id": "c1", "name": "search", "response": {"r": 1}}}
    answer = {"functionResponse": {"name": "search", "response": {"r": 2}}}
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [call("c1"), call("c3")]},  # c3 is never answered
            {"role": "user", "parts": [first_answer]},
            {"role": "model", "parts": [call("c1")]},
            {"role": "user", "parts": [answer]},
        ]
    }
    guarded = guard(body, "gemini")
    assert guarded.changed and check("gemini", guarded.body).accepted
    assert guarded.body["contents"][1] == body["contents"][1]
    assert guarded.body["contents"][2]["parts"][0] == first_answer


def test_gemini_snake_case_part_names_are_read_as_gemini_reads_them() -> None:
    # Proto JSON takes both spellings; LiteLLM writes ``function_call``.
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}]},
            {"role": "model", "parts": [{"function_call": {"name": "weather", "args": {}}}]},
            {"role": "user", "parts": [{"text": "Never mind."}]},
        ]
    }
    guarded = guard(body, "gemini")
    assert guarded.changed
    assert rules(guarded) == ["PROV-GEMINI", "PAIR-1"]
    parts = guarded.body["contents"][2]["parts"]
    assert parts[0]["functionResponse"]["name"] == "weather"
    assert guarded.body["contents"][1]["parts"] == [
        {"functionCall": {"name": "weather", "args": {}}}
    ]
    assert check("gemini", guarded.body).accepted
    answer = {"role": "user", "parts": [{"function_response": {"name": "weather", "response": {}}}]}
    healthy = {"contents": [*body["contents"][:2], answer]}
    assert check("gemini", healthy).accepted
    same = guard(healthy, "gemini")
    assert not same.changed and same.body == healthy
