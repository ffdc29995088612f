"""Issue 31: a project's dashboard adds up the tokens its sessions' files record, the prompt
cache's reads and writes among them (the session's own totals: ``tests/web/test_timing.py``)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inspector.scan import reports
from tests.testdata import CORPUS, read
from tests.web.conftest import BROKEN_CLAUDE_CODE, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db

CODEX = (
    CORPUS
    / "codex"
    / ("madshn-localpush__rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl")
)


@pytest.fixture
def project(owner):
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "tokens")
    store_upload(owner, read(BROKEN_CLAUDE_CODE), "claude.jsonl", project=project)
    store_upload(owner, read(CODEX), "rollout.jsonl", project=project)
    store_upload(owner, HEALTHY_CANONICAL, "healthy.json", project=project)  # records none
    return project


def test_the_totals_add_up_each_sessions_tokens_and_cache(project):
    summary = reports.project_totals(project)["summary"]
    # Claude Code: 38,395 in (38,385 written into the cache), 4 out; Codex: 34,469 in
    # (3,456 read from the cache), 431 out.
    assert (summary.tokens_in, summary.tokens_out) == (38395 + 34469, 4 + 431)
    assert (summary.cache_read, summary.cache_write) == (3456, 38385)


def test_the_dashboard_shows_them(project, owner_client):
    html = owner_client.get(reverse("scan:project", args=[project.slug])).content.decode()
    assert "<dt>Tokens</dt><dd>72,864 in · 435 out" in html
    assert "3,456 cache read, 38,385 cache write" in html


def test_a_project_whose_files_record_no_tokens_shows_no_token_line(owner, owner_client):
    from inspector.web.store import project_for, store_upload

    quiet = project_for(owner, "quiet")
    store_upload(owner, HEALTHY_CANONICAL, "healthy.json", project=quiet)
    html = owner_client.get(reverse("scan:project", args=[quiet.slug])).content.decode()
    assert "<dt>Sessions</dt>" in html and "<dt>Tokens</dt>" not in html
