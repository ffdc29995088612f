"""The scan pages in Chromium: live progress through htmx, and the dashboard under the CSP."""

from __future__ import annotations

import pytest

from inspector.diagnosis import REPAIR_RULES
from inspector.scan.jobs import folder_job
from inspector.scan.models import ScanJob
from inspector.scan.tasks import scan_file, start
from inspector.web.models import Project
from tests.browser.waits import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_job_page_follows_the_scan_live_and_stops_polling_when_done(
    signed_in_page, owner, mixed_tree
):
    page = signed_in_page
    project = Project.objects.create(owner=owner, name="mixed", slug="mixed")
    job, found = folder_job(owner, project, mixed_tree)
    ids = start(job, found, enqueue=False)
    page.goto(job.get_absolute_url())
    assert page.locator("#progress").get_attribute("hx-trigger") == "every 1s"
    assert "0/7" in page.locator("#progress .counts").inner_text()
    for file_id in ids:  # what a worker does, while the page is open
        scan_file.call(file_id)
    page.wait_for_selector("#progress .status-done", timeout=10_000)
    assert "7/7" in page.locator("#progress .counts").inner_text()
    assert page.locator("#progress").get_attribute("hx-trigger") is None
    assert "empty.jsonl" in page.locator("#progress .errors").inner_text()
    assert page.csp_violations == []


def test_dashboard_charts_and_filters_work_under_the_csp(signed_in_page, run_scan, mixed_tree):
    run_scan(mixed_tree, project="mixed")
    page = signed_in_page
    page.goto("/p/mixed/")
    # A bar for each repair rule (the catalogue's, LINE-1 among them), found or not.
    assert page.locator("svg.rule-chart rect").count() == len(REPAIR_RULES)
    assert page.locator("svg.day-chart rect").count() >= 1
    page.select_option("select[name=needs_repair]", "yes")
    page.wait_for_url("**/p/mixed/?*needs_repair=yes*")
    wait_until(page, "document.querySelectorAll('#sessions a.path').length === 3")
    assert page.csp_violations == []
    assert ScanJob.objects.count() == 1
