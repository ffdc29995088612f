"""The project dashboard, the projects list and the project's downloads."""

from __future__ import annotations

import csv
import io
import re
import zipfile

import orjson
import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from inspector.diagnosis import diagnose, repaired_bytes
from inspector.scan.models import ScanFile
from inspector.web import store
from inspector.web.models import Project, Transcript
from inspector.web.templatetags.inspector_tags import verdicts
from tests.scan.conftest import MIXED, MIXED_NEEDS_REPAIR, MIXED_UNREADABLE, PROJECTS

pytestmark = pytest.mark.django_db

PAGES = ["scan:project", "scan:project_csv", "scan:project_zip"]


@pytest.fixture
def mixed(run_scan, mixed_tree) -> Project:
    run_scan(mixed_tree, project="mixed")
    return Project.objects.get(slug="mixed")


def url(name: str, project: Project, **query: str) -> str:
    path = reverse(name, args=[project.slug])
    return path + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def shown_paths(body: str) -> set[str]:
    return set(re.findall(r'class="path">([^<]+)</a>', body))


def test_dashboard_shows_totals_charts_and_every_session(owner_client, mixed):
    response = owner_client.get(url("scan:project", mixed))
    body = response.content.decode()
    assert response.status_code == 200
    assert shown_paths(body) == {path for path in MIXED if path.startswith(("alpha", "codex"))}
    assert '<svg class="rule-chart"' in body and '<svg class="day-chart"' in body
    # The CSP forbids style attributes: the charts use SVG attributes and classes.
    assert "style=" not in body
    assert re.search(r"<dt>Need repair</dt><dd class=\"bad-text\">3</dd>", body)
    assert re.search(r"<dt>Unreadable files</dt><dd class=\"bad-text\">2</dd>", body)
    assert "garbage.json" in body and "The file is empty." in body
    # A bar per repair rule, linked to the rule's page.
    assert 'href="/rules/PAIR-1/"' in body and 'href="/rules/INT-2/"' in body


def test_each_unreadable_file_links_to_the_scan_that_read_it(owner_client, mixed):
    body = owner_client.get(url("scan:project", mixed)).content.decode()
    for path in MIXED_UNREADABLE:
        file = ScanFile.objects.get(project=mixed, path=path)
        read = timezone.localtime(file.finished).strftime("%Y-%m-%d %H:%M")
        row = (
            f'<tr><td class="path">{path}</td><td>{escape(file.reason)}</td>'
            f'<td><a href="{file.job.get_absolute_url()}">{read}</a></td></tr>'
        )
        assert row in body


def test_each_session_of_the_table_shows_its_own_verdicts(owner_client, mixed):
    # Sessions of one page that share their verdicts share one drawing of them; each row
    # still shows its own session's.
    body = owner_client.get(url("scan:project", mixed)).content.decode()
    rows = re.findall(r"<tr>\s*<td>.*?</tr>", body, re.S)
    shown = {}
    for row in rows:
        path = re.search(r'class="path">([^<]+)</a>', row)
        if path:
            shown[path.group(1)] = row.rsplit("<td>", 1)[1].removesuffix("</td>\n      </tr>")
    stored = Transcript.objects.filter(project=mixed, message_count__gt=0)
    assert len({orjson.dumps(t.verdicts) for t in stored}) > 1  # not all alike
    assert shown == {t.relative_path: str(verdicts(t.verdicts)) for t in stored}


