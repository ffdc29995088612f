"""Who may open what: every URL with the owner, another user and an anonymous visitor."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

TRANSCRIPT_PAGES = [
    ("timeline", ()),
    ("download", ("repaired",)),
    ("download", ("canonical",)),
    ("download", ("report",)),
    ("download", ("original",)),
]
SIGNED_IN_PAGES = ["upload", "transcript_list", "account"]


@pytest.mark.parametrize(("name", "extra"), TRANSCRIPT_PAGES)
def test_owner_opens_their_transcript_pages(owner_client, transcript, name, extra):
    response = owner_client.get(reverse(name, args=[transcript.public_id, *extra]))
    assert response.status_code == 200


@pytest.mark.parametrize(("name", "extra"), TRANSCRIPT_PAGES)
def test_another_user_gets_404_for_someone_elses_transcript(other_client, transcript, name, extra):
    response = other_client.get(reverse(name, args=[transcript.public_id, *extra]))
    assert response.status_code == 404


@pytest.mark.parametrize(("name", "extra"), TRANSCRIPT_PAGES)
def test_anonymous_visitor_is_sent_to_sign_in(client, transcript, name, extra):
    url = reverse(name, args=[transcript.public_id, *extra])
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", SIGNED_IN_PAGES)
def test_signed_in_pages_send_anonymous_visitors_to_sign_in(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", SIGNED_IN_PAGES)
def test_signed_in_pages_open_for_a_user(other_client, name):
    assert other_client.get(reverse(name)).status_code == 200


def test_htmx_fragment_of_someone_elses_timeline_is_404_too(other_client, transcript):
    response = other_client.get(
        reverse("timeline", args=[transcript.public_id]), HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 404


def test_unknown_transcript_id_is_404(owner_client):
    assert owner_client.get(reverse("timeline", args=["no-such-id-000000"])).status_code == 404


def test_delete_by_another_user_is_404_and_keeps_the_transcript(other_client, transcript):
    response = other_client.post(reverse("delete", args=[transcript.public_id]))
    assert response.status_code == 404
    transcript.refresh_from_db()


def test_anonymous_delete_is_sent_to_sign_in(client, transcript):
    response = client.post(reverse("delete", args=[transcript.public_id]))
    assert response.status_code == 302
    transcript.refresh_from_db()


def test_delete_needs_post(owner_client, transcript):
    assert owner_client.get(reverse("delete", args=[transcript.public_id])).status_code == 405


def test_the_list_shows_only_the_users_own_transcripts(owner_client, other_client, transcript):
    assert transcript.file_name in owner_client.get(reverse("transcript_list")).content.decode()
    assert transcript.file_name not in other_client.get(reverse("transcript_list")).content.decode()


@pytest.mark.parametrize("url", ["/rules/", "/rules/PAIR-1/"])
def test_rule_pages_are_public(client, url):
    assert client.get(url).status_code == 200


def test_token_revoke_by_another_user_is_404(owner, other_client):
    from inspector.web.models import ApiToken

    token, _ = ApiToken.issue(owner, "ci")
    response = other_client.post(reverse("token_revoke", args=[token.public_id]))
    assert response.status_code == 404
    assert ApiToken.objects.filter(pk=token.pk).exists()


def test_token_pages_need_sign_in(client, owner):
    from inspector.web.models import ApiToken

    token, _ = ApiToken.issue(owner, "ci")
    assert client.post(reverse("token_create"), {"name": "x"}).status_code == 302
    assert client.post(reverse("token_revoke", args=[token.public_id])).status_code == 302
    assert ApiToken.objects.count() == 1


@pytest.mark.parametrize("model", ["transcript", "project", "apitoken"])
def test_admin_lists_the_apps_models_for_staff(client, django_user_model, transcript, model):
    admin = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(admin)
    assert client.get(reverse(f"admin:web_{model}_changelist")).status_code == 200
