"""The tallies PostgreSQL's triggers keep (``web.tally``) are what the transcripts add up to.

After every kind of write the app makes: rows made and changed one by one and by
``.update()``, scans, re-scans that replace a file's bytes, an older version kept
out of its project by a share link, deletes (a parent's too: its subagents come
loose), an upload, a scan killed mid-way and retried, a project deleted, and
writers of one project at once. Each time every project's totals, findings per
rule, day chart and project-list counts from the tallies equal those the
transcripts give (``reports.summarize``, ``summarize_rows``, the day chart's own
row-by-row dating). PostgreSQL only: on SQLite there are no tallies (the pages add
up the transcripts, which ``test_dashboard_totals`` checks).
"""

from __future__ import annotations

import shutil
import threading
from collections import Counter

import orjson
import pytest
from django.db import DatabaseError, connection, connections, transaction
from django.db.models import Count, Q
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from inspector.scan import reports, tasks
from inspector.scan.jobs import folder_job
from inspector.scan.tasks import scan_file, start
from inspector.share.models import ShareLink
from inspector.web import tally
from inspector.web.models import LIST_COLUMNS, META_COLUMNS, Project, Transcript
from inspector.web.store import store_upload
from tests.scan.test_dashboard_totals import _days_row_by_row, _fill
from tests.testdata import read

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the tallies are kept by PostgreSQL's triggers"
    ),
]


def _live_list(owner) -> dict[str, tuple[int, int]]:
    rows = Project.objects.filter(owner=owner).annotate(
        n=Count("transcripts", distinct=True),
        repair=Count("transcripts", filter=Q(transcripts__needs_repair=True), distinct=True),
    )
    return {project.slug: (project.n, project.repair) for project in rows}


def _drawn(project: Project) -> dict[object, Counter[str]]:
    chart = reports.day_chart(project)
    if chart is None:
        return {}
    return {
        bar["day"]: Counter({key: bar[key] for key in reports.DAY_KINDS if bar[key]})
        for bar in chart["bars"]
    }


def assert_tallied() -> int:
    """Every project's figures from the tallies are the transcripts'; how many projects."""
    projects = list(Project.objects.all())
    for project in projects:
        sessions = reports.sessions_of(project)
        summary = reports.project_summary(project)
        assert summary == reports.summarize(sessions), project.slug
        assert summary == reports.summarize_rows(sessions), project.slug
        expected = _days_row_by_row(project)
        drawn = _drawn(project)
        assert drawn == {day: n for day, n in expected.items() if day >= min(drawn, default=day)}
    for owner in {project.owner for project in projects}:
        listed = {p.slug: (p.sessions, p.needing_repair) for p in reports.project_list(owner)}
        assert listed == _live_list(owner)
    # No project's rows outlive it.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM web_projecttally t"
            " WHERE NOT EXISTS (SELECT 1 FROM web_project p WHERE p.id = t.project_id)"
        )
        assert cursor.fetchone()[0] == 0
    return len(projects)


def _rows(project: Project) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM web_projecttally WHERE project_id = %s", [project.pk])
        return int(cursor.fetchone()[0])


@pytest.fixture
def filled(owner, django_user_model):
    big = Project.objects.create(owner=owner, name="big", slug="big")
    stranger = django_user_model.objects.create_user(username="stranger", password="x-pass-123")
    elsewhere = Project.objects.create(owner=stranger, name="big", slug="big")
    _fill(owner, big, 1, 120)
    _fill(stranger, elsewhere, 3, 30)
    return big


def test_rows_made_changed_and_deleted_one_by_one_and_in_bulk(filled, owner):
    big = filled
    assert assert_tallied() == 2
    summary = reports.project_summary(big)
    # The data counts something of everything, so a wrong key would show.
    assert 0 < summary.linked < summary.sessions and 0 < summary.empty
    assert summary.findings and summary.tokens_in and summary.conversations != summary.sessions
    assert any(n == 0 for n in summary.findings.values()) or "X-LOCAL" in summary.findings
    # .update() of what the totals count, and of what they do not.
    Transcript.objects.filter(project=big, pk__lt=big.transcripts.order_by("pk")[40].pk).update(
        needs_repair=True, counts={"PAIR-1": 3, "X-NEW": 0}, message_count=0
    )
    Transcript.objects.filter(project=big).update(engine_version="other")
    assert assert_tallied() == 2
    # save() of a changed meta (the columns kept from it follow).
    row = big.transcripts.filter(message_count__gt=0).first()
    row.meta = {"timing": {"first": "2020-05-05T10:00:00Z", "tokens_in": 77}, "sidechain": True}
    row.save()
    # A parent deleted: its children come loose (SET NULL), a delete of its own.
    parent = big.transcripts.filter(children__isnull=False).first()
    parent.delete()
    # Moved to another project, and out of any.
    other = Project.objects.create(owner=owner, name="other", slug="other")
    Transcript.objects.filter(project=big, message_count__gt=100).update(project=other)
    Transcript.objects.filter(project=big, needs_repair=False).exclude(message_count=0)[
        :1
    ].get().delete()
    first = big.transcripts.order_by("pk").first()
    first.project = None
    first.save()
    assert assert_tallied() == 3
    # A project deleted: its transcripts stay loose, its rows go.
    other.delete()
    assert assert_tallied() == 2
    assert Transcript.objects.filter(project__isnull=True).count() > 1


