"""The owner's side: the share panel on the timeline, making and revoking links, the account."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from inspector.share.models import ShareLink, hash_token
from tests.diagnosis.test_redact import PLANTED
from tests.web.conftest import assistant, call, canonical, result, user

pytestmark = pytest.mark.django_db

TOKEN_IN_URL = re.compile(r'value="https?://[^"]+/s/([A-Za-z0-9_-]+)/"')


def panel_url(transcript) -> str:
    return reverse("share_panel", args=[transcript.public_id])


def revoke_url(link) -> str:
    return reverse("share_revoke", args=[link.transcript.public_id, link.public_id])


def test_timeline_loads_the_share_panel_from_the_share_app(owner_client, transcript):
    response = owner_client.get(transcript.get_absolute_url())
    body = response.content.decode()
    assert f'hx-get="{panel_url(transcript)}"' in body
    assert f'href="{panel_url(transcript)}"' in body  # the same panel without JavaScript
    assert "share/share.js" in body and 'nonce="' in body


def test_panel_comes_back_as_a_fragment_for_htmx(owner_client, transcript):
    response = owner_client.get(panel_url(transcript), HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<section class="share" id="share-panel">')
    assert "<html" not in body and "Create link" in body


def test_panel_is_a_page_of_its_own_without_htmx(owner_client, transcript):
    response = owner_client.get(panel_url(transcript))
    assert response.status_code == 200
    assert b"<html" in response.content and b'id="share-panel"' in response.content


@pytest.mark.parametrize("method", ["get", "post"])
def test_another_user_gets_404_for_the_panel(other_client, transcript, method):
    data = {"mode": "full", "expires": "never"} if method == "post" else None
    response = getattr(other_client, method)(panel_url(transcript), data)
    assert response.status_code == 404
    assert not ShareLink.objects.exists()


def test_anonymous_visitor_is_sent_to_sign_in_from_the_panel(client, transcript):
    response = client.post(panel_url(transcript), {"mode": "full", "expires": "never"})
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert not ShareLink.objects.exists()


def test_creating_a_link_shows_it_once_and_stores_only_its_hash(owner_client, transcript):
    response = owner_client.post(
        panel_url(transcript), {"mode": "redacted", "expires": "7"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    token = TOKEN_IN_URL.search(response.content.decode()).group(1)
    assert 'data-copy="share-url"' in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    link = ShareLink.objects.get()
    assert link.transcript == transcript and link.mode == "redacted"
    assert link.token_hash == hash_token(token)
    stored = [str(value) for value in ShareLink.objects.values_list().get()]
    assert not any(token in value for value in stored)
    assert (
        timedelta(days=7) - timedelta(minutes=1) < link.expires - link.created <= timedelta(days=7)
    )
    # Shown once: the panel read again lists the link but cannot show its token.
    again = owner_client.get(panel_url(transcript), HTTP_HX_REQUEST="true").content.decode()
    assert token not in again and "redacted" in again


def test_a_never_expiring_full_link_works_as_a_plain_post(owner_client, transcript):
    response = owner_client.post(panel_url(transcript), {"mode": "full", "expires": "never"})
    assert response.status_code == 200 and b"<html" in response.content
    assert b"never expires" in response.content
    link = ShareLink.objects.get()
    assert link.mode == "full" and link.expires is None


@pytest.mark.parametrize(
    "data",
    [{"mode": "public", "expires": "7"}, {"mode": "full", "expires": "365"}, {}],
)
def test_bad_share_input_is_400_and_makes_no_link(owner_client, transcript, data):
    response = owner_client.post(panel_url(transcript), data, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert not ShareLink.objects.exists()


def test_tokens_are_unique_and_long(transcript):
    tokens = [ShareLink.issue(transcript, "full", "never")[1] for _ in range(200)]
    assert len(set(tokens)) == len(tokens)
    # token_urlsafe(32): 256 bits; at least 128 is the promise.
    assert all(len(token) >= 43 and re.fullmatch(r"[A-Za-z0-9_-]+", token) for token in tokens)
    assert len({hash_token(token) for token in tokens}) == len(tokens)


def test_owner_revokes_a_link_from_the_panel(owner_client, make_link):
    link, token = make_link()
    response = owner_client.post(revoke_url(link), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b'id="share-panel"' in response.content
    link.refresh_from_db()
    assert link.revoked is not None and link.status == "revoked"
    assert owner_client.get(reverse("shared_timeline", args=[token])).status_code == 404


def test_revoking_twice_keeps_the_first_time(owner_client, make_link):
    link, _ = make_link()
    owner_client.post(revoke_url(link))
    link.refresh_from_db()
    first = link.revoked
    owner_client.post(revoke_url(link))
    link.refresh_from_db()
    assert link.revoked == first


def test_another_user_cannot_revoke(other_client, make_link):
    link, token = make_link()
    response = other_client.post(revoke_url(link))
    assert response.status_code == 404
    link.refresh_from_db()
    assert link.revoked is None
    assert other_client.get(reverse("shared_timeline", args=[token])).status_code == 200


def test_another_user_cannot_revoke_through_their_own_transcript(
    other_client, other_user, store_for, make_link
):
    link, _ = make_link()
    theirs = store_for(canonical(user("mine")), "theirs.json", user=other_user)
    url = reverse("share_revoke", args=[theirs.public_id, link.public_id])
    assert other_client.post(url).status_code == 404
    link.refresh_from_db()
    assert link.revoked is None


def test_revoke_needs_a_post(owner_client, make_link):
    link, _ = make_link()
    assert owner_client.get(revoke_url(link)).status_code == 405


def test_panel_lists_links_with_mode_expiry_views_and_state(owner_client, transcript, make_link):
    live, _ = make_link("full", "30")
    ShareLink.objects.filter(pk=live.pk).update(view_count=4)
    revoked, _ = make_link("redacted", "never")
    revoked.revoke()
    body = owner_client.get(panel_url(transcript), HTTP_HX_REQUEST="true").content.decode()
    assert 'class="link-live"' in body and 'class="link-revoked"' in body
    assert ">4</td>" in body
    assert body.count(">Revoke</button>") == 1  # only the live link can be revoked
    assert revoke_url(live) in body and revoke_url(revoked) not in body


def test_account_page_lists_only_the_users_live_links(
    owner_client, other_user, store_for, make_link, freeze_time
):
    live, _ = make_link("full", "never")
    revoked, _ = make_link()
    revoked.revoke()
    expired, _ = make_link("redacted", "1")
    ShareLink.objects.filter(pk=expired.pk).update(expires=timezone.now() - timedelta(seconds=1))
    theirs = store_for(canonical(user("theirs")), "theirs.json", user=other_user)
    someone_elses, _ = make_link(for_transcript=theirs)
    body = owner_client.get(reverse("account")).content.decode()
    assert "Live share links" in body
    assert revoke_url(live) in body
    for hidden in (revoked, expired, someone_elses):
        assert revoke_url(hidden) not in body


def test_revoking_from_the_account_page_returns_there(owner_client, make_link):
    link, _ = make_link()
    response = owner_client.post(revoke_url(link), {"back": "account"})
    assert response.status_code == 302 and response["Location"] == reverse("account")
    link.refresh_from_db()
    assert link.revoked is not None


def test_a_bad_place_to_return_to_is_400(owner_client, make_link):
    link, _ = make_link()
    assert owner_client.post(revoke_url(link), {"back": "https://evil"}).status_code == 400
    link.refresh_from_db()
    assert link.revoked is None


def test_panel_counts_possible_secrets(owner_client, store_for):
    secrets = list(PLANTED.values())
    data = canonical(
        user(f"my key is {secrets[0]}"),
        assistant(call("c1", "shell", {"cmd": f"export T={secrets[2]}"}), content="Running."),
        result("c1", f"{secrets[3]}\n{secrets[5]}"),
    )
    transcript = store_for(data, "env.json")
    body = owner_client.get(panel_url(transcript), HTTP_HX_REQUEST="true").content.decode()
    assert "4 possible secrets" in body
    assert "OpenAI key" in body and "Slack token" in body
    assert f'href="{transcript.get_absolute_url()}#r0"' in body


def test_panel_says_when_nothing_looks_like_a_secret(owner_client, transcript):
    body = owner_client.get(panel_url(transcript), HTTP_HX_REQUEST="true").content.decode()
    assert "No possible secrets found" in body
