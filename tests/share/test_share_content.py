"""What a share may show, as plain functions: no database, no requests."""

from __future__ import annotations

import copy
import logging

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import TEXT_LIMIT, diagnose
from inspector.share.content import (
    count_secrets,
    full_row,
    length_of,
    mask_deep,
    mask_file,
    redact_row,
    without_quoted,
)
from inspector.share.logfilter import RedactShareTokens, redact_share_paths
from tests.diagnosis.test_redact import PLANTED
from tests.share.test_share_pages import CANARY, CANARY_CLAUDE_CODE, CANARY_MESSAGES

OPENAI = PLANTED["OpenAI key"]


def rows_of(data: bytes) -> list[dict]:
    return diagnose(formats.load(data)).rows


@pytest.mark.parametrize("data", [orjson.dumps(CANARY_MESSAGES), CANARY_CLAUDE_CODE])
def test_redacted_rows_hold_no_content_and_leave_the_cached_rows_alone(data):
    rows = rows_of(data)
    before = copy.deepcopy(rows)
    redacted = [redact_row(row) for row in rows]
    assert CANARY not in orjson.dumps(redacted).decode()
    assert rows == before
    assert [r["key"] for r in redacted] == [r["key"] for r in rows]
    assert [r["findings"] for r in redacted] == [r["findings"] for r in rows]


def test_redacted_row_keeps_ids_and_names_and_replaces_texts_by_lengths():
    row = {
        "key": "r3",
        "role": "assistant",
        "text": "hello",
        "parts": [
            {"type": "thinking", "text": "hmm", "label": "thinking"},
            {"type": "image", "text": "", "label": "image (https://x/secret.png)"},
            {"type": "document", "text": "", "label": "document"},
        ],
        "calls": [{"id": "c1", "new_id": "c1_1", "name": "grep", "arguments": '{"q": 1}'}],
        "result": None,
        "note": "whatever the file said",
        "outcome": "nonsense",
        "cause": "max_tokens",
        "findings": ["ID-1"],
    }
    redacted = redact_row(row)
    assert redacted["text"] == "[redacted: 5 characters]"
    assert redacted["parts"] == [
        {"type": "thinking", "label": "thinking", "text": "[redacted: 3 characters]"},
        {"type": "image", "label": "image", "text": ""},
        {"type": "other", "label": "document", "text": ""},
    ]
    assert redacted["calls"][0] == {
        "id": "c1",
        "new_id": "c1_1",
        "name": "grep",
        "arguments": "[redacted: 8 characters]",
        "removed": False,
        "cause": None,
    }
    assert redacted["note"] is None and redacted["outcome"] is None
    assert redacted["cause"] == "max_tokens" and redacted["findings"] == ["ID-1"]


def test_length_of_a_clipped_text_is_its_whole_length():
    clipped = rows_of(orjson.dumps([{"role": "user", "content": "y" * (TEXT_LIMIT + 5)}]))[0]
    assert length_of(clipped["text"]) == f"[redacted: {TEXT_LIMIT + 5:,} characters]"
    assert length_of("") == "" and length_of(None) == ""
    assert length_of("a") == "[redacted: 1 character]"


def test_full_row_masks_a_key_the_clip_cut_in_half():
    text = "a" * (TEXT_LIMIT - 30) + " key " + OPENAI + " tail" * 10
    row = rows_of(orjson.dumps([{"role": "user", "content": text}]))[0]
    shown = full_row(row)["text"]
    assert OPENAI[:25] not in shown
    assert "more characters" in shown


def test_secrets_in_a_json_object_value_are_masked_by_their_key():
    masked = mask_deep({"api_key": "9f8Q2mZx7LkP4vBn3TqW8yR1", "cache_key": "user-profile-x"})
    assert "9f8Q2mZx7LkP4vBn3TqW8yR1" not in orjson.dumps(masked).decode()
    assert masked["cache_key"] == "user-profile-x"


def test_mask_file_keeps_a_json_document_loadable():
    data = orjson.dumps(
        [{"role": "user", "content": f"key {OPENAI}"}, {"role": "assistant", "content": "ok"}],
        option=orjson.OPT_INDENT_2,
    )
    masked = mask_file(data)
    assert OPENAI.encode() not in masked
    assert [m["content"] for m in orjson.loads(masked)][1] == "ok"


def test_mask_file_finds_a_key_written_with_json_escapes():
    escaped = OPENAI.replace("-", "\\u002d").encode()
    data = b'[{"role": "user", "content": "' + escaped + b'"}]'
    masked = mask_file(data)
    assert escaped not in masked and OPENAI.encode() not in masked
    assert b"[masked OpenAI key" in masked


def test_mask_file_keeps_json_lines_and_masks_a_broken_last_line_as_text():
    data = (
        orjson.dumps({"a": f"Bearer {OPENAI}"})
        + b"\r\n\n"
        + orjson.dumps({"b": 1})
        + b'\n{"c": "'
        + OPENAI.encode()
    )
    masked = mask_file(data)
    assert OPENAI.encode() not in masked
    lines = masked.split(b"\n")
    assert len(lines) == len(data.split(b"\n"))
    assert lines[0].endswith(b"\r") and orjson.loads(lines[0])["a"].startswith("Bearer [masked")
    assert lines[1] == b"" and orjson.loads(lines[2]) == {"b": 1}


def test_count_secrets_counts_each_once_and_names_the_rows():
    data = orjson.dumps(
        [
            {"role": "user", "content": [{"type": "text", "text": f"one {OPENAI}"}]},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": PLANTED["GitHub token"]}],
            },
            {"role": "user", "content": "nothing here"},
        ]
    )
    count = count_secrets(diagnose(formats.load(data)))
    assert count.total == 2
    assert count.kinds == {"OpenAI key": 1, "GitHub token": 1}
    assert count.rows == ["r0", "r1"]


def test_quoted_values_leave_a_reason():
    assert without_quoted("role 'CANARY' is not one of system") == "role '…' is not one of system"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"GET /s/abcDEF_123-x/ HTTP/1.1" 200 10', '"GET /s/[redacted]/ HTTP/1.1" 200 10'),
        ("Not Found: /s/abc/download/report/", "Not Found: /s/[redacted]/download/report/"),
        ("GET /s/abc?page=2", "GET /s/[redacted]?page=2"),
        ("GET /static/share/share.js", "GET /static/share/share.js"),
        ("GET /t/abc/share/", "GET /t/abc/share/"),
    ],
)
def test_share_paths_are_redacted_and_others_left_alone(text, expected):
    assert redact_share_paths(text) == expected


def test_log_filter_rewrites_a_development_server_record():
    token = "k" * 43
    record = logging.LogRecord(
        "django.server",
        logging.INFO,
        __file__,
        1,
        '"%s" %s %s',
        (f"GET /s/{token}/ HTTP/1.1", "200", "5"),
        None,
    )
    assert RedactShareTokens().filter(record) is True
    assert token not in record.getMessage()
    assert record.getMessage() == '"GET /s/[redacted]/ HTTP/1.1" 200 5'


def test_log_filter_drops_the_request_of_a_share_path_and_keeps_others():
    class Request:
        def __init__(self, path: str) -> None:
            self.path = path

    shared = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "boom", (), None)
    shared.request = Request("/s/tok/")
    other = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "boom", (), None)
    other.request = Request("/t/abc/")
    RedactShareTokens().filter(shared)
    RedactShareTokens().filter(other)
    assert not hasattr(shared, "request") and other.request.path == "/t/abc/"
