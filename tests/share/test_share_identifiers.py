"""A redacted share shows ids, tool names, session ids and versions only when they look like ids."""

from __future__ import annotations

import orjson
import pytest

from inspector.share.content import as_identifier
from tests.share.test_share_pages import cc_record, every_response

pytestmark = pytest.mark.django_db

WORDY = "QUILL the plan is to wire money"  # what a field that should hold an id might hold


def session_with_wordy_structure() -> bytes:
    records = [
        cc_record("user", "u1", None, "go"),
        cc_record(
            "assistant",
            "u2",
            "u1",
            [
                {"type": "tool_use", "id": f"{WORDY} id", "name": f"{WORDY} tool", "input": {}},
                {"type": "tool_use", "id": "toolu_02", "name": "Bash", "input": {}},
            ],
        ),
        cc_record("user", "u3", "u2", "stop"),
    ]
    for record in records:
        record["sessionId"] = f"{WORDY} session"
        record["version"] = f"{WORDY} version"
    return b"".join(orjson.dumps(record) + b"\n" for record in records)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("toolu_01AbC", "toolu_01AbC"),
        ("mcp__github__create_issue", "mcp__github__create_issue"),
        ("2.1.56", "2.1.56"),
        ("5a3bb1c8-c3ce-466e-b487-24212cbf1da1", "5a3bb1c8-c3ce-466e-b487-24212cbf1da1"),
        ("two words", "[redacted: 9 characters]"),
        ("<b>x</b>", "[redacted: 8 characters]"),
        ("x" * 200, "[redacted: 200 characters]"),
        (None, None),
    ],
)
def test_only_what_looks_like_an_identifier_is_shown_as_one(value, shown):
    assert as_identifier(value) == shown


def test_a_redacted_share_shows_wordy_ids_names_session_and_version_as_lengths(
    client, store_for, make_link
):
    transcript = store_for(session_with_wordy_structure(), "s.jsonl")
    _, token = make_link("redacted", for_transcript=transcript)
    bodies = every_response(client, token, "redacted")
    for where, body in bodies.items():
        assert b"QUILL" not in body, where
    page = bodies["page annotated"].decode()
    assert "Bash" in page and "toolu_02" in page
    assert f"[redacted: {len(WORDY) + 5} characters]" in page  # the wordy tool name
    report = orjson.loads(bodies["download report"])
    assert report["meta"]["session_id"] == f"[redacted: {len(WORDY) + 8} characters]"


def test_a_full_share_still_shows_them_as_written(client, store_for, make_link):
    transcript = store_for(session_with_wordy_structure(), "s.jsonl")
    _, token = make_link("full", for_transcript=transcript)
    bodies = every_response(client, token, "full")
    assert b"QUILL the plan is to wire money tool" in bodies["page annotated"]
