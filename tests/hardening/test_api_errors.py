"""Every answer of the API is JSON, errors included, and a 400 says what was wrong."""

from __future__ import annotations

import orjson
import pytest
from django.urls import reverse

from inspector.web.models import ApiToken
from tests.web.conftest import HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db


@pytest.fixture
def bearer(owner) -> dict[str, str]:
    _, token = ApiToken.issue(owner, "ci")
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def json_error(response) -> str:
    assert response["Content-Type"] == "application/json"
    return orjson.loads(response.content)["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_method_the_transcript_url_does_not_take_is_a_json_405(client, store_for, method):
    transcript = store_for(HEALTHY_CANONICAL)
    url = reverse("api_transcript", args=[transcript.public_id])
    # No CSRF token and no cookie: a script's request, refused in JSON, not by the CSRF page.
    response = client.generic(method, url, b"{}", "application/json")
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"
    assert method in json_error(response)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_method_the_upload_url_does_not_take_is_a_json_405(client, method, bearer):
    response = client.generic(method, reverse("api_upload"), b"", **bearer)
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    assert json_error(response)


def test_an_unknown_api_address_is_a_json_404(client, bearer):
    for url in ("/api/nothing", "/api/transcripts/x/y"):
        response = client.get(url, **bearer)
        assert response.status_code == 404
        assert json_error(response) == "No such API address."


def test_an_unknown_page_elsewhere_is_still_a_page(client):
    response = client.get("/nothing-here/")
    assert response.status_code == 404
    assert "application/json" not in response["Content-Type"]


def test_a_400_for_bad_query_parameters_keeps_each_fields_message(client, bearer):
    response = client.post(
        reverse("api_upload") + "?format=nonsense&name=" + "n" * 300,
        HEALTHY_CANONICAL,
        content_type="application/json",
        **bearer,
    )
    assert response.status_code == 400
    body = orjson.loads(response.content)
    assert body["error"] == "Bad query parameters."
    assert "nonsense" in body["fields"]["format"][0]
    assert "255" in body["fields"]["name"][0]


def test_a_server_error_under_the_api_is_json(client, bearer, monkeypatch, store_for):
    from inspector.web import views

    transcript = store_for(HEALTHY_CANONICAL)

    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(views, "report_from", fail)
    client.raise_request_exception = False
    response = client.get(reverse("api_transcript", args=[transcript.public_id]), **bearer)
    assert response.status_code == 500
    assert "logged" in json_error(response)
