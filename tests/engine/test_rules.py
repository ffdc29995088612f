"""The rule catalogue: complete, in SPEC order, and every example true to the engine."""

from __future__ import annotations

import re
from importlib.resources import files

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import diagnose, repaired_bytes
from inspector.engine import RULES, Buffer, Rule, providers
from inspector.formats import export_wire
from tests.testdata import SEEDS, SPEC

from .helpers import repair_history

SPEC_IDS = [
    "MEM-3", "MEM-1", "MEM-2", "MEM-10", "MEM-11",
    "PAIR-1", "PAIR-2", "PAIR-3", "ID-1", "ID-2", "ID-3", "MSG-1", "INT-1", "INT-2", "OUT-1",
    "LINE-1",
    "PROV-OPENAI-CHAT", "PROV-ANTHROPIC", "PROV-RESPONSES", "PROV-GEMINI",
]  # fmt: skip
REPAIR_RULES = ["PAIR-1", "PAIR-2", "PAIR-3", "ID-1", "ID-2", "MSG-1", "INT-1", "INT-2"]
EXPORT_RULES = ["ID-3"]
# Rules about how a file's lines are read and written: their examples are lines.
LINE_RULES = ["LINE-1"]


def test_catalogue_has_every_spec_rule_in_spec_order() -> None:
    assert list(RULES) == SPEC_IDS
    assert all(rule.id == key for key, rule in RULES.items())


def test_titles_are_the_spec_tables_words() -> None:
    # The spec's rules, and the project's own in the page beside it (never both).
    spec, ours = SPEC.read_text(), (SPEC.parent / "beyond-the-spec.md").read_text()
    for rule in RULES.values():
        if rule.id.startswith("PROV-"):
            continue
        row = f"| {rule.id} | {rule.title} |"
        assert (row in spec) != (row in ours), rule.id
        assert bool(rule.spec) == (row in spec), rule.id


@pytest.mark.parametrize("rule", RULES.values(), ids=lambda rule: rule.id)
def test_rule_has_words_a_source_and_known_relations(rule: Rule) -> None:
    assert rule.title and rule.summary
    assert len(rule.explanation.split()) >= 40, "explanation should be a real paragraph"
    for source in (rule.source, *rule.other_sources):
        if source.startswith("seeds/"):
            assert (SEEDS.parent / source).is_file(), source
        else:
            assert source.startswith("https://"), source
    if rule.id.startswith("MEM-"):
        number = rule.id.split("-")[1]
        assert rule.source == f"https://flowdrop.io/spec/rules/gr-mem/mem-{number}"
    assert rule.related and set(rule.related) <= set(RULES) - {rule.id}


@pytest.mark.parametrize(
    "rule",
    [r for r in RULES.values() if not r.id.startswith("MEM-") and r.id not in LINE_RULES],
    ids=lambda rule: rule.id,
)
def test_repair_example_after_is_what_repair_history_makes(rule: Rule) -> None:
    if rule.id in EXPORT_RULES:
        # Nothing to repair: the example's ids become what the export sends to Anthropic.
        assert repair_history(rule.example_before).actions == []
        _, renamed = export_wire(rule.example_before, "anthropic")
        assert renamed
        text = orjson.dumps(rule.example_before).decode()
        for old, new in renamed.items():
            text = text.replace(f'"{old}"', f'"{new}"')
        assert orjson.loads(text) == rule.example_after
        return
    read_only = set(rule.example_read_only)
    repaired = repair_history(rule.example_before, read_only.__contains__ if read_only else None)
    assert repaired.messages == rule.example_after
    rules_applied = {action.rule for action in repaired.actions}
    if rule.id in REPAIR_RULES:
        assert rule.id in rules_applied
    else:
        assert rules_applied, "the example should show something being repaired"


@pytest.mark.parametrize(
    "rule", [r for r in RULES.values() if r.id.startswith("MEM-")], ids=lambda rule: rule.id
)
def test_buffer_example_after_is_what_the_buffer_holds(rule: Rule) -> None:
    assert rule.example_appended
    buffer = Buffer(rule.example_before)
    for message in rule.example_appended:
        buffer.append(message)
    assert buffer.messages == rule.example_after
    # The rule must have done something: plain appending would give another list.
    assert buffer.messages != [*rule.example_before, *rule.example_appended]


def test_line_rule_example_is_what_the_reader_and_writer_make_of_the_lines() -> None:
    rule = RULES["LINE-1"]
    assert not rule.example_before and not rule.example_after
    data = "\n".join(rule.example_lines_before).encode() + b"\n"
    parsed = formats.load(data)
    assert parsed.format == "claude-code"
    assert [(p.line, p.kind) for p in parsed.problems] == [(1, "glued")]
    diagnosis = diagnose(parsed)
    assert diagnosis.needs_repair and diagnosis.counts == {"LINE-1": 1}
    repaired = repaired_bytes(parsed)
    assert repaired == "\n".join(rule.example_lines_after).encode() + b"\n"
    assert "".join(rule.example_lines_after) == "".join(rule.example_lines_before)


