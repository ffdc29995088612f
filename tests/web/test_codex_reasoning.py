"""A Codex turn that holds reasoning but no text reads as reasoning, not as a blank placeholder."""

from __future__ import annotations

import orjson
import pytest

from inspector import diagnosis, formats

THOUGHT = "Checking the **schema** before I answer"


def envelope(kind: str, payload: dict) -> str:
    return orjson.dumps(
        {"timestamp": "2026-01-05T11:00:00.000Z", "type": kind, "payload": payload}
    ).decode()


def message(role: str, text: str) -> str:
    kind = "output_text" if role == "assistant" else "input_text"
    return envelope(
        "response_item",
        {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
    )


def rollout(*reasoning: dict) -> bytes:
    lines = [
        envelope("session_meta", {"id": "s-1", "cwd": "/w", "originator": "codex_cli_rs"}),
        message("user", "what is in the table?"),
        *(envelope("response_item", {"type": "reasoning", **item}) for item in reasoning),
        message("assistant", ""),  # the turn's reply, blank: dropped by the repair (MSG-1)
        message("user", "well?"),
    ]
    return ("\n".join(lines) + "\n").encode()


SUMMARY = {"summary": [{"type": "summary_text", "text": THOUGHT}], "encrypted_content": "gAAA"}
ENCRYPTED = {"summary": [], "content": None, "encrypted_content": "gAAAAB"}


def dropped_row(data: bytes) -> dict:
    (parsed,) = formats.load_all(data, "auto")
    assert parsed.format == "codex"
    rows = diagnosis.diagnose(parsed).rows
    (row,) = [r for r in rows if r["state"] == "dropped"]
    assert row["findings"] == ["MSG-1"]
    return row


def test_the_reasoning_of_a_codex_turn_is_on_its_row():
    row = dropped_row(rollout(SUMMARY))
    thinking = [p for p in row["parts"] if p["type"] == "thinking"]
    assert thinking == [{"type": "thinking", "text": THOUGHT, "label": "reasoning"}]
    row = dropped_row(rollout(ENCRYPTED))
    assert [p["label"] for p in row["parts"] if p["type"] == "thinking"] == [
        "reasoning (encrypted)"
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("item", [SUMMARY, ENCRYPTED], ids=["summary", "encrypted"])
def test_a_dropped_codex_row_holding_reasoning_is_labelled_as_reasoning(
    owner_client, store_for, item
):
    transcript = store_for(rollout(item), "rollout-2026-01-05T11-00-00-s-1.jsonl")
    html = owner_client.get(f"/t/{transcript.public_id}/").content.decode()
    assert "blank assistant placeholder" not in html
    assert "(blank)" not in html
    assert "dropped: reasoning only, with no text or call a provider would take" in html
    assert '<details class="part thinking"><summary>reasoning' in html
    if item is SUMMARY:
        assert "<strong>schema</strong>" in html


@pytest.mark.django_db
def test_a_truly_blank_placeholder_is_still_called_one(owner_client, store_for):
    data = rollout()  # no reasoning at all: the empty reply is a blank placeholder
    transcript = store_for(data, "rollout-2026-01-05T11-00-00-s-2.jsonl")
    html = owner_client.get(f"/t/{transcript.public_id}/").content.decode()
    assert "dropped: blank assistant placeholder" in html
    assert "reasoning only" not in html
