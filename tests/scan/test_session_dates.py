"""The dashboard's date, order and day filter come from columns kept on write, and agree
with what the scan files and the rows' meta say, row by row.

``Transcript.scan_started`` (the latest scan file's start) is kept by every write of a
scan file; ``subagent`` and the conversation counts from ``meta`` by every save (the
totals themselves are checked against ``summarize_rows`` in test_dashboard_totals).
Run on SQLite and, with ``DATABASE_URL`` set, on PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pytest
from django.db.models import OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from inspector.scan import reports
from inspector.scan.forms import SORTS, SessionFilterForm
from inspector.scan.models import ScanFile
from inspector.web.models import Project, Transcript
from tests.scan.conftest import PROJECTS
from tests.scan.test_dashboard_totals import _fill

pytestmark = pytest.mark.django_db


def _reference_dates(project: Project) -> dict[int, datetime]:
    """Each session's date as the dashboard read it before the column: a subquery per row."""
    latest = (
        ScanFile.objects.filter(transcript=OuterRef("pk"), started__isnull=False)
        .order_by("-id")
        .values("started")[:1]
    )
    rows = Transcript.objects.filter(project=project).annotate(
        old=Coalesce(Subquery(latest), "created")
    )
    return dict(rows.values_list("pk", "old"))


@pytest.fixture
def big(owner) -> Project:
    project = Project.objects.create(owner=owner, name="big", slug="big")
    _fill(owner, project, 5, 120)
    return project


def _reference_order(project: Project, sort: str) -> list[int]:
    dates = _reference_dates(project)
    rows = {t.pk: t for t in Transcript.objects.filter(project=project)}
    keys = SORTS[sort][1]

    def value(pk: int, field: str) -> object:
        name = field.lstrip("-")
        row = rows[pk]
        found = {
            "date": dates[pk],
            "id": pk,
            "needs_repair": row.needs_repair,
            "problems": row.problems,
            "message_count": row.message_count,
            "relative_path": row.relative_path,
            "file_name": row.file_name,
        }[name]
        return found

    ordered = list(rows)
    for field in reversed(keys):  # a stable sort per key, the last key first
        ordered.sort(key=lambda pk, field=field: value(pk, field), reverse=field.startswith("-"))
    return ordered


def test_every_sessions_date_is_its_latest_scans_start_else_its_upload(big):
    assert dict(reports.sessions_of(big).values_list("pk", "date")) == _reference_dates(big)
    # Some sessions are dated by a scan, some (no scan file with a start) by their upload.
    scanned = Transcript.objects.filter(project=big, scan_started__isnull=False).count()
    assert 0 < scanned < Transcript.objects.filter(project=big).count()


@pytest.mark.parametrize("sort", list(SORTS))
def test_every_order_of_the_table_is_the_row_by_row_one(big, sort):
    form = SessionFilterForm({"sort": sort})
    assert form.is_valid()
    shown = list(form.apply(reports.sessions_of(big)).values_list("pk", flat=True))
    assert shown == _reference_order(big, sort)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns", "Pacific/Kiritimati"])
def test_the_day_filter_keeps_the_sessions_of_those_days_in_the_current_zone(big, zone):
    with timezone.override(zone):
        dates = _reference_dates(big)
        days = sorted({timezone.localdate(moment) for moment in dates.values()})
        for since, until in [
            (days[3], days[3]),
            (days[0], days[len(days) // 2]),
            (days[-5], None),
            (None, days[4]),
            (date.min, date.max),
            (date(1, 1, 2), date(9999, 12, 30)),
        ]:
            form = SessionFilterForm({"since": since or "", "until": until or ""})
            assert form.is_valid(), form.errors
            shown = set(form.apply(reports.sessions_of(big)).values_list("pk", flat=True))
            expected = {
                pk
                for pk, moment in dates.items()
                if (since is None or timezone.localdate(moment) >= since)
                and (until is None or timezone.localdate(moment) <= until)
            }
            assert shown == expected
            assert expected or since == days[-5]


def test_writing_a_scan_file_keeps_its_transcripts_date(big):
    transcript = Transcript.objects.filter(project=big, scan_started__isnull=True).first()
    assert transcript is not None
    job = ScanFile.objects.filter(project=big).first().job
    early, late = (datetime(2026, 5, d, 9, tzinfo=UTC) for d in (1, 9))
    # The latest file by id counts, whatever its date; a file with no start does not.
    ScanFile.objects.create(job=job, project=big, path="a", transcript=transcript, started=late)
    ScanFile.objects.create(job=job, project=big, path="b", transcript=transcript, started=early)
    ScanFile.objects.create(job=job, project=big, path="c", transcript=transcript, started=None)
    transcript.refresh_from_db()
    assert transcript.scan_started == early
    assert dict(reports.sessions_of(big).values_list("pk", "date")) == _reference_dates(big)


def test_a_scan_dates_its_sessions_by_their_files(run_scan):
    job, _ = run_scan(PROJECTS)
    stored = job.files.filter(transcript__isnull=False)
    assert stored.exists()
    for transcript in Transcript.objects.filter(project=job.project):
        files = stored.filter(transcript=transcript, started__isnull=False).order_by("-id")
        assert transcript.scan_started == (files[0].started if files else None)
    assert Transcript.objects.filter(scan_started__isnull=False).exists()
    # A second scan of the same folder finds them unchanged and dates them again.
    again, _ = run_scan(PROJECTS)
    assert again.files.filter(status=ScanFile.Status.UNCHANGED).exists()
    assert dict(reports.sessions_of(job.project).values_list("pk", "date")) == _reference_dates(
        job.project
    )


def test_saving_a_changed_meta_saves_its_list_columns(owner):
    row = Transcript.objects.create(
        owner=owner, file_name="t", format="x", size=1, sha256="b" * 64, meta={}
    )
    row.meta = {"sidechain": True, "conversation_list": [{"needs_repair": True}] * 3}
    row.save(update_fields=["meta"])
    row.refresh_from_db()
    assert (row.subagent, row.conversations, row.conversations_repair) == (True, 3, 3)


def test_day_starts_are_the_first_moments_of_the_day():
    from inspector.scan.forms import _day_starts

    with timezone.override("America/St_Johns"):
        start = _day_starts(date(2026, 3, 1))
        assert timezone.localdate(start) == date(2026, 3, 1)
        assert timezone.localdate(start - timedelta(microseconds=1)) == date(2026, 2, 28)
        assert timezone.localtime(start).time() == time.min
