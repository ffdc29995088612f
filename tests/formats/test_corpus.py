"""Every real file in the corpus loads; the provider-shape files read, repair and export right.

The corpus README says which files are broken and how; every other file is
healthy, so a pairing finding (PAIR-*, ID-*) on it would be a reader bug.
Claude Code and Codex files get their detailed checks in their own modules'
tests; here they only have to load.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from inspector.diagnosis import repair_parsed
from inspector.engine.conservation import losses
from inspector.engine.providers import PROVIDERS, validate
from inspector.formats import (
    FORMATS,
    FormatError,
    Parsed,
    export_wire,
    load,
    load_all,
    load_part,
    openai_chat,
    to_wire,
)
from tests.engine.helpers import repair_history
from tests.testdata import CORPUS, files, read

ALL_FILES = files(CORPUS)

# Folder -> the format its files are in. A recording's last exchange decides its shape:
# openai-chat/...multiple_agent_tool_calls starts on Gemini and gemini/...from_other_model
# starts on Responses, and both end in their folder's shape.
FOLDERS = {
    "openai-chat": "openai-chat",
    "anthropic": "anthropic",
    "responses": "responses",
    "gemini": "gemini",
}
PROVIDER_FILES = [p for p in ALL_FILES if p.parent.name in FOLDERS]

INTERLEAVED = (
    "pydantic-ai__test_deepseek_responses__test_deepseek_responses_rejects_interleaved_"
    "function_calls.extracted.json"
)
TAU = "sierra-research-tau-bench__gpt-4o-airline.json"

# The real defects of the broken files among them (everything else is healthy).
DEFECTS = {
    # DeepSeek answered 400 "No tool output found for tool call call-a": call-a's output
    # comes after the next assistant message.
    INTERLEAVED: {"PAIR-1", "PAIR-2", "PAIR-3"},
    # gpt-4o repeated call ids across turns in these trajectories (see the test below).
    TAU: {"ID-1"},
}


def name_of(path: Path) -> str:
    return str(path.relative_to(CORPUS))


def pairing_rules(parsed: Parsed) -> set[str]:
    actions = repair_history(parsed.messages, not_started=parsed.not_started, causes=parsed.causes)
    return {a.rule for a in actions.actions if a.rule.startswith(("PAIR-", "ID-"))}


def test_the_corpus_is_there():
    assert len(ALL_FILES) >= 150
    assert len(PROVIDER_FILES) == 32


@pytest.mark.parametrize("path", ALL_FILES, ids=name_of)
def test_every_corpus_file_loads(path: Path):
    data = read(path)
    if not data:
        # A session file Claude Code created and never wrote to: nothing to read, and
        # load says so instead of pretending it read a transcript.
        with pytest.raises(FormatError, match="empty"):
            load(data)
        return
    parsed = load(data)
    assert parsed.format in FORMATS
    assert len(parsed.sources) == len(parsed.messages)


def every_part(data: bytes) -> list[Parsed]:
    """Every conversation of a file, and every branch of a forked session besides the active one."""
    every = load_all(data)
    for parsed in list(every):
        for branch in parsed.meta.get("branches") or ():
            if not branch.get("active") and branch.get("leaf"):
                every.append(load_part(data, parsed.format, leaf=branch["leaf"]))
    return every


@pytest.mark.parametrize("path", ALL_FILES, ids=name_of)
def test_repairing_any_conversation_of_any_file_loses_nothing(path: Path):
    data = read(path)
    try:
        every = every_part(data)
    except FormatError:
        return  # an empty or unknown file: the test above holds what it must say
    for parsed in every:
        repair = repair_parsed(parsed)
        lost = losses(parsed.messages, repair)
        assert not lost, "; ".join(map(str, lost))


def test_the_conservation_check_covers_the_whole_corpus():
    parts = 0
    for path in ALL_FILES:
        try:
            parts += len(every_part(read(path)))
        except FormatError:
            continue
    assert parts >= 390, parts  # 383 conversations and 11 side branches today


@pytest.mark.parametrize("path", PROVIDER_FILES, ids=name_of)
def test_provider_file_is_read_in_its_shape_and_written_back_unchanged(path: Path):
    data = read(path)
    parsed = load(data)
    assert parsed.format == FOLDERS[path.parent.name]
    assert parsed.problems == []
    module = FORMATS[parsed.format]
    assert module.serialise(parsed.messages, parsed) == data
    again = module.parse(module.serialise(list(parsed.messages), parsed))
    assert again.messages == parsed.messages


@pytest.mark.parametrize("path", PROVIDER_FILES, ids=name_of)
def test_healthy_files_have_no_pairing_findings_and_broken_ones_their_defect(path: Path):
    parsed = load(read(path))
    assert pairing_rules(parsed) == DEFECTS.get(path.name, set())


@pytest.mark.parametrize("path", PROVIDER_FILES, ids=name_of)
def test_repaired_file_reads_back_clean_and_exports_pass_every_check(path: Path):
    parsed = load(read(path))
    repaired = repair_history(parsed.messages, not_started=parsed.not_started, causes=parsed.causes)
    written = FORMATS[parsed.format].serialise(repaired.messages, parsed)
    again = load(written)
    assert again.format == parsed.format
    assert repair_history(again.messages).actions == []
    for provider in PROVIDERS:
        wire, _ = export_wire(repaired.messages, provider)
        assert validate(provider, wire) == [], provider


def test_interleaved_calls_show_the_output_the_provider_missed():
    parsed = load(read(CORPUS / "responses" / INTERLEAVED))
    before = [p.text for p in validate("openai-chat", to_wire(parsed.messages, "openai-chat"))]
    assert before[0].endswith("did not have response messages: call-a")
    actions = repair_history(parsed.messages).actions
    assert [(a.rule, a.call_id) for a in actions if a.rule != "PAIR-2"] == [
        ("PAIR-1", "call-a"),
        ("PAIR-3", "call-a"),
    ]


def test_tau_bench_findings_are_exactly_its_repeated_call_ids():
    tasks = orjson.loads(read(CORPUS / "openai-chat" / TAU))
    assert len(tasks) == 200
    renamed_total = 0
    for task in tasks:
        declared = [
            call["id"]
            for message in task["traj"]
            if message["role"] == "assistant"
            for call in message.get("tool_calls") or []
        ]
        repeated = {cid for cid, count in Counter(declared).items() if count > 1}
        parsed = openai_chat.parse(orjson.dumps([task]))
        actions = repair_history(parsed.messages).actions
        assert {a.rule for a in actions} <= {"ID-1"}, task["task_id"]
        assert {a.old_id for a in actions} == repeated, task["task_id"]
        renamed_total += len(repeated)
    assert renamed_total > 0


def test_kimi_ids_are_refused_by_anthropic_only_until_export_renames_them():
    path = (
        CORPUS
        / "openai-chat"
        / "MoonshotAI-kimi-cli__pr127__531d195b-6436-426e-b010-4bf723a992de.kimi-context.jsonl"
    )
    parsed = load(read(path))
    before = validate("anthropic", to_wire(parsed.messages, "anthropic"))
    assert before and {p.code for p in before} == {"bad_id"}
    wire, renamed = export_wire(parsed.messages, "anthropic")
    assert renamed["Bash:4"] == "Bash_4"
    assert validate("anthropic", wire) == []