def test_day_chart_dates_sessions_by_their_first_timestamp(owner_client, mixed):
    body = owner_client.get(url("scan:project", mixed)).content.decode()
    # The cut-call session began on 2026-01-13 (its first record's timestamp).
    assert "2026-01-13" in body
    session = Transcript.objects.get(relative_path="alpha/cut-call.jsonl")
    assert session.scan_files.get().started.date().isoformat() == "2026-01-13"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"needs_repair": "yes"}, MIXED_NEEDS_REPAIR),
        ({"needs_repair": "no"}, {"alpha/clean.jsonl", "codex/compaction.jsonl"}),
        ({"rule": "PAIR-3"}, {"alpha/stray-result.jsonl"}),
        ({"format": "codex"}, {"codex/escalation.jsonl", "codex/compaction.jsonl"}),
        ({"format": "codex", "needs_repair": "yes"}, {"codex/escalation.jsonl"}),
        ({"format": "gemini"}, set()),
    ],
)
def test_sessions_table_filters(owner_client, mixed, query, expected):
    response = owner_client.get(url("scan:project", mixed, **query), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="sessions">')
    assert shown_paths(body) == expected
    if not expected:
        assert "No session matches these filters." in body


def test_sessions_table_sorts_by_file_and_by_messages(owner_client, mixed):
    body = owner_client.get(url("scan:project", mixed, sort="file")).content.decode()
    paths = re.findall(r'class="path">([^<]+)</a>', body)
    assert paths == sorted(paths)
    body = owner_client.get(url("scan:project", mixed, sort="-messages")).content.decode()
    paths = re.findall(r'class="path">([^<]+)</a>', body)
    messages = dict(Transcript.objects.values_list("relative_path", "message_count"))
    assert [messages[p] for p in paths] == sorted(messages.values(), reverse=True)


@pytest.mark.parametrize(
    "query",
    [
        {"needs_repair": "maybe"},
        {"rule": "NOPE-1"},
        {"format": "word"},
        {"sort": "size"},
        {"page": "0"},
        {"page": "x"},
    ],
)
@pytest.mark.parametrize("name", PAGES)
def test_invalid_filters_are_400(owner_client, mixed, name, query):
    response = owner_client.get(url(name, mixed, **query))
    assert response.status_code == 400
    assert "This page cannot use those settings" in response.content.decode()


def test_sessions_table_is_paginated(owner_client, corpus_scan):
    project = Project.objects.get(slug="corpus")
    # Every file, the empty ones too (left out by default, issue 31).
    first = owner_client.get(url("scan:project", project, empty="show")).content.decode()
    second = owner_client.get(url("scan:project", project, empty="show", page="2")).content.decode()
    assert "Page 1 of 2 (52 sessions)" in first
    assert len(shown_paths(first)) == 50 and len(shown_paths(second)) == 2
    assert not shown_paths(first) & shown_paths(second)
    assert "subagent of" in first + second


def test_the_whole_page_counts_its_table_from_the_totals_as_the_table_counts_itself(
    owner_client, corpus_scan
):
    # Unfiltered, the whole page takes the table's count from its totals (sessions less
    # the empty files); the table alone (htmx) counts its rows.
    project = Project.objects.get(slug="corpus")
    assert Transcript.objects.filter(project=project, message_count=0).exists()
    counted = Transcript.objects.filter(project=project).exclude(message_count=0).count()
    for page in ("1", "2"):
        whole = owner_client.get(url("scan:project", project, page=page)).content.decode()
        alone = owner_client.get(url("scan:project", project, page=page), HTTP_HX_REQUEST="true")
        table = alone.content.decode()
        assert f"{counted} sessions." in whole and f"{counted} sessions." in table
        assert shown_paths(table) <= shown_paths(whole)


@pytest.mark.parametrize("name", PAGES)
def test_another_user_gets_404_for_someone_elses_project(other_client, mixed, name):
    assert other_client.get(url(name, mixed)).status_code == 404
    assert other_client.get(url(name, mixed), HTTP_HX_REQUEST="true").status_code == 404


@pytest.mark.parametrize("name", PAGES)
def test_anonymous_visitor_is_sent_to_sign_in(client, mixed, name):
    response = client.get(url(name, mixed))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_project_list_shows_only_the_users_projects(owner_client, other_client, mixed):
    body = owner_client.get(reverse("scan:project_list")).content.decode()
    assert f'href="{reverse("scan:project", args=["mixed"])}"' in body
    assert re.search(
        r'<td class="num">5</td>\s*<td class="num"><span class="bad-text">3</span>', body
    )
    assert "mixed" not in other_client.get(reverse("scan:project_list")).content.decode()


def test_project_list_sends_anonymous_visitors_to_sign_in(client):
    response = client.get(reverse("scan:project_list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_unknown_project_is_404(owner_client, mixed):
    assert owner_client.get(reverse("scan:project", args=["nope"])).status_code == 404


# --- downloads -------------------------------------------------------------


def test_csv_download_is_the_table(owner_client, mixed):
    response = owner_client.get(url("scan:project_csv", mixed, sort="file"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="mixed.csv"' in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [row["file"] for row in rows] == sorted(
        path for path in MIXED if path.startswith(("alpha", "codex"))
    )
    by_path = {row["file"]: row for row in rows}
    assert {p for p, row in by_path.items() if row["needs_repair"] == "yes"} == MIXED_NEEDS_REPAIR
    assert by_path["alpha/cut-call.jsonl"]["PAIR-1"] == "1"
    assert by_path["alpha/stray-result.jsonl"]["PAIR-3"] == "1"
    assert by_path["alpha/cut-call.jsonl"]["date"].startswith("2026-01-13")
    assert by_path["codex/escalation.jsonl"]["timeline"].startswith("http://testserver/t/")


def test_csv_download_takes_the_filters(owner_client, mixed):
    response = owner_client.get(url("scan:project_csv", mixed, needs_repair="yes"))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert {row["file"] for row in rows} == MIXED_NEEDS_REPAIR


def test_csv_cells_that_look_like_formulas_stay_text(owner_client, corpus_scan):
    project = Project.objects.get(slug="corpus")
    response = owner_client.get(url("scan:project_csv", project))
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    # Claude Code folder names start with "-", which a spreadsheet would read as a formula.
    assert all(row["file"].startswith("'-") for row in rows)


def test_zip_download_holds_every_session_repaired_under_its_relative_path(owner_client, mixed):
    response = owner_client.get(url("scan:project_zip", mixed))
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    names = set(archive.namelist())
    assert names == {path for path in MIXED if path.startswith(("alpha", "codex"))}
    for transcript in Transcript.objects.all():
        data = archive.read(transcript.relative_path)
        if transcript.needs_repair:
            assert data != store.read_raw(transcript)
            assert data == repaired_bytes(store.load_transcript(transcript), "source")
        else:
            assert data == store.read_raw(transcript)
    # Each repaired file reads back, in its own shape, as a session needing no more repair.
    for name in MIXED_NEEDS_REPAIR:
        again = diagnose(store.load_bytes(archive.read(name)))
        assert again.format == Transcript.objects.get(relative_path=name).format
        assert not again.needs_repair


def test_zip_download_takes_the_filters(owner_client, mixed):
    response = owner_client.get(url("scan:project_zip", mixed, needs_repair="yes"))
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert set(archive.namelist()) == MIXED_NEEDS_REPAIR


def test_zip_download_of_the_corpus_keeps_the_folder_tree(owner_client, corpus_scan):
    project = Project.objects.get(slug="corpus")
    response = owner_client.get(url("scan:project_zip", project))
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    expected = {
        p.relative_to(PROJECTS).as_posix() for p in PROJECTS.rglob("*.jsonl") if p.stat().st_size
    }
    assert set(archive.namelist()) == expected


@pytest.mark.parametrize(
    "query",
    [{}, {"sort": "-date"}, {"sort": "date"}, {"sort": "file"}, {"sort": "-messages"},
     {"needs_repair": "yes"}, {"needs_repair": "no", "sort": "file"}, {"empty": "show"}],
)  # fmt: skip
def test_a_page_of_sessions_is_the_querysets_own_page_row_for_row(corpus_scan, query):
    from django.core.paginator import Paginator

    from inspector.scan import reports
    from inspector.scan.forms import SessionFilterForm

    project = Project.objects.get(slug="corpus")
    form = SessionFilterForm(query)
    assert form.is_valid()
    sessions = form.apply(reports.sessions_of(project))
    for number in (1, 2, 3, 99):
        plain = Paginator(sessions, 20).get_page(number)
        page = reports.page_of(sessions, number, 20)
        assert (page.number, page.paginator.count) == (plain.number, plain.paginator.count)
        assert [(t.pk, t.date, t.parent_id) for t in page] == [
            (t.pk, t.date, t.parent_id) for t in plain
        ]
        assert all(t.parent is None or t.parent.pk == t.parent_id for t in page)
