"""Issue 18, point 5 without a browser: the styled error pages and what they say."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_a_page_past_the_end_is_404_with_the_page_count(owner_client, transcript):
    response = owner_client.get(f"/t/{transcript.public_id}/?page=40")
    assert response.status_code == 404
    body = response.content.decode()
    assert "This view of the timeline has 1 page of rows; there is no page 40." in body
    assert 'class="site"' in body, "the site's own page, not Django's bare one"
    assert f'href="/t/{transcript.public_id}/"' in body


def test_someone_elses_transcript_is_the_general_404(other_client, transcript):
    response = other_client.get(f"/t/{transcript.public_id}/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "matches the given query" not in body
    assert "belongs to another account" in body


def test_an_unknown_address_is_the_styled_404(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404
    assert "There is nothing at this address" in response.content.decode()


def test_every_page_carries_the_skip_link_and_the_theme_script(owner_client, transcript):
    body = owner_client.get(f"/t/{transcript.public_id}/").content.decode()
    assert body.index('class="skip" href="#timeline"') < body.index('class="site"')
    assert "inspector/theme.js" in body and "inspector/timeline.js" in body
    assert 'id="keys"' in body
    assert 'class="skip" href="#content"' in owner_client.get("/rules/").content.decode()


def test_the_map_of_a_filtered_view_has_a_mark_per_row_it_shows(owner_client, transcript):
    from inspector.diagnosis.select import Filters, select_positions, session_map
    from inspector.web import store

    diagnosis = store.get_page_diagnosis(transcript)
    filters = Filters(around=0)
    positions = select_positions(diagnosis, filters)
    shown = session_map(diagnosis, positions, filters, 1)
    assert shown is not None and len(shown.marks) == len(positions)
    assert all(mark.finding for mark in shown.marks), "every row of 'only findings' has one"
    assert [mark.key for mark in shown.marks] == [f"r{p}" for p in positions]
    original = Filters(view="original")
    everything = session_map(diagnosis, select_positions(diagnosis, original), original, 1)
    assert everything is not None and len(everything.marks) == diagnosis.message_count
