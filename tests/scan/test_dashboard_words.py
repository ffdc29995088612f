"""Issue 18, point 8: the day chart's axes and dates, empty files, the scan's and repair's words."""

from __future__ import annotations

import io
import re
import subprocess
import sys

import pytest
from django.urls import reverse

from inspector.scan import reports
from tests.testdata import read
from tests.web.conftest import BROKEN_CANONICAL, BROKEN_CLAUDE_CODE, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db

EMPTY_CODEX = (
    b'{"timestamp":"2026-01-02T10:00:00Z","type":"session_meta",'
    b'"payload":{"id":"s-empty","cwd":"/w"}}\n'
)


@pytest.fixture
def project(owner):
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "work")
    store_upload(owner, read(BROKEN_CLAUDE_CODE), "claude.jsonl", project=project)
    store_upload(owner, HEALTHY_CANONICAL, "healthy.json", project=project)
    store_upload(owner, EMPTY_CODEX, "empty.jsonl", project=project)
    return project


def test_a_session_is_drawn_on_the_day_of_its_own_first_message(project):
    chart = reports.day_chart(project)
    days = {bar["day"].isoformat(): bar for bar in chart["bars"]}
    assert days["2026-01-13"]["repair"] == 1, "the Claude Code session's own first timestamp"


def test_an_empty_file_is_one_skipped_line_not_clean_and_not_in_the_chart(project, owner_client):
    """Issue 31: a folder's empty files (all dated the day of the scan) are folded into
    one "skipped" line, out of the chart and the table, instead of filling them."""
    chart = reports.day_chart(project)
    assert sum(bar["clean"] for bar in chart["bars"]) == 1
    assert sum(bar["repair"] for bar in chart["bars"]) == 1
    assert all("empty" not in bar for bar in chart["bars"])
    page = reverse("scan:project", args=[project.slug])
    html = owner_client.get(page).content.decode()
    assert "1 empty file (no messages) skipped: left out of the chart and the table." in html
    assert "empty.jsonl" not in html
    assert "files with no messages are left out" in html
    shown = owner_client.get(page + "?empty=only").content.decode()
    assert "empty.jsonl" in shown and "healthy.json" not in shown
    assert '<span class="chip">empty</span>' in shown
    both = owner_client.get(page + "?empty=show").content.decode()
    assert "empty.jsonl" in both and "healthy.json" in both


def test_the_day_chart_has_axes_with_counts_and_dates(project, owner_client):
    chart = reports.day_chart(project)
    assert chart["top"] == 1  # the healthy file, uploaded today (the empty one is left out)
    assert [(tick["value"], tick["y"]) for tick in chart["y_ticks"]] == [(0, 120), (1, 0)]
    labels = [tick["day"] for tick in chart["x_ticks"]]
    assert labels[0] == chart["first"] and labels[-1] == chart["last"]
    html = owner_client.get(reverse("scan:project", args=[project.slug])).content.decode()
    svg = re.search(r'<svg class="day-chart".*?</svg>', html, re.S).group(0)
    assert ">sessions</text>" in svg and "day of each session" in svg
    assert ">Jan 13</text>" in svg


def test_the_scan_lists_what_needs_repair_and_the_dashboards_address(run_scan, tmp_path):
    (tmp_path / "broken.json").write_bytes(BROKEN_CANONICAL)
    (tmp_path / "healthy.json").write_bytes(HEALTHY_CANONICAL)
    _, output = run_scan(tmp_path, project="mine", base_url="https://inspector.example/")
    assert "Need repair (1):" in output
    listed = output.split("Need repair (1):")[1].split("\n")
    assert listed[1].strip().startswith("broken.json  (")
    assert listed[2].strip().startswith("https://inspector.example/t/")
    assert "healthy.json" not in output.split("Need repair")[1]
    assert "Project dashboard: https://inspector.example/p/mine/" in output


def test_repair_report_has_a_text_form_beside_the_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_bytes(BROKEN_CANONICAL)
    from django.core.management import call_command

    out = io.StringIO()
    sys_stdout = sys.stdout
    sys.stdout = out
    try:
        with pytest.raises(SystemExit) as exit_:
            call_command("repair", str(path), "--report", "--text")
    finally:
        sys.stdout = sys_stdout
    assert exit_.value.code == 1
    text = out.getvalue()
    assert text.startswith(f"{path}: canonical, 9 messages")
    assert "Findings:" in text and "PAIR-1" in text
    assert not text.lstrip().startswith("{")


def test_repair_report_is_still_json_without_text(tmp_path):
    path = tmp_path / "broken.json"
    path.write_bytes(BROKEN_CANONICAL)
    result = subprocess.run(
        [sys.executable, "manage.py", "repair", str(path), "--report"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1 and result.stdout.lstrip().startswith("{")
