from __future__ import annotations

import orjson
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from inspector.web.models import ApiToken, Transcript
from tests.web.conftest import BROKEN_CANONICAL

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(owner) -> str:
    _, token = ApiToken.issue(owner, "ci")
    return token


@pytest.fixture
def api() -> Client:
    # CSRF checks on, as for a real client: the API must not need a CSRF token.
    return Client(enforce_csrf_checks=True)


def post_raw(api, token=None, data=BROKEN_CANONICAL, **params):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = reverse("api_upload")
    if params:
        from urllib.parse import urlencode

        url += "?" + urlencode(params)
    return api.post(url, data, content_type="application/json", headers=headers)


def test_upload_without_a_token_is_401(api):
    response = post_raw(api)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert Transcript.objects.count() == 0


@pytest.mark.parametrize("header", ["Bearer ti_wrong", "Basic abc", "Bearer ", "ti_x"])
def test_upload_with_a_wrong_token_is_401(api, token, header):
    response = api.post(
        reverse("api_upload"),
        BROKEN_CANONICAL,
        content_type="application/json",
        headers={"Authorization": header},
    )
    assert response.status_code == 401


def test_upload_raw_body_returns_id_url_and_summary(api, token, owner):
    response = post_raw(api, token, name="broken.json")
    assert response.status_code == 201
    assert response["Content-Type"] == "application/json"
    body = orjson.loads(response.content)
    transcript = Transcript.objects.get(public_id=body["id"])
    assert transcript.owner == owner and transcript.file_name == "broken.json"
    assert body["url"] == f"http://testserver/t/{body['id']}/"
    assert body["summary"]["needs_repair"] and body["summary"]["counts"]["PAIR-1"] >= 1
    assert body["summary"]["providers"]["anthropic"]["after_ok"] is True
    assert ApiToken.objects.get().last_used is not None


def test_upload_multipart(api, token):
    upload = SimpleUploadedFile("session.json", BROKEN_CANONICAL)
    response = api.post(
        reverse("api_upload"), {"file": upload}, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 201
    assert Transcript.objects.get().file_name == "session.json"


def test_same_bytes_again_is_200_with_the_same_id(api, token):
    first = orjson.loads(post_raw(api, token).content)
    again = post_raw(api, token)
    assert again.status_code == 200 and orjson.loads(again.content)["id"] == first["id"]


def test_unreadable_upload_is_400_with_the_loaders_words(api, token):
    response = post_raw(api, token, data=b'{"not": "a transcript"}')
    assert response.status_code == 400
    assert orjson.loads(response.content)["error"]


def test_upload_over_the_limit_is_413(api, token, settings):
    settings.INSPECTOR_MAX_UPLOAD_BYTES = len(BROKEN_CANONICAL) - 1
    assert post_raw(api, token).status_code == 413


def test_get_returns_the_report(api, token):
    created = orjson.loads(post_raw(api, token).content)
    response = api.get(
        reverse("api_transcript", args=[created["id"]]),
        headers={"Authorization": f"Bearer {token}"},
    )
    report = orjson.loads(response.content)
    assert response.status_code == 200
    assert report["id"] == created["id"] and report["needs_repair"]
    assert {f["rule"] for f in report["findings"]} >= {"PAIR-1", "ID-1", "PAIR-3"}


def test_get_someone_elses_transcript_is_404(api, other_user, store_for):
    transcript = store_for(BROKEN_CANONICAL)
    _, theirs = ApiToken.issue(other_user, "theirs")
    response = api.get(
        reverse("api_transcript", args=[transcript.public_id]),
        headers={"Authorization": f"Bearer {theirs}"},
    )
    assert response.status_code == 404


def test_get_without_a_token_is_401(api, store_for):
    transcript = store_for(BROKEN_CANONICAL)
    assert api.get(reverse("api_transcript", args=[transcript.public_id])).status_code == 401


def test_session_cookie_alone_does_not_authorise_the_api(owner_client):
    assert (
        owner_client.post(
            reverse("api_upload"), BROKEN_CANONICAL, content_type="application/json"
        ).status_code
        == 401
    )


def test_a_revoked_token_stops_working(api, token):
    ApiToken.objects.all().delete()
    assert post_raw(api, token).status_code == 401
