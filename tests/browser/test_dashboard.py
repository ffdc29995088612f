"""Issue 18, point 8 in the browser: the day chart reads with its axes and its own dates."""

from __future__ import annotations

import pytest

from tests.testdata import read
from tests.web.conftest import BROKEN_CLAUDE_CODE, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_day_chart_has_labelled_axes_and_dates_sessions_by_their_first_message(
    signed_in_page, owner
):
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "work")
    store_upload(owner, read(BROKEN_CLAUDE_CODE), "claude.jsonl", project=project)
    store_upload(owner, HEALTHY_CANONICAL, "healthy.json", project=project)
    page = signed_in_page
    page.goto(f"/p/{project.slug}/")
    chart = page.locator("svg.day-chart")
    labels = chart.locator("text").all_text_contents()
    assert "sessions" in labels and "Jan 13" in labels
    assert any(label.startswith("day of each session") for label in labels)
    assert {"0", "1"} <= set(labels)
    titles = chart.locator("g > title").all_text_contents()
    assert any(t.startswith("2026-01-13: 1 need repair") for t in titles), titles
    assert page.csp_violations == []
