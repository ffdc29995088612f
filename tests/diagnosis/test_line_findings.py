"""LINE-1: a line that held two records is a finding of its own, on its row, in every shape.

Each JSONL shape can lose a newline between two records (LINE-1, docs/beyond-the-spec.md). The
reader reads both; the diagnosis names the line under LINE-1 on the row of
the message read from it, counts it as needing repair, and the repaired
file writes each record on a line of its own, byte for byte.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import diagnose, repaired_bytes, report_from
from tests.testdata import CORPUS, files, read


def lines(*records: dict[str, Any]) -> list[bytes]:
    return [orjson.dumps(r) for r in records]


def claude_code() -> list[bytes]:
    envelope = {"sessionId": "s1", "isSidechain": False}
    return lines(
        {
            **envelope,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "hi"},
        },
        {
            **envelope,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "content": [{"type": "text", "text": "yo"}],
            },
        },
        {
            **envelope,
            "type": "user",
            "uuid": "u2",
            "parentUuid": "a1",
            "message": {"role": "user", "content": "bye"},
        },
    )


def codex() -> list[bytes]:
    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-01-01T00:00:00Z", "type": "response_item", "payload": payload}

    def message(role: str, kind: str, text: str) -> dict[str, Any]:
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    return lines(
        {
            "timestamp": "2026-01-01T00:00:00Z",
            "type": "session_meta",
            "payload": {"id": "s-1", "cwd": "/repo", "cli_version": "0.77.0"},
        },
        item(message("user", "input_text", "hi")),
        item(message("assistant", "output_text", "yo")),
    )


def kimi() -> list[bytes]:
    return lines(
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo"},
        {"role": "user", "content": "bye"},
    )


def gemini_cli() -> list[bytes]:
    return lines(
        {"sessionId": "s1", "projectHash": "h", "startTime": "t0"},
        {"id": "u1", "timestamp": "t1", "type": "user", "content": "hi"},
        {"id": "g1", "timestamp": "t2", "type": "gemini", "content": "yo"},
    )


def claude_trace() -> list[bytes]:
    def exchange(text: str) -> dict[str, Any]:
        body = {"tools": [], "max_tokens": 9, "messages": [{"role": "user", "content": text}]}
        return {"request": {"body": body}, "response": {"status_code": 200, "body": None}}

    return lines(exchange("first"), exchange("second"), exchange("third"))


# shape -> (its lines, the format it reads as, the 0-based line that loses its newline)
SHAPES = {
    "claude-code": (claude_code, "claude-code", 1),
    "codex": (codex, "codex", 1),
    "kimi-jsonl": (kimi, "openai-chat", 1),
    "gemini-cli-lines": (gemini_cli, "gemini", 1),
    "claude-trace": (claude_trace, "anthropic", 1),
}


def glue(raws: list[bytes], at: int) -> bytes:
    """The file with the newline after line ``at`` (0-based) lost."""
    out = b""
    for n, raw in enumerate(raws):
        out += raw + (b"" if n == at else b"\n")
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_healthy_file_of_each_shape_is_written_back_as_it_is(shape: str) -> None:
    make, fmt, _ = SHAPES[shape]
    data = b"\n".join(make()) + b"\n"
    parsed = formats.load(data)
    assert parsed.format == fmt
    diagnosis = diagnose(parsed)
    assert not diagnosis.needs_repair and "LINE-1" not in diagnosis.counts
    assert repaired_bytes(parsed) == data


@pytest.mark.parametrize("shape", SHAPES)
def test_glued_line_is_a_line_1_finding_and_the_repaired_file_splits_it(shape: str) -> None:
    make, fmt, at = SHAPES[shape]
    raws = make()
    whole = b"\n".join(raws) + b"\n"
    data = glue(raws, at)
    parsed = formats.load(data)
    assert parsed.format == fmt
    assert [(p.line, p.kind) for p in parsed.problems if p.kind == "glued"] == [(at + 1, "glued")]
    diagnosis = diagnose(parsed)
    assert diagnosis.needs_repair
    assert diagnosis.counts.get("LINE-1") == 1
    (finding,) = [f for f in diagnosis.findings if f["rule"] == "LINE-1"]
    assert finding["line"] == at + 1
    assert f"Line {at + 1}:" in finding["text"]
    row = next(r for r in diagnosis.rows if r["key"] == finding["row"])
    assert "LINE-1" in row["findings"]
    if shape != "claude-trace":  # a trace's history is one request, not its lines
        assert at + 1 in row["lines"]
    # The repaired file puts the newline back; each record as it was.
    out = repaired_bytes(parsed)
    assert out == whole
    again = formats.load(out)
    assert again.problems == [p for p in parsed.problems if p.kind != "glued"]
    assert not diagnose(again).needs_repair


def test_glued_line_with_other_repairs_is_split_too() -> None:
    raws = claude_code()[:2]
    dangling = orjson.loads(raws[1])
    dangling["message"]["content"] = [{"type": "tool_use", "id": "c1", "name": "Read", "input": {}}]
    data = raws[0] + orjson.dumps(dangling) + b"\n"
    parsed = formats.load(data)
    diagnosis = diagnose(parsed)
    assert [f["rule"] for f in diagnosis.findings] == ["LINE-1", "PAIR-1"]
    out = repaired_bytes(parsed).split(b"\n")
    assert out[:2] == [raws[0], orjson.dumps(dangling)]
    assert formats.load(b"\n".join(out)).problems == []


def test_glued_bookkeeping_records_mark_the_next_message() -> None:
    snapshot = orjson.dumps({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}})
    raws = claude_code()
    data = snapshot + snapshot + b"\n" + b"\n".join(raws) + b"\n"
    diagnosis = diagnose(formats.load(data))
    (finding,) = diagnosis.findings
    assert (finding["rule"], finding["line"], finding["message"]) == ("LINE-1", 1, 0)
    assert diagnosis.rows[0]["findings"] == ["LINE-1"]


def test_findings_stay_in_row_order() -> None:
    raws = claude_code()
    call = orjson.loads(raws[1])
    call["message"]["content"] = [{"type": "tool_use", "id": "c1", "name": "Read", "input": {}}]
    # The dangling call first (row 1), then a glued line further down (rows 3 and 4).
    tail = orjson.loads(raws[2])
    reply = orjson.loads(raws[1]) | {"uuid": "a2", "parentUuid": "u2"}
    data = b"\n".join([raws[0], orjson.dumps(call), orjson.dumps(tail) + orjson.dumps(reply)])
    diagnosis = diagnose(formats.load(data + b"\n"))
    assert [(f["rule"], f["line"]) for f in diagnosis.findings] == [("PAIR-1", 2), ("LINE-1", 3)]


def test_real_glued_line_128_is_on_its_row_and_the_repair_command_exits_1(tmp_path) -> None:
    import subprocess
    import sys

    from tests.testdata import REPO

    (path,) = files(CORPUS / "claude-code" / "broken", "*37-995ebed6e4*")
    data = read(path)
    diagnosis = diagnose(formats.load(data))
    assert diagnosis.counts == {"LINE-1": 1}
    (finding,) = diagnosis.findings
    assert finding["line"] == 128
    row = next(r for r in diagnosis.rows if r["key"] == finding["row"])
    assert 128 in row["lines"] and row["findings"] == ["LINE-1"]
    report = report_from(diagnosis)
    assert report["needs_repair"] and report["findings"][0]["rule"] == "LINE-1"

    source = tmp_path / path.name
    source.write_bytes(data)
    out = tmp_path / "repaired.jsonl"
    result = subprocess.run(
        [sys.executable, "manage.py", "repair", str(source), "--output", str(out)],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    written = out.read_bytes()
    assert written.count(b"\n") == data.count(b"\n") + 1
    assert formats.load(written).problems == []


def test_glued_line_of_a_file_of_conversations_is_a_finding_of_the_conversations_on_it() -> None:
    from inspector.diagnosis import diagnose_all, repaired_bytes_all

    def conversation(text: str) -> bytes:
        messages = [{"role": "user", "content": text}, {"role": "assistant", "content": "ok"}]
        return orjson.dumps({"messages": messages})

    raws = [conversation("one"), conversation("two"), conversation("three")]
    whole = b"\n".join(raws) + b"\n"
    data = glue(raws, 1)  # conversations two and three on line 2
    parsed = formats.load_all(data)
    assert [p.meta["conversation"] for p in parsed] == [0, 1, 2]
    diagnoses = diagnose_all(parsed)
    assert [d.counts.get("LINE-1", 0) for d in diagnoses] == [0, 1, 1]
    assert [d.needs_repair for d in diagnoses] == [False, True, True]
    for diagnosis in diagnoses[1:]:
        (finding,) = diagnosis.findings
        assert finding["line"] == 2 and finding["row"] == diagnosis.rows[0]["key"]
    assert repaired_bytes_all(parsed) == whole
    assert repaired_bytes(parsed[0]) == whole
