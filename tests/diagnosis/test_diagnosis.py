"""The timeline model over the spec cases and real files (no database)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.diagnosis import (
    Diagnosis,
    diagnose,
    repair_parsed,
    repaired_bytes,
    report,
    report_from,
)
from tests.diagnosis.test_diagnosis_equivalence import messages as any_messages
from tests.testdata import CASES, CORPUS, files, read

REPAIR_CASES = sorted(
    path for path in CASES.glob("*.json") if orjson.loads(read(path))["kind"] == "repair"
)


def _load_case(path: Path) -> tuple[formats.Parsed, dict]:
    case = orjson.loads(read(path))
    return formats.load(orjson.dumps(case["input"]), "canonical"), case


def test_there_are_repair_cases():
    assert len(REPAIR_CASES) >= 10


@pytest.mark.parametrize("path", REPAIR_CASES, ids=lambda p: p.stem)
def test_diagnosis_counts_the_rules_each_case_expects(path):
    parsed, case = _load_case(path)
    diagnosis = diagnose(parsed, _read_only(case))
    assert set(diagnosis.counts) == set(case["expected"]["rules"])
    assert diagnosis.needs_repair == bool(case["expected"]["rules"])
    assert diagnosis.message_count == len(case["input"])
    assert diagnosis.repaired_count == len(case["expected"]["messages"])


@pytest.mark.parametrize("path", REPAIR_CASES, ids=lambda p: p.stem)
def test_rows_show_every_original_and_every_repaired_message(path):
    parsed, case = _load_case(path)
    rows = diagnose(parsed, _read_only(case)).rows
    original = sorted(r["input_index"] for r in rows if r["in_original"])
    repaired = [r["output_index"] for r in rows if r["in_repaired"]]
    assert original == list(range(len(case["input"])))
    assert repaired == list(range(len(case["expected"]["messages"])))
    assert len({r["key"] for r in rows}) == len(rows)


@pytest.mark.parametrize("path", REPAIR_CASES, ids=lambda p: p.stem)
def test_every_finding_points_at_a_row_that_carries_its_rule(path):
    parsed, case = _load_case(path)
    diagnosis = diagnose(parsed, _read_only(case))
    rows = {r["key"]: r for r in diagnosis.rows}
    for finding in diagnosis.findings:
        assert finding["rule"] in rows[finding["row"]]["findings"]
        assert finding["text"] and finding["text"] != finding["rule"]


@pytest.mark.parametrize("path", REPAIR_CASES, ids=lambda p: p.stem)
def test_repaired_history_is_accepted_by_every_provider(path):
    parsed, case = _load_case(path)
    diagnosis = diagnose(parsed, _read_only(case))
    assert not any(v["after"] for v in diagnosis.providers.values()), diagnosis.providers


def test_dangling_call_is_rejected_before_and_accepted_after():
    parsed, _ = _load_case(CASES / "03-dangling-call.json")
    providers = diagnose(parsed).providers
    assert any(
        "did not have response messages: c1" in i["text"]
        for i in providers["openai-chat"]["before"]
    )
    assert any(
        "`tool_use` ids were found without `tool_result`" in i["text"]
        for i in providers["anthropic"]["before"]
    )
    assert providers["responses"]["before"] and providers["gemini"]["before"]
    assert all(not v["after"] for v in providers.values())


def test_inserted_result_is_an_inserted_row_inside_the_span():
    parsed, _ = _load_case(CASES / "03-dangling-call.json")
    rows = diagnose(parsed).rows
    inserted = [r for r in rows if r["state"] == "inserted"]
    assert len(inserted) == 1
    row = inserted[0]
    assert row["healed"] and row["role"] == "tool" and row["findings"] == ["PAIR-1"]
    assert row["span_pos"] == "end" and not row["in_original"]
    assert row["result"]["id"] == "c1"


def test_moved_result_says_where_it_stood():
    parsed, _ = _load_case(CASES / "05-steer-between-call-and-result.json")
    rows = diagnose(parsed).rows
    moved = [r for r in rows if r["state"] == "moved"]
    assert [r["input_index"] for r in moved] == [2]
    assert moved[0]["moved_from"] == 2


def test_renamed_ids_show_old_and_new_on_call_and_result():
    parsed, _ = _load_case(CASES / "09-ids-restart-every-reply.json")
    rows = diagnose(parsed).rows
    call_row = next(r for r in rows if r["input_index"] == 2)
    result_row = next(r for r in rows if r["input_index"] == 3)
    assert call_row["calls"][0]["id"] == "functions.search:0"
    assert call_row["calls"][0]["new_id"] == "functions.search:0_1"
    assert result_row["result"]["new_id"] == "functions.search:0_1"
    assert "ID-1" in call_row["findings"]


def test_orphan_row_becomes_the_note():
    parsed, _ = _load_case(CASES / "07-orphan-result.json")
    row = next(r for r in diagnose(parsed).rows if r["input_index"] == 2)
    assert row["state"] == "note" and row["role"] == "user" and row["original_role"] == "tool"
    assert row["note"] == "orphan_result" and "stray output" in row["text"]


def test_dropped_placeholder_and_partial_call_are_struck_rows():
    parsed, _ = _load_case(CASES / "14-interrupted-before-any-prose.json")
    rows = diagnose(parsed).rows
    dropped = [r for r in rows if r["state"] == "dropped"]
    assert [r["input_index"] for r in dropped] == [1]
    assert dropped[0]["calls"][0]["removed"] is True
    assert {"INT-1", "MSG-1"} <= set(dropped[0]["findings"])
    note = next(r for r in rows if r["note"] == "interruption")
    assert note["state"] == "inserted"
    assert rows.index(dropped[0]) < rows.index(note)


def test_diagnosis_round_trips_through_json():
    parsed, _ = _load_case(CASES / "12-result-after-next-assistant.json")
    diagnosis = diagnose(parsed)
    again = Diagnosis(**orjson.loads(orjson.dumps(diagnosis.to_dict())))
    assert again == diagnosis


def test_report_has_what_the_command_prints():
    data = read(CASES / "12-result-after-next-assistant.json")
    case = orjson.loads(data)
    result = report(orjson.dumps(case["input"]))
    assert result["format"] == "canonical"
    assert result["messages"] == 3
    assert {f["rule"] for f in result["findings"]} == {"PAIR-1", "PAIR-3"}
    assert set(result["providers"]) == {"openai-chat", "anthropic", "responses", "gemini"}
    assert result["providers"]["openai-chat"]["after"] == []
    assert result["problems"] == []


def test_repaired_canonical_bytes_equal_the_case_expectation():
    parsed, case = _load_case(CASES / "13-interrupted-tool-call-keeps-prose.json")
    assert orjson.loads(repaired_bytes(parsed, "canonical")) == case["expected"]["messages"]


def test_broken_claude_code_session_reports_its_line():
    path = files(CORPUS / "claude-code" / "broken", "*4c-02af2759b6*")[0]
    result = report_from(diagnose(formats.load(read(path))))
    assert result["format"] == "claude-code"
    pair1 = [f for f in result["findings"] if f["rule"] == "PAIR-1"]
    assert len(pair1) == 1 and pair1[0]["line"] >= 1


def _read_only(case: dict):
    names = (case.get("options") or {}).get("read_only")
    return (lambda name: name in names) if names else None


def test_interruption_note_names_the_cause_the_format_saw():
    parsed, _ = _load_case(CASES / "13-interrupted-tool-call-keeps-prose.json")
    parsed.causes = {1: "user_stop"}
    repaired = orjson.loads(repaired_bytes(parsed, "canonical"))
    note = next(m for m in repaired if m["metadata"].get("note") == "interruption")
    assert note["content"].startswith(
        "[system note: the previous assistant turn was interrupted by the user before its call"
    )
    row = next(r for r in diagnose(parsed).rows if r["input_index"] == 1)
    assert row["cause"] == "user_stop"


def _plain_spans(outputs: list[dict]) -> dict[int, tuple[int, str]]:
    """Each call turn of the repaired history, from its assistant message to its last result."""
    spans: dict[int, tuple[int, str]] = {}
    number = index = 0
    while index < len(outputs):
        message = outputs[index]
        if message.get("role") == "assistant" and (message.get("metadata") or {}).get("tool_calls"):
            end = index
            while end + 1 < len(outputs) and outputs[end + 1].get("role") == "tool":
                end += 1
            inner = {n: (number, "inside") for n in range(index + 1, end)}
            ends = {index: (number, "start"), end: (number, "end")} if end > index else {}
            spans |= {index: (number, "single"), **inner, **ends}
            number += 1
            index = end + 1
        else:
            index += 1
    return spans


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_messages(), min_size=1, max_size=14))
def test_rows_bracket_each_call_turn_of_the_repaired_history(history):
    parsed = formats.load(orjson.dumps(formats.strip_private(history)), "canonical")
    outputs = repair_parsed(parsed).messages
    expected = _plain_spans(outputs)
    for row in diagnose(parsed).rows:
        if row["output_index"] is None:
            assert (row["span"], row["span_pos"]) == (None, None)
        else:
            assert (row["span"], row["span_pos"]) == expected.get(row["output_index"], (None, None))


def test_an_id_only_the_export_rewrites_is_a_finding_on_its_call():
    # Kimi's ids: nothing to repair, Anthropic refuses them as they are and accepts the
    # export, which rewrites them (ID-3); the timeline says so on the call's row.
    kimi = [
        {"role": "user", "content": "find it"},
        {
            "role": "assistant",
            "content": "",
            "metadata": {
                "tool_calls": [
                    {"tool_call_id": "functions.search:0", "name": "search", "arguments": {}}
                ]
            },
        },
        {"role": "tool", "content": "found", "metadata": {"tool_call_id": "functions.search:0"}},
        {"role": "assistant", "content": "done"},
    ]
    diagnosis = diagnose(formats.load(orjson.dumps(kimi), "canonical"))
    assert not diagnosis.needs_repair
    assert (
        diagnosis.providers["anthropic"]["before"] and not diagnosis.providers["anthropic"]["after"]
    )
    (finding,) = diagnosis.findings
    assert finding["rule"] == "ID-3" and finding["message"] == 1
    assert "Anthropic as functions_search_0" in finding["text"]
    row = next(r for r in diagnosis.rows if r["key"] == finding["row"])
    assert "ID-3" in row["findings"]
    assert diagnosis.counts == {}  # counts are the repair's; ID-3 is the export's


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(any_messages(), min_size=1, max_size=10))
def test_every_change_of_verdict_has_a_finding(history):
    diagnosis = diagnose(formats.load(orjson.dumps(history), "canonical"))
    for name, verdict in diagnosis.providers.items():
        if list(verdict["before"]) != list(verdict["after"]):
            assert diagnosis.findings, name


def test_a_responses_verdict_numbers_the_items_as_the_uploaded_body_does():
    # The body's instructions are no item of its input: the verdict's input[N] are the
    # ones the provider names for the body uploaded.
    long_id = "call_" + "9" * 70
    body = {
        "model": "gpt-5",
        "instructions": "be brief",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": long_id, "name": "a", "arguments": "{}"},
            {"type": "function_call_output", "call_id": long_id, "output": "x"},
        ],
    }
    verdict = diagnose(formats.load(orjson.dumps(body))).providers["responses"]
    texts = [problem["text"] for problem in verdict["before"]]
    assert [text.split("'")[1] for text in texts] == ["input[1].call_id", "input[2].call_id"]
    assert verdict["after"] == []  # the export rewrites the long id (ID-3)
