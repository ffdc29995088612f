"""A forked Claude Code session: the resumed branch by default, any other on request."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inspector.formats import claude_code
from tests.testdata import CORPUS, read

pytestmark = pytest.mark.django_db

FORK = CORPUS / "claude-code" / "files" / "daaain-claude-code-log__dag_fork.jsonl"


@pytest.fixture
def forked(store_for):
    return store_for(read(FORK), FORK.name)


def _other_leaf() -> str:
    branches = claude_code.parse(read(FORK)).meta["branches"]
    return next(b["leaf"] for b in branches if not b["active"])


def _row_count(response) -> int:
    return response.context["row_total"]


def test_timeline_offers_to_open_the_other_branch(owner_client, forked):
    response = owner_client.get(reverse("timeline", args=[forked.public_id]))
    html = response.content.decode()
    assert f"?branch={_other_leaf()}" in html
    assert "You are looking at another branch" not in html


def test_opening_another_branch_shows_its_own_messages(owner_client, forked):
    url = reverse("timeline", args=[forked.public_id])
    default = owner_client.get(url)
    other = owner_client.get(url, {"branch": _other_leaf()})
    assert other.status_code == 200
    expected = len(claude_code.parse(read(FORK), leaf=_other_leaf()).messages)
    assert _row_count(other) == expected != _row_count(default)
    html = other.content.decode()
    assert "You are looking at another branch" in html
    assert f'name="branch" value="{_other_leaf()}"' in html  # filters keep the branch


def test_htmx_pages_of_a_branch_keep_it(owner_client, forked):
    url = reverse("timeline", args=[forked.public_id])
    response = owner_client.get(url, {"branch": _other_leaf()}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert b"<html" not in response.content


def test_unknown_branch_is_404(owner_client, forked):
    url = reverse("timeline", args=[forked.public_id])
    assert owner_client.get(url, {"branch": "no-such-uuid"}).status_code == 404


def test_branch_of_a_transcript_without_branches_is_404(owner_client, transcript):
    url = reverse("timeline", args=[transcript.public_id])
    assert owner_client.get(url, {"branch": "anything"}).status_code == 404


def test_another_users_branch_is_404(other_client, forked):
    url = reverse("timeline", args=[forked.public_id])
    assert other_client.get(url, {"branch": _other_leaf()}).status_code == 404
