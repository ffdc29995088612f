from __future__ import annotations

import pytest
from django.urls import reverse

from inspector.web.models import ApiToken, hash_token
from tests.web.conftest import BROKEN_CANONICAL, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db


# --- list ------------------------------------------------------------------


@pytest.fixture
def two_transcripts(store_for):
    return store_for(BROKEN_CANONICAL, "broken.json"), store_for(HEALTHY_CANONICAL, "healthy.json")


def test_list_is_newest_first_when_asked_with_counts_and_verdicts(owner_client, two_transcripts):
    # By default what needs repair comes first (issue 31); the newest first, when asked.
    html = owner_client.get(reverse("transcript_list"), {"sort": "new"}).content.decode()
    assert html.index("healthy.json") < html.index("broken.json")
    assert 'href="/rules/PAIR-1/"' in html and "PAIR-1 \u00d7" in html
    assert "Anthropic" in html and "✗" in html


@pytest.mark.parametrize(
    ("params", "shown", "hidden"),
    [
        ({"needs_repair": "yes"}, "broken.json", "healthy.json"),
        ({"needs_repair": "no"}, "healthy.json", "broken.json"),
        ({"format": "canonical"}, "broken.json", "nothing-else"),
    ],
)
def test_list_filters(owner_client, two_transcripts, params, shown, hidden):
    html = owner_client.get(reverse("transcript_list"), params).content.decode()
    assert shown in html and hidden not in html


@pytest.mark.parametrize("params", [{"needs_repair": "maybe"}, {"format": "pdf"}, {"page": "0"}])
def test_list_bad_filters_are_400(owner_client, params):
    assert owner_client.get(reverse("transcript_list"), params).status_code == 400


def test_list_htmx_request_gets_the_results_fragment(owner_client, two_transcripts):
    response = owner_client.get(
        reverse("transcript_list"), {"needs_repair": "yes"}, HTTP_HX_REQUEST="true"
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="results">')
    assert "broken.json" in html and "<html" not in html
    assert "HX-Request" in response["Vary"]


def test_list_is_paginated(owner_client, owner, monkeypatch):
    from inspector.web import views
    from inspector.web.models import Transcript

    monkeypatch.setattr(views, "LIST_PAGE_SIZE", 2)
    for number in range(3):
        Transcript.objects.create(
            owner=owner, file_name=f"f{number}.json", format="canonical", size=1, sha256=str(number)
        )
    first = owner_client.get(reverse("transcript_list")).content.decode()
    assert "Page 1 of 2" in first and "f2.json" in first and "f0.json" not in first
    second = owner_client.get(reverse("transcript_list"), {"page": 2}).content.decode()
    assert "f0.json" in second


# --- rules -----------------------------------------------------------------


def test_rule_index_lists_every_rule(client):
    from inspector.engine import RULES

    html = client.get(reverse("rule_list")).content.decode()
    for rule_id in RULES:
        assert f'href="/rules/{rule_id}/"' in html


def test_rule_page_explains_with_an_example_source_and_related_rules(client):
    from inspector.engine import RULES

    rule = RULES["PAIR-1"]
    html = client.get(reverse("rule", args=["PAIR-1"])).content.decode()
    assert rule.title in html.replace("&#x27;", "'")
    assert "Before" in html and "After" in html and "mini-timeline" in html
    for related in rule.related:
        assert f'href="/rules/{related}/"' in html
    assert "Your transcripts that break it" not in html


def test_rule_page_lists_the_signed_in_users_transcripts_that_break_it(
    owner_client, other_client, two_transcripts
):
    mine = owner_client.get(reverse("rule", args=["PAIR-1"])).content.decode()
    assert "broken.json" in mine and "healthy.json" not in mine
    theirs = other_client.get(reverse("rule", args=["PAIR-1"])).content.decode()
    assert "broken.json" not in theirs and "None of your transcripts" in theirs


def test_unknown_rule_is_404(client):
    assert client.get("/rules/NOPE-9/").status_code == 404


# --- account and tokens ----------------------------------------------------


def test_creating_a_token_shows_it_once_and_stores_only_its_hash(owner_client, owner):
    response = owner_client.post(reverse("token_create"), {"name": "ci"})
    html = response.content.decode()
    token = ApiToken.objects.get(user=owner)
    shown = html.split('id="new-token">')[1].split("<")[0]
    assert hash_token(shown) == token.token_hash and shown not in token.token_hash
    assert "no-store" in response["Cache-Control"]
    assert shown not in owner_client.get(reverse("account")).content.decode()


def test_a_token_needs_a_name(owner_client):
    assert owner_client.post(reverse("token_create"), {"name": ""}).status_code == 400
    assert ApiToken.objects.count() == 0


def test_revoking_a_token_deletes_it(owner_client, owner):
    token, _ = ApiToken.issue(owner, "ci")
    response = owner_client.post(reverse("token_revoke", args=[token.public_id]))
    assert response.status_code == 302
    assert not ApiToken.objects.exists()
