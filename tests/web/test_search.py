"""Issue 18, point 1: search within a transcript reaches every row, not only the loaded ones."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.web.conftest import BROKEN_LONG

pytestmark = pytest.mark.django_db


@pytest.fixture
def long_transcript(store_for):
    return store_for(BROKEN_LONG, "long.json")


def search(client, transcript, **params):
    url = reverse("transcript_search", args=[transcript.public_id])
    return client.get(url, params, HTTP_ACCEPT="application/json")


def test_search_finds_a_row_on_a_page_not_loaded_with_its_page(owner_client, long_transcript):
    response = search(owner_client, long_transcript, q="STEP 250")
    assert response.status_code == 200
    answer = response.json()
    assert answer["count"] == 1
    (hit,) = answer["hits"]
    assert hit["page"] == 3
    assert hit["href"] == f"/t/{long_transcript.public_id}/?page=3&q=STEP+250#{hit['key']}"
    page = owner_client.get(hit["href"].split("#")[0]).content.decode()
    assert f'id="{hit["key"]}"' in page


def test_search_counts_every_hit_in_view_order_and_looks_at_calls(owner_client, long_transcript):
    answer = search(owner_client, long_transcript, q="stray").json()
    assert answer["count"] == 30  # every tenth turn leaves a stray result
    keys = [int(hit["key"][1:]) for hit in answer["hits"]]
    assert keys == sorted(keys)
    assert search(owner_client, long_transcript, q="search").json()["count"] > 200  # tool names


def test_search_pages_follow_the_view(owner_client, long_transcript):
    everything = search(owner_client, long_transcript, q="stray").json()["hits"]
    only = search(owner_client, long_transcript, q="stray", rule="PAIR-3").json()["hits"]
    assert [hit["key"] for hit in only] == [hit["key"] for hit in everything]
    assert all(hit["page"] == 1 for hit in only)
    assert "rule=PAIR-3" in only[0]["href"]


def test_search_without_script_is_a_page_of_links(owner_client, long_transcript):
    url = reverse("transcript_search", args=[long_transcript.public_id])
    html = owner_client.get(url, {"q": "step 250"}).content.decode()
    assert "1 row holds “step 250”" in html
    assert f"/t/{long_transcript.public_id}/?page=3&amp;q=step+250#r" in html


def test_search_needs_words(owner_client, long_transcript):
    assert search(owner_client, long_transcript, q="").status_code == 400
    assert search(owner_client, long_transcript, q="x" * 201).status_code == 400


def test_search_is_the_owners_only(other_client, client, long_transcript):
    assert search(other_client, long_transcript, q="step").status_code == 404
    assert search(client, long_transcript, q="step").status_code == 302
