"""Parser fuzzing: real corpus files, mutated, must never crash or hang a loader.

Every mutation of a real file either loads (a ``Parsed``, bad lines named in
``problems``) and then repairs and diagnoses cleanly, or raises the one
documented error, ``FormatError``. Anything else would be a 500 on upload or
a scan that stops. ``make fuzz`` runs many more examples
(``HYPOTHESIS_PROFILE=fuzz``).
"""

from __future__ import annotations

import os
import signal
from contextlib import contextmanager

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.diagnosis import diagnose, repair_parsed, repaired_bytes
from inspector.engine.conservation import losses
from tests.formats.registry import seeds
from tests.formats.shapes import replace_somewhere
from tests.testdata import read

EXAMPLES = {"ci": 150, "dev": 30, "fuzz": 5000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]
# A loader that takes longer than this on a small mutated file is hanging: a guard against
# a hang or a blow-up, not a speed claim (speed is bench's). 10 s was once passed by the
# 50,000-record input on a 2-core machine at load 8, while it takes ~1 s idle.
BUDGET_SECONDS = 60

# One real file of each registered shape (``registry.seed_of``: its smallest corpus file
# with a call answered): a shape added to ``formats.FORMATS`` is fuzzed from its own file.
SEEDS = seeds()
SEED_BYTES = [read(path) for path in SEEDS]

WEIRD = [
    None,
    0,
    -1,
    2**63 - 1,
    1.5,
    True,
    False,
    "",
    "x" * 100_000,
    [],
    {},
    [[[[[[[[]]]]]]]],
    {"a": {"b": {}}},
]
WEIRD_VALUES = st.sampled_from(WEIRD)


@contextmanager
def time_budget(seconds: int):
    def expired(signum, frame):
        raise TimeoutError(f"loader ran past its {seconds}s budget")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def check_loader(data: bytes) -> None:
    with time_budget(BUDGET_SECONDS):
        try:
            parsed = formats.load(data)
        except formats.FormatError as error:
            assert str(error)
            return
        assert len(parsed.sources) == len(parsed.messages)
        for problem in parsed.problems:
            assert problem.line >= 0 and problem.reason
        diagnosis = diagnose(parsed)
        assert not any(v["after"] for v in diagnosis.providers.values()), diagnosis.providers
        assert losses(parsed.messages, repair_parsed(parsed)) == []
        if diagnosis.repaired_count:
            again = formats.load(repaired_bytes(parsed, "canonical"), "canonical")
            assert len(again.messages) == diagnosis.repaired_count


@st.composite
def line_mutations(draw) -> bytes:
    data = draw(st.sampled_from(SEED_BYTES))
    lines = data.split(b"\n")
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        at = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "glue", "truncate", "swap"]))
        if kind == "delete":
            del lines[at]
        elif kind == "duplicate":
            lines.insert(at, lines[at])
        elif kind == "glue" and at + 1 < len(lines):
            lines[at : at + 2] = [lines[at] + lines[at + 1]]
        elif kind == "truncate":
            lines[at] = lines[at][: draw(st.integers(0, max(0, len(lines[at]) - 1)))]
        elif kind == "swap" and at + 1 < len(lines):
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
    return b"\n".join(lines)


@st.composite
def byte_mutations(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(SEED_BYTES)))
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]
    return bytes(data)


@st.composite
def structure_mutations(draw) -> bytes:
    """Wrong types anywhere: replace one value deep inside a record."""
    data = draw(st.sampled_from(SEED_BYTES))
    try:
        document = orjson.loads(data)
        records, is_lines = [document], False
    except orjson.JSONDecodeError:
        records = [orjson.loads(line) for line in data.splitlines() if line.strip()]
        is_lines = True
    target = draw(st.integers(0, len(records) - 1))
    records[target] = replace_somewhere(draw, records[target], draw(WEIRD_VALUES), deepest=12)
    if is_lines:
        return b"\n".join(orjson.dumps(r) for r in records) + b"\n"
    return orjson.dumps(records[0])


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@FUZZ
@given(line_mutations())
def test_line_level_damage_never_crashes_a_loader(data):
    check_loader(data)


@FUZZ
@given(byte_mutations())
def test_flipped_and_cut_bytes_never_crash_a_loader(data):
    check_loader(data)


@FUZZ
@given(structure_mutations())
def test_wrong_types_in_any_field_never_crash_a_loader(data):
    check_loader(data)


def _results_holding(value) -> dict[str, bytes]:
    """A call and its result holding ``value``, in each shape's own place for it."""
    calls = {"id": "t1", "name": "calc"}
    claude = [
        {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "go"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "tool_use", **calls, "input": {}}],
            },
        },
        {
            "type": "user",
            "uuid": "r1",
            "parentUuid": "a1",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": value}],
            },
        },
    ]
    anthropic = {"messages": [claude[0]["message"], claude[1]["message"], claude[2]["message"]]}
    chat_call = {
        "id": "t1",
        "call_id": value,
        "type": "function",
        "function": {"name": "calc", "arguments": "{}"},
    }
    chat = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [chat_call]},
        {"role": "tool", "tool_call_id": "t1", "content": value},
    ]
    responses = [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "t1", "name": "calc", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "t1", "output": value},
        {"type": "tool_search_output", "call_id": value, "tools": value},
    ]
    gemini = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "calc", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "calc", "response": value}}]},
        ]
    }
    return {
        "claude-code": b"\n".join(orjson.dumps(r) for r in claude) + b"\n",
        "anthropic": orjson.dumps(anthropic),
        "openai-chat": orjson.dumps(chat),
        "responses": orjson.dumps(responses),
        "gemini": orjson.dumps(gemini),
    }


@pytest.mark.parametrize("value", WEIRD, ids=lambda v: repr(v)[:20])
def test_odd_result_values_in_every_shape_never_crash_a_loader(value):
    for data in _results_holding(value).values():
        check_loader(data)


@pytest.mark.parametrize(
    "data",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"messages": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        b'[{"role": "user", "content": "' + b"x" * 5_000_000 + b'"}]',
        '[{"role": "user", "content": "caf\xe9"}]'.encode("latin-1"),
        b"\xef\xbb\xbf" + b'[{"role": "user", "content": "bom"}]',
        b'{"type":"user"}\n' * 50_000,
    ],
    ids=["deep-list", "deep-wrapper", "huge-string", "latin-1", "bom", "many-empty-records"],
)
def test_pathological_inputs_load_or_fail_cleanly(data):
    check_loader(data)


def test_every_registered_shape_has_a_seed_that_reads_as_it():
    assert [formats.load(data).format for data in SEED_BYTES] == list(formats.FORMATS)
