"""A diagnosis as Markdown, to attach to an issue (issue 31)."""

from __future__ import annotations

import pytest

from inspector.diagnosis import diagnose, report_from
from inspector.formats import load
from tests.web.conftest import BROKEN_CANONICAL, XSS_CANONICAL

pytestmark = pytest.mark.django_db


def test_the_markdown_says_the_verdict_each_provider_and_every_finding(owner_client, store_for):
    transcript = store_for(BROKEN_CANONICAL, "broken.json")
    response = owner_client.get(f"/t/{transcript.public_id}/download/markdown/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    assert 'filename="broken.diagnosis.md"' in response["Content-Disposition"]
    text = response.content.decode()
    report = report_from(diagnose(load(BROKEN_CANONICAL)))
    assert text.startswith("# Transcript diagnosis: broken.json\n")
    assert "**This history needs repair.**" in text
    assert f"## Findings ({len(report['findings'])})" in text
    for rule, count in report["counts"].items():
        assert f"### {rule}: " in text and f"({count})" in text
    assert "| OpenAI Chat | rejected: " in text and "| accepted |" in text
    assert text.count("\n- message ") + text.count("\n- line ") >= len(report["findings"]) - 1
    page = owner_client.get(f"/t/{transcript.public_id}/").content.decode()
    assert f'href="/t/{transcript.public_id}/download/markdown/"' in page


def test_markup_in_the_transcript_stays_text_in_the_markdown(owner_client, store_for):
    transcript = store_for(XSS_CANONICAL, "xss.json")
    text = owner_client.get(f"/t/{transcript.public_id}/download/markdown/").content.decode()
    assert "<script" not in text and "<img" not in text and "<b>" not in text
    assert "&lt;b>tool&lt;/b>" in text  # the call's name, quoted by its finding, as text


def test_only_the_owner_gets_it(other_client, store_for):
    transcript = store_for(BROKEN_CANONICAL, "broken.json")
    assert other_client.get(f"/t/{transcript.public_id}/download/markdown/").status_code == 404
