"""Shared pages read from the chunked diagnosis cache, as a fresh process serves them."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.diagnosis import stored as cachefile
from inspector.share.content import redact_row
from inspector.web import store
from tests.web.conftest import BROKEN_LONG, unanswered_calls

pytestmark = pytest.mark.django_db


def cold_shared(client, token: str, **query):
    store._memory.clear()
    return client.get(reverse("shared_timeline", args=[token]), query)


def row_keys(html: str) -> list[str]:
    return re.findall(r'<article id="(r\d+)"', html)


@pytest.mark.parametrize("mode", ["full", "redacted"])
def test_a_later_filtered_shared_page_shows_the_rows_diagnose_gives(
    client, store_for, make_link, monkeypatch, mode
):
    monkeypatch.setattr(cachefile, "CHUNK_ROWS", 7)
    transcript = store_for(BROKEN_LONG, "long.json")
    _, token = make_link(mode, for_transcript=transcript)
    rows = diagnose(formats.load(BROKEN_LONG)).rows
    tools = [row for row in rows if row["role"] == "tool"]

    response = cold_shared(client, token, role="tool", page=2)

    assert response.status_code == 200
    assert row_keys(response.content.decode()) == [row["key"] for row in tools[200:400]]
    if mode == "redacted":
        assert response.context["rows"] == [redact_row(row) for row in tools[200:400]]


@pytest.mark.parametrize("mode", ["full", "redacted"])
def test_a_shared_page_of_a_badly_broken_transcript_reads_only_the_head_of_its_lists(
    client, store_for, make_link, refuse_long_lists, mode
):
    fresh = diagnose(formats.load(unanswered_calls(250)))
    issues = len(fresh.providers["openai-chat"]["before"])
    transcript = store_for(unanswered_calls(250), "unanswered.json")
    _, token = make_link(mode, for_transcript=transcript)

    html = cold_shared(client, token).content.decode()

    assert f"{len(fresh.findings)} findings below" in html
    assert f"rejected ({issues})" in html and f"and {issues - 20} more" in html