def test_only_line_rules_show_lines() -> None:
    for rule in RULES.values():
        shows_lines = bool(rule.example_lines_before or rule.example_lines_after)
        assert shows_lines == (rule.id in LINE_RULES), rule.id


def test_mem3_example_is_the_seed_example() -> None:
    seed = (SEEDS / "000_2ae73882a5c611dc.txt").read_text()
    assert '"content": "try again"' in seed
    assert RULES["MEM-3"].example_appended == (
        {"role": "user", "content": "try again", "metadata": {}},
    )


# The texts the formats issue lists, verbatim (OpenAI's spelling of "preceeding" included).
PROVIDER_TEXTS = {
    "PROV-ANTHROPIC": [
        "messages.{N}: `tool_use` ids were found without `tool_result` blocks immediately after:"
        " {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next"
        " message.",
        "messages.{N}.content.{M}: unexpected `tool_use_id` found in `tool_result` blocks: {id}."
        " Each `tool_result` block must have a corresponding `tool_use` block in the previous"
        " message.",
        "messages.{N}.content.{M}: `tool_use` ids must be unique",
        "messages: text content blocks must be non-empty",
    ],
    "PROV-OPENAI-CHAT": [
        "An assistant message with 'tool_calls' must be followed by tool messages responding to"
        " each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}",
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message"
        " with 'tool_calls'.",
    ],
    "PROV-RESPONSES": [
        "No tool output found for function call {id}.",
        "No tool call found for function call output with call_id {id}.",
    ],
    "PROV-GEMINI": [
        "Please ensure that the number of function response parts is equal to the number of"
        " function call parts of the function call turn.",
        "Please ensure that function call turn comes immediately after a user turn or after a"
        " function response turn.",
    ],
}


@pytest.mark.parametrize("rule_id", PROVIDER_TEXTS)
def test_provider_rule_quotes_the_providers_error_texts(rule_id: str) -> None:
    for text in PROVIDER_TEXTS[rule_id]:
        assert text in RULES[rule_id].errors


def test_only_provider_rules_quote_errors() -> None:
    for rule in RULES.values():
        assert bool(rule.errors) == rule.id.startswith("PROV-"), rule.id
        for text in rule.errors:
            assert not re.search(r"\{(?!N\}|M\}|id\}|ids\})", text), text


# Texts of the providers module that are not problems a check reports: a pattern, a prefix,
# the reason of a cannot-tell verdict, a note, and a text the API does not answer.
NOT_PROBLEMS = {
    "ANTHROPIC_ID_PATTERN",
    "ANTHROPIC_SERVER_ID_PREFIX",
    "RESPONSES_STATEFUL",
    "GEMINI_SIGNATURE_UNCHECKED",
    "OPENAI_DUPLICATE_RESULT",
}


@pytest.mark.parametrize(
    ("rule_id", "prefix"),
    [
        ("PROV-OPENAI-CHAT", "OPENAI_"),
        ("PROV-ANTHROPIC", "ANTHROPIC_"),
        ("PROV-RESPONSES", "RESPONSES_"),
        ("PROV-GEMINI", "GEMINI_"),
    ],
)
def test_each_provider_rule_quotes_every_text_its_check_reports(rule_id: str, prefix: str) -> None:
    texts = {
        name: value
        for name, value in vars(providers).items()
        if name.startswith(prefix) and isinstance(value, str) and name not in NOT_PROBLEMS
    }
    assert texts
    quoted = RULES[rule_id].errors
    for name, text in texts.items():
        # The text with its fields as the page shows them: a field other than the
        # indices and ids filled with an example.
        pattern = re.escape(text)
        for field in re.findall(r"\{(\w+)\}", text):
            shown = "{" + field + "}" if field in ("N", "M", "id", "ids") else ".+?"
            pattern = pattern.replace(
                re.escape("{" + field + "}"), re.escape(shown) if "{" in shown else shown
            )
        assert any(re.fullmatch(pattern, q) for q in quoted), name


def test_every_example_in_the_data_file_belongs_to_a_rule() -> None:
    # A misspelt id or name in rule_examples.json would leave a rule with no example.
    data = files("inspector.engine").joinpath("rule_examples.json").read_bytes()
    examples = orjson.loads(data)
    assert set(examples) <= set(RULES)
    for rule_id, entry in examples.items():
        assert entry and set(entry) <= {"before", "after", "appended"}, rule_id
