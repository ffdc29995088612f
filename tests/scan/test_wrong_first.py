"""What is wrong first (issue 31): the finished scan lists what needs repair, and the
tables put it first."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from inspector.web.models import Project, Transcript
from tests.scan.conftest import MIXED_NEEDS_REPAIR
from tests.web.conftest import BROKEN_CANONICAL, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db


def linked_paths(html: str) -> list[str]:
    return re.findall(r'class="path">([^<]+)</a>', html)


def test_the_finished_scans_page_lists_the_sessions_that_need_repair_with_links(
    owner_client, run_scan, mixed_tree
):
    job, _ = run_scan(mixed_tree, project="mixed")
    html = owner_client.get(job.get_absolute_url()).content.decode()
    assert "<h2>Sessions that need repair</h2>" in html
    listed = html.split("<h2>Sessions that need repair</h2>", 1)[1].split("</table>", 1)[0]
    assert set(linked_paths(listed)) == MIXED_NEEDS_REPAIR
    for path in MIXED_NEEDS_REPAIR:
        transcript = Transcript.objects.get(relative_path=path)
        assert f'href="{transcript.get_absolute_url()}"' in listed
        for rule in transcript.counts:
            assert f'href="/rules/{rule}/"' in listed
    assert "alpha/clean.jsonl" not in listed


def test_a_scan_with_nothing_to_repair_lists_nothing(owner_client, run_scan, tmp_path):
    from tests.scan.conftest import MIXED
    from tests.testdata import read

    folder = tmp_path / "clean"
    folder.mkdir()
    (folder / "clean.jsonl").write_bytes(read(MIXED["alpha/clean.jsonl"]))
    job, _ = run_scan(folder, project="clean")
    html = owner_client.get(job.get_absolute_url()).content.decode()
    assert "0 need repair." in html and "Sessions that need repair" not in html


def test_the_dashboard_puts_the_sessions_that_need_repair_first(owner_client, run_scan, mixed_tree):
    run_scan(mixed_tree, project="mixed")
    project = Project.objects.get(slug="mixed")
    html = owner_client.get(reverse("scan:project", args=[project.slug])).content.decode()
    table = html.split('<table class="sessions">', 1)[1].split("</table>", 1)[0]
    paths = linked_paths(table)
    head = len(MIXED_NEEDS_REPAIR)
    assert set(paths[:head]) == MIXED_NEEDS_REPAIR and len(paths) > head
    select = html.split('<select name="sort"', 1)[1]
    assert re.search(r"<option [^>]*>([^<]+)</option>", select).group(1) == "Needs repair first"


def test_the_transcripts_list_puts_those_that_need_repair_first(owner_client, owner):
    from inspector.web.store import store_upload

    store_upload(owner, BROKEN_CANONICAL, "broken.json")
    store_upload(owner, HEALTHY_CANONICAL, "healthy.json")  # uploaded last: the newest
    html = owner_client.get(reverse("transcript_list")).content.decode()
    assert html.index("broken.json") < html.index("healthy.json")
    newest = owner_client.get(reverse("transcript_list") + "?sort=new").content.decode()
    assert newest.index("healthy.json") < newest.index("broken.json")


def test_date_filters_keep_the_sessions_of_those_days(owner_client, run_scan, mixed_tree):
    run_scan(mixed_tree, project="mixed")
    project = Project.objects.get(slug="mixed")
    page = reverse("scan:project", args=[project.slug])
    began = Transcript.objects.get(relative_path="alpha/cut-call.jsonl")
    day = began.scan_files.get().started.date().isoformat()  # 2026-01-13, its first record
    html = owner_client.get(page, {"since": day, "until": day}).content.decode()
    shown = set(linked_paths(html))
    assert "alpha/cut-call.jsonl" in shown
    days = {
        t.relative_path: t.scan_files.get().started
        for t in Transcript.objects.filter(project=project)
        if t.scan_files.get().started is not None
    }
    assert shown == {path for path, at in days.items() if at.date().isoformat() == day}
    later = owner_client.get(page, {"since": "2026-01-14"}).content.decode()
    assert "alpha/cut-call.jsonl" not in set(linked_paths(later))
    backwards = owner_client.get(page, {"since": "2026-02-01", "until": "2026-01-01"})
    assert backwards.status_code == 400
