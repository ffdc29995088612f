"""Issue 18, point 3: what each row records (when, model, tokens) and the header's totals."""

from __future__ import annotations

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


def test_the_totals_add_up_the_rows():
    diagnosis = diagnose(formats.load(read(BROKEN_CLAUDE_CODE)))
    assert diagnosis.meta["timing"] == {
        "first": "2026-01-13T00:00:39.236Z",
        "last": "2026-01-13T00:00:44.588Z",
        "tokens_in": 38395,
        "tokens_out": 4,
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
    assert "38,395 tokens in · 4 out" in html
    assert "2026-01-13 00:00, 5.4 s long" in html
    assert '<span class="chip model">claude-opus-4-5-20251101</span>' in html
    assert '<time datetime="2026-01-13T00:00:44.588Z"' in html
    assert '<span class="since" title="since the row before">+5.4 s</span>' in html
    assert "38,395 in · 4 out" in html
