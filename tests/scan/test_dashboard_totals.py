"""The dashboard's totals and day chart, added up by the database, are the row-by-row ones.

Run on SQLite and, with ``DATABASE_URL`` set to a PostgreSQL database, on PostgreSQL:
both have their own SQL (``reports._FINDINGS_SQL``). The token totals and the days
come from columns kept from each row's meta on write (``Transcript.fill_columns``).
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from inspector.scan import reports
from inspector.scan.models import ScanFile, ScanJob
from inspector.web.models import Project, Transcript

pytestmark = pytest.mark.django_db

RULES = ["PAIR-1", "PAIR-2", "INT-2", "MSG-1", "ROLE-1", "X-LOCAL"]
FIRSTS = [
    "2026-03-01T10:00:00Z",
    "2026-03-01T23:30:00-05:00",  # the next day in UTC
    "2026-03-02T00:10:00.123456+02:00",  # the day before in UTC
    "2026-04-15T08:00:00",  # no zone: taken as UTC
    "2026-04-20T23:50:00.500",
    "2026-04-21T00:10:00",
    "2026-04-16",
    "2026-02-28T23:59:59.999Z",
    "2026-02-30T10:00:00Z",  # no such day
    "2026-13-01T10:00:00Z",
    "2025-12-31T22:00:00.000000-03:00",
    "2026-03-01T00:00:00.000+15:00",
    "2026-06-01T12:00:00.123456-09:30",
    "2026-03-01T10:00:00+20:00",  # past PostgreSQL's offsets, not Python's
    "2026-03-01 10:00:00Z",
    "2026-03-01T10:00:00.1Z",
    "not a date",  # drawn on the scan's date instead
    "",
    17,
    None,
]
TOKENS = [0, 1, 250, 12_345, 2**40, -5, True, False, 1.5, 2.0, "300", None, [3], {"n": 4}]


def _meta(rng: random.Random, n: int) -> dict[str, object]:
    meta: dict[str, object] = {"session_id": f"s{n}"}
    if rng.random() < 0.3:
        meta["sidechain"] = rng.choice([True, False, "yes"])
    shape = rng.random()
    if shape < 0.1:
        meta["timing"] = rng.choice([[1, 2], "fast", 3])  # not an object
    elif shape < 0.9:
        timing: dict[str, object] = {}
        for key in ("tokens_in", "tokens_out", "cache_read", "cache_write"):
            if rng.random() < 0.8:
                timing[key] = rng.choice(TOKENS)
        if rng.random() < 0.85:
            timing["first"] = rng.choice(FIRSTS)
        meta["timing"] = timing
    if rng.random() < 0.12:
        meta["conversation_list"] = rng.choice(
            [
                [],
                [{"needs_repair": True}],
                [{"needs_repair": False}, {"needs_repair": True}, {"needs_repair": 0}],
                [{"needs_repair": False}] * 4,
                None,
                "three",
            ]
        )
    return meta


def _counts(rng: random.Random) -> dict[str, int]:
    if rng.random() < 0.2:
        return {}
    return {rule: rng.choice([0, 0, 1, 2, 7, 40]) for rule in rng.sample(RULES, rng.randint(1, 4))}


def _fill(owner, project: Project, seed: int, size: int) -> ScanJob:
    """``size`` varied transcripts in ``project``, some scanned (dated) and some not."""
    rng = random.Random(seed)
    job, again = (
        ScanJob.objects.create(owner=owner, project=project, source="folder", label="here")
        for _ in range(2)
    )
    base = datetime(2026, 2, 1, 12, tzinfo=UTC)
    made: list[Transcript] = []
    for n in range(size):
        messages = 0 if rng.random() < 0.15 else rng.randint(1, 400)
        transcript = Transcript.objects.create(
            owner=owner,
            project=project,
            parent=rng.choice(made) if made and rng.random() < 0.2 else None,
            relative_path=f"dir/{seed}-{n}.jsonl",
            file_name=f"{seed}-{n}.jsonl",
            format=rng.choice(["claude_code", "codex", "openai_chat"]),
            size=rng.randint(0, 10_000),
            sha256=f"{seed:08d}{n:056d}",
            message_count=messages,
            counts=_counts(rng),
            needs_repair=rng.random() < 0.4,
            meta=_meta(rng, n),
        )
        created = base + timedelta(days=rng.randint(0, 80), hours=rng.randint(0, 23))
        Transcript.objects.filter(pk=transcript.pk).update(created=created)
        made.append(transcript)
        if rng.random() < 0.7:
            for scan in range(rng.randint(1, 2)):
                started = None if rng.random() < 0.2 else created - timedelta(hours=scan * 30)
                ScanFile.objects.create(
                    job=again if scan else job,
                    project=project,
                    path=f"dir/{seed}-{n}.jsonl",
                    status=ScanFile.Status.UNCHANGED if scan else ScanFile.Status.NEW,
                    transcript=transcript,
                    started=started,
                )
    for n in range(3):
        ScanFile.objects.create(
            job=job,
            project=project,
            path=f"broken-{n}.jsonl",
            status=ScanFile.Status.UNREADABLE,
            started=base + timedelta(days=n * 9),
        )
    return job


@pytest.fixture
def projects(owner, django_user_model):
    big = Project.objects.create(owner=owner, name="big", slug="big")
    other = Project.objects.create(owner=owner, name="other", slug="other")
    stranger = django_user_model.objects.create_user(username="stranger", password="x-pass-123")
    elsewhere = Project.objects.create(owner=stranger, name="big", slug="big")
    jobs = {
        "big": _fill(owner, big, 1, 160),
        "other": _fill(owner, other, 2, 40),
        "elsewhere": _fill(stranger, elsewhere, 3, 30),
    }
    return big, other, jobs


def test_the_databases_totals_are_the_row_by_row_ones(projects):
    big, other, jobs = projects
    for project in (big, other):
        summary = reports.summarize(reports.sessions_of(project))
        assert summary == reports.summarize_rows(reports.sessions_of(project))
    for job in jobs.values():
        transcripts = reports.job_transcripts(job)
        assert reports.summarize(transcripts) == reports.summarize_rows(transcripts)
    # The data is varied enough for every total to count something, and not everything.
    summary = reports.summarize(reports.sessions_of(big))
    assert summary.sessions == 160
    assert 0 < summary.empty < summary.sessions
    assert 0 < summary.needs_repair < summary.sessions
    assert 0 < summary.subagents < summary.sessions and 0 < summary.linked < summary.sessions
    assert summary.conversations != summary.sessions
    assert summary.conversations_needing_repair != summary.needs_repair
    assert 2**40 < summary.tokens_in and summary.tokens_out and summary.cache_read
    assert summary.cache_write
    assert "X-LOCAL" in summary.findings and set(summary.sessions_per_rule) == set(RULES)
    assert any(summary.findings[rule] != summary.sessions_per_rule[rule] for rule in RULES)


def test_the_totals_of_filtered_and_empty_sets_are_the_row_by_row_ones(projects):
    big, _, _ = projects
    sessions = reports.sessions_of(big)
    for subset in (
        sessions.filter(needs_repair=True),
        sessions.filter(message_count=0),
        sessions.filter(counts__has_key="INT-2"),
        sessions.filter(pk__lt=0),
        Transcript.objects.none(),
    ):
        assert reports.summarize(subset) == reports.summarize_rows(subset)
    assert reports.summarize(sessions.filter(pk__lt=0)) == reports.Summary()


def _days_row_by_row(project: Project) -> dict[object, Counter[str]]:
    """The day chart's counts as it had them: every session's date and first timestamp."""
    days: dict[object, Counter[str]] = {}
    rows = (
        reports.sessions_of(project)
        .exclude(message_count=0)
        .values_list("date", "needs_repair", "meta__timing__first")
    )
    for when, needs_repair, first in rows:
        key = "repair" if needs_repair else "clean"
        days.setdefault(reports.session_day(when, first), Counter())[key] += 1
    for started, finished in reports.unreadable_files(project).values_list("started", "finished"):
        at = started or finished
        if at is not None:
            days.setdefault(timezone.localdate(at), Counter())["unreadable"] += 1
    return days


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/St_Johns", "Pacific/Kiritimati"])
def test_the_day_chart_counts_each_day_as_row_by_row(projects, zone):
    big, other, _ = projects
    for project in (big, other):
        with timezone.override(zone):
            chart = reports.day_chart(project)
            expected = _days_row_by_row(project)
        assert chart is not None
        drawn = {
            bar["day"]: Counter(
                {key: bar[key] for key in ("repair", "clean", "unreadable") if bar[key]}
            )
            for bar in chart["bars"]
        }
        assert drawn == {day: n for day, n in expected.items() if day >= chart["first"]}
    # Some sessions are drawn by their own timestamps, some by their scans or uploads.
    expected = _days_row_by_row(big)
    assert datetime(2026, 3, 2).date() in expected  # from 2026-03-01T23:30:00-05:00
    assert len(expected) > 10
    # Sessions are dated by their column in SQL, but those with no timestamp or odd ones
    # in Python.
    days: dict[object, Counter[str]] = {}
    sessions = Transcript.objects.filter(project=big).exclude(message_count=0)
    left = reports._days_of_columns(sessions, days)
    assert 0 < left.count() < sessions.count() and days


def test_this_run_uses_the_databases_sql():
    assert connection.vendor in reports._FINDINGS_SQL
