"""Issue 18, point 3: what each row records (when, model, tokens) and the header's totals."""

from __future__ import annotations

import orjson
import pytest

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.web.render import duration
from tests.testdata import CORPUS, read
from tests.web.conftest import BROKEN_CLAUDE_CODE

CODEX = CORPUS / "codex" / "kvsankar-agent-history__codex_with_escalation.jsonl"


def test_claude_code_rows_carry_their_time_model_and_tokens():
    rows = diagnose(formats.load(read(BROKEN_CLAUDE_CODE))).rows
    user, reply, inserted = rows
    assert user["at"] == "2026-01-13T00:00:39.236Z" and user["model"] is None
    assert (reply["model"], reply["tokens_in"], reply["tokens_out"]) == (
        "claude-opus-4-5-20251101",
        38395,
        4,
    )
    assert inserted["at"] is None, "the repair's own rows record nothing"


def test_codex_rows_carry_their_time():
    rows = diagnose(formats.load(read(CODEX))).rows
    assert all(row["at"] for row in rows if row["input_index"] is not None)


def test_claude_code_rows_carry_their_cache_reads_and_writes():
    reply = diagnose(formats.load(read(BROKEN_CLAUDE_CODE))).rows[1]
    # usage: input_tokens 10, cache_creation_input_tokens 38385, no cache read.
    assert (reply["tokens_in"], reply["cache_read"], reply["cache_write"]) == (38395, 0, 38385)


def _codex(*records: dict) -> bytes:
    return b"\n".join(orjson.dumps(record) for record in records) + b"\n"


def _item(role: str, text: str, at: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {
        "timestamp": at,
        "type": "response_item",
        "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
    }


def _usage(read: int, cached: int, out: int) -> dict:
    last = {"input_tokens": read, "cached_input_tokens": cached, "output_tokens": out}
    info = {"last_token_usage": last, "total_token_usage": last}
    return {"type": "event_msg", "payload": {"type": "token_count", "info": info}}


def test_codex_replies_take_the_tokens_and_model_recorded_after_them():
    data = _codex(
        {"type": "session_meta", "payload": {"id": "s-1", "cwd": "/w"}},
        {"type": "turn_context", "payload": {"model": "gpt-5.3-codex"}},
        _item("user", "first", "2026-02-23T12:00:00Z"),
        {"type": "event_msg", "payload": {"type": "token_count", "info": None}},
        _item("assistant", "one", "2026-02-23T12:00:01Z"),
        _usage(1000, 600, 40),
        {"type": "turn_context", "payload": {"model": "gpt-5.4"}},
        _item("user", "second", "2026-02-23T12:00:02Z"),
        _item("assistant", "two", "2026-02-23T12:00:03Z"),
        _usage(1500, 1200, 25),
    )
    diagnosis = diagnose(formats.load(data, "codex"))
    facts = [
        (row["role"], row["model"], row["tokens_in"], row["cache_read"], row["tokens_out"])
        for row in diagnosis.rows
    ]
    assert facts == [
        ("user", None, None, None, None),
        ("assistant", "gpt-5.3-codex", 1000, 600, 40),
        ("user", None, None, None, None),
        ("assistant", "gpt-5.4", 1500, 1200, 25),
    ]
    timing = diagnosis.meta["timing"]
    assert (timing["tokens_in"], timing["cache_read"], timing["cache_write"]) == (2500, 1800, 0)
    assert timing["models"] == {"gpt-5.3-codex": 1, "gpt-5.4": 1}


def test_a_real_codex_rollout_records_its_cached_input():
    path = (
        CORPUS
        / "codex"
        / (
            "madshn-localpush__rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl"
        )
    )
    timing = diagnose(formats.load(read(path))).meta["timing"]
    assert (timing["tokens_in"], timing["cache_read"], timing["tokens_out"]) == (34469, 3456, 431)
    assert timing["models"] == {"gpt-5.3-codex": 1}


def test_the_totals_add_up_the_rows():
    diagnosis = diagnose(formats.load(read(BROKEN_CLAUDE_CODE)))
    assert diagnosis.meta["timing"] == {
        "first": "2026-01-13T00:00:39.236Z",
        "last": "2026-01-13T00:00:44.588Z",
        "tokens_in": 38395,
        "tokens_out": 4,
        "cache_read": 0,
        "cache_write": 38385,
        "models": {"claude-opus-4-5-20251101": 1},
    }


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(0.44, "0.4 s"), (12, "12 s"), (185, "3 min"), (7500, "2 h 5 min"), (3 * 86400, "3 days")],
)
def test_gaps_read_as_people_say_them(seconds, words):
    assert duration(seconds) == words


@pytest.mark.django_db
def test_the_page_shows_each_rows_facts_and_the_totals(owner_client, claude_transcript):
    html = owner_client.get(claude_transcript.get_absolute_url()).content.decode()
    assert "38,395 tokens in" in html and "(38,385 cache write)</span> · 4 out" in html
    assert "2026-01-13 00:00, 5.4 s long" in html
    assert '<span class="chip model">claude-opus-4-5-20251101</span>' in html
    assert '<time datetime="2026-01-13T00:00:44.588Z"' in html
    assert '<span class="since" title="since the row before">+5.4 s</span>' in html
    assert '38,395 in <span class="cache">(38,385 cache write)</span> · 4 out' in html