def test_folded_and_rebuilt_rows_add_up_the_same(filled, monkeypatch):
    big = filled
    for row in big.transcripts.order_by("pk")[:30]:
        row.needs_repair = not row.needs_repair
        row.save()
    before = _rows(big)
    monkeypatch.setattr(tally, "FOLD_AFTER", 5)
    assert assert_tallied() == 2  # reading folds the piled-up rows
    folded = _rows(big)
    assert folded < before
    # Folded, one row per key: a second fold changes nothing.
    assert tally.fold(big.pk)
    assert _rows(big) == folded
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE web_projecttally SET value = value + 1 WHERE project_id = %s", [big.pk]
        )
    assert reports.project_summary(big) != reports.summarize(reports.sessions_of(big))
    tally.rebuild(big.pk)
    assert _rows(big) == folded
    assert assert_tallied() == 2


def test_scans_rescans_retired_versions_deletes_uploads(run_scan, mixed_tree, owner, owner_client):
    run_scan(mixed_tree, project="mixed")
    mixed = Project.objects.get(owner=owner, slug="mixed")
    assert assert_tallied() == 1
    assert reports.project_summary(mixed).sessions > 3
    # A changed file: its older transcript is deleted, the new bytes stored.
    clean = mixed_tree / "alpha" / "clean.jsonl"
    clean.write_bytes(read(mixed_tree / "codex" / "escalation.jsonl") + b"\n")
    # A changed file whose older bytes a share link shows: kept, out of the project.
    shared = Transcript.objects.get(project=mixed, relative_path="alpha/cut-call.jsonl")
    ShareLink.issue(shared, ShareLink.REDACTED, "never")
    shutil.copyfile(
        mixed_tree / "codex" / "compaction.jsonl", mixed_tree / "alpha" / "cut-call.jsonl"
    )
    job, _ = run_scan(mixed_tree, project="mixed")
    assert job.updated >= 1
    shared.refresh_from_db()
    assert shared.project_id is None
    assert assert_tallied() == 1
    # An upload into the project, and a delete through the page.
    store_upload(owner, read(mixed_tree / "alpha" / "stray-result.jsonl") + b"\n", "up.jsonl",
                 project=mixed)  # fmt: skip
    assert assert_tallied() == 1
    gone = Transcript.objects.filter(project=mixed, needs_repair=True).first()
    response = owner_client.post(reverse("delete", args=[gone.public_id]))
    assert response.status_code == 302 and not Transcript.objects.filter(pk=gone.pk).exists()
    assert assert_tallied() == 1
    # The pages show the tallies' figures.
    page = owner_client.get(reverse("scan:project", args=["mixed"]))
    assert page.context["totals"]["summary"] == reports.summarize(reports.sessions_of(mixed))
    listed = owner_client.get(reverse("scan:project_list"))
    assert [(p.slug, p.sessions, p.needing_repair) for p in listed.context["projects"]] == [
        (slug, *counts) for slug, counts in sorted(_live_list(owner).items())
    ]


def test_a_scan_killed_mid_way_and_retried(owner, mixed_tree, monkeypatch):
    project = Project.objects.create(owner=owner, name="killed", slug="killed")
    job, found = folder_job(owner, project, mixed_tree)
    ids = start(job, found, enqueue=False)
    real = tasks._count
    calls = {"n": 0}

    def dies(finished):
        calls["n"] += 1
        if calls["n"] in (2, 4):  # after the transcript's insert, before the commit
            raise DatabaseError("the worker was killed")
        return real(finished)

    monkeypatch.setattr(tasks, "_count", dies)
    failed = 0
    for file_id in ids:
        try:
            scan_file.call(file_id)
        except DatabaseError:
            failed += 1
        assert assert_tallied() == 1
    assert failed == 2
    for file_id in ids:  # the retries
        scan_file.call(file_id)
    job.refresh_from_db()
    assert job.status == job.Status.DONE
    assert assert_tallied() == 1
    assert reports.project_summary(project).sessions == project.transcripts.count() > 3


