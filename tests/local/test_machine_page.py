"""This machine's sessions in the browser's server (issue 31): listed with their verdicts,
opened without a scan first; only for the owner on a local server, and it says so."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.local.conftest import Home

pytestmark = pytest.mark.django_db

LOCAL = {"HTTP_HOST": "127.0.0.1:8000", "REMOTE_ADDR": "127.0.0.1"}


@pytest.fixture
def machine_owner(django_user_model, agent_home: Home, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    owner = django_user_model.objects.create_superuser(username="me", password="pass-me-123")
    client = Client()
    client.force_login(owner)
    return client


def test_the_owner_on_a_local_server_sees_every_session_with_its_verdict(
    machine_owner, agent_home: Home
):
    html = machine_owner.get(reverse("machine"), **LOCAL).content.decode()
    for path in agent_home.all():
        assert str(path) in html
    assert f"{len(agent_home.broken)} of {len(agent_home.all())} need repair." in html
    # What needs repair comes first.
    first_clean = min(html.index(str(p)) for p in agent_home.healthy)
    assert all(html.index(str(p)) < first_clean for p in agent_home.broken)


def test_open_stores_the_session_and_shows_its_timeline_writing_nothing_beside_it(
    machine_owner, agent_home: Home
):
    from inspector.web.models import Transcript

    path = next(p for p in agent_home.broken if ".claude" in p.parts)
    before = {p: p.read_bytes() for p in path.parent.iterdir()}
    response = machine_owner.post(reverse("machine_open"), {"path": str(path)}, **LOCAL)
    transcript = Transcript.objects.get()
    assert response.status_code == 302 and response["Location"] == transcript.get_absolute_url()
    assert transcript.file_name == path.name and transcript.needs_repair
    assert transcript.project is None
    assert {p: p.read_bytes() for p in path.parent.iterdir()} == before
    page = machine_owner.get(transcript.get_absolute_url(), **LOCAL)
    assert page.status_code == 200


def test_a_path_the_listing_did_not_find_is_never_read(machine_owner, tmp_path):
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_text('{"role": "user", "content": "private"}\n')
    response = machine_owner.post(reverse("machine_open"), {"path": str(secret)}, **LOCAL)
    assert response.status_code == 302 and response["Location"] == reverse("machine")
    from inspector.web.models import Transcript

    assert not Transcript.objects.exists()


@pytest.mark.parametrize(
    "where",
    [
        {"HTTP_HOST": "inspector.example", "REMOTE_ADDR": "127.0.0.1"},  # behind a proxy
        {"HTTP_HOST": "127.0.0.1:8000", "REMOTE_ADDR": "10.0.0.7"},  # from another machine
    ],
)
def test_a_server_reached_from_elsewhere_says_why_it_will_not_list(
    machine_owner, agent_home: Home, settings, where
):
    settings.ALLOWED_HOSTS = ["*"]
    response = machine_owner.get(reverse("machine"), **where)
    body = response.content.decode()
    assert response.status_code == 403 and "opens only for the owner" in body
    assert not any(str(p) in body for p in agent_home.all())
    posted = machine_owner.post(
        reverse("machine_open"), {"path": str(next(iter(agent_home.broken)))}, **where
    )
    assert posted.status_code == 403


def test_a_user_who_is_not_the_owner_is_told_so(owner_client, agent_home: Home):
    response = owner_client.get(reverse("machine"), **LOCAL)
    assert response.status_code == 403 and "opens only for the owner" in response.content.decode()