@pytest.mark.django_db(transaction=True)
def test_writers_of_one_project_at_once_do_not_wait_on_each_other(owner):
    """One writer's open transaction holds nothing another writer of the project needs."""
    project = Project.objects.create(owner=owner, name="busy", slug="busy")
    opened, done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def transcript(n: int, **fields: object) -> Transcript:
        return Transcript.objects.create(
            owner=owner, project=project, file_name=f"{n}.jsonl", relative_path=f"{n}.jsonl",
            format="claude_code", size=10 * n, sha256=f"{n:064d}", message_count=n,
            counts={"PAIR-1": n}, meta={"timing": {"first": "2026-03-01T10:00:00Z"}}, **fields,
        )  # fmt: skip

    def slow() -> None:
        try:
            with transaction.atomic():
                transcript(1)
                opened.set()
                # Still open while the other writer inserts, updates and commits.
                if not done.wait(10):
                    errors.append(AssertionError("the other writer waited"))
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=slow)
    thread.start()
    assert opened.wait(10)
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '3s'")
    with transaction.atomic():
        second = transcript(2, needs_repair=True)
        Transcript.objects.filter(pk=second.pk).update(message_count=5)
    done.set()
    thread.join(20)
    assert not errors
    assert assert_tallied() == 1
    summary = reports.project_summary(project)
    assert (summary.sessions, summary.messages, summary.findings) == (2, 6, {"PAIR-1": 3})


def test_rows_copied_in_count_as_saved_ones(filled):
    """COPY (``bench/bench_scale.py`` builds its database so) fires the same triggers."""
    big = filled
    columns = [
        "public_id", "owner_id", "project_id", "relative_path", "file_name", "format", "size",
        "sha256", "message_count", "counts", "verdicts", "needs_repair", "problems", "meta",
        "engine_version", "created",
        # The columns kept from meta, as save() fills them (COPY saves nothing).
        *META_COLUMNS, *LIST_COLUMNS,
    ]  # fmt: skip
    rows = list(Transcript.objects.filter(project=big).values_list(*columns)[:25])
    assert rows
    with connection.cursor() as cursor:
        raw = cursor.cursor
        with raw.copy(f"COPY web_transcript ({', '.join(columns)}) FROM STDIN") as copy:
            for n, row in enumerate(rows):
                values = list(row)
                values[0], values[7] = f"copied-{n}", f"{n:064x}"[::-1]
                for index in (9, 10, 13):  # JSON as its text
                    values[index] = orjson.dumps(values[index]).decode()
                copy.write_row(values)
    assert big.transcripts.count() == 120 + len(rows)
    assert assert_tallied() == 2


def test_a_project_whose_sessions_are_all_dated_is_charted_from_its_tallies_alone(owner):
    # The sessions with messages the tallies date are all the project's: none is read to
    # be dated. Once one has no first timestamp, it is read, and drawn on its upload's day.
    project = Project.objects.create(owner=owner, name="dated", slug="dated")

    def add(n: int, messages: int, meta: dict) -> None:
        Transcript.objects.create(
            owner=owner, project=project, file_name=f"{n}.jsonl", format="codex", size=1,
            sha256=f"{n:064x}", message_count=messages, needs_repair=n % 2 == 0, meta=meta,
        )  # fmt: skip

    for n in range(4):
        add(n, 3, {"timing": {"first": f"2026-03-0{n + 1}T10:00:00Z"}})
    add(4, 0, {})  # an empty file: not charted, dated or not
    with CaptureQueriesContext(connection) as asked:
        chart = reports.day_chart(project, reports.project_tallies(project), [])
    assert len(asked.captured_queries) == 1  # the tallies
    assert _drawn(project) == _days_row_by_row(project) and len(chart["bars"]) == 4
    add(5, 3, {})
    with CaptureQueriesContext(connection) as asked:
        reports.day_chart(project, reports.project_tallies(project), [])
    assert len(asked.captured_queries) == 2  # and the sessions left to date
    assert _drawn(project) == _days_row_by_row(project)
    assert sum(n["clean"] + n["repair"] for n in _drawn(project).values()) == 5
