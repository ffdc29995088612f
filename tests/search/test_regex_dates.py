"""Issue 31: the project search's regular expressions (RE2: linear time, clear errors) and
date filters (the dashboard's session dates), on SQLite and, with ``DATABASE_URL``, PostgreSQL."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from html import unescape

import pytest

from inspector.search import fulltext, pattern
from tests.search.conftest import DEPLOY, REFUND
from tests.search.test_pages import hits_of, url
from tests.web.conftest import canonical, user

pytestmark = pytest.mark.django_db


def dated(transcript, day: str):
    from inspector.web.models import Transcript

    moment = datetime.fromisoformat(day).replace(hour=12, tzinfo=UTC)
    Transcript.objects.filter(pk=transcript.pk).update(created=moment)


def marks(response) -> list[str]:
    return [unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", response.content.decode())]


# --- regular expressions -----------------------------------------------------


def test_a_regex_finds_rows_words_cannot_and_marks_what_it_matched(owner_client, store_in, project):
    store_in(REFUND, "refund.json", path="support/refund.json")
    store_in(DEPLOY, "deploy.json", path="ops/deploy.json")
    # "order 4411": no word search finds a number by a pattern.
    response = owner_client.get(url(project, q=r"order \d{4}", regex="on"))
    assert response.status_code == 200
    hits = hits_of(response)
    assert [(name, role) for _, name, role, _ in hits] == [("support/refund.json", "user")]
    assert marks(response) == ["order 4411"]
    assert "1 row in 1 session matches /order \\d{4}/" in unescape(response.content.decode())


def test_a_regex_is_matched_in_any_case_inside_words(owner_client, store_in, project):
    store_in(DEPLOY, "deploy.json")
    response = owner_client.get(url(project, q="PLOY(MENT|/)", regex="on"))
    found = {m.lower() for m in marks(response)}
    assert found == {"ployment", "ploy/"}
    # Words alone find no row for the inside of a word.
    assert fulltext.search(project, "ployment").count() == 0


def test_a_hit_opens_the_timeline_with_what_matched_carried_into_its_search(
    owner_client, store_in, project
):
    refund = store_in(REFUND, "refund.json")
    [(href, *_)] = hits_of(owner_client.get(url(project, q=r"order \d+", regex="on")))
    path, key = unescape(href).split("#")
    assert path.startswith(f"/t/{refund.public_id}/?") and "q=order+4411" in path
    html = owner_client.get(path).content.decode()
    assert "order 4411" in html[html.index(f'id="{key}"') :][:3000]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("(unclosed", "missing )"),
        (r"(a)\1", "invalid escape sequence"),
        ("(?=ahead)x", "invalid perl operator"),
        ("[z-a]", "invalid character class range"),
        ("a{1001}", "invalid repetition size"),
    ],
)
def test_a_bad_pattern_says_why_and_finds_nothing(owner_client, store_in, project, bad, reason):
    store_in(DEPLOY, "deploy.json")
    response = owner_client.get(url(project, q=bad, regex="on"))
    html = unescape(response.content.decode())
    assert response.status_code == 400
    assert "Not a pattern this search can use:" in html and reason in html
    assert not hits_of(response)
    # The box keeps the pattern and the choice, to be corrected.
    assert f'value="{bad}"' in html and 'name="regex" value="on" checked' in html


def test_the_same_characters_without_regex_are_words(owner_client, store_in, project):
    store_in(REFUND, "refund.json")
    response = owner_client.get(url(project, q="(unclosed"))
    assert response.status_code == 200 and b"Not a pattern" not in response.content


def test_a_catastrophic_pattern_is_read_by_re2_and_ends(store_in, project):
    """``(a+)+$`` against a long run of a's that does not end the text backtracks for
    ever in a backtracking engine (Python's ``re``: about 2**100 steps here); RE2 reads
    the text once, so this search ends, finding nothing, like any other."""
    store_in(canonical(user("a" * 100 + "!"), user("b " + "a" * 100 + "!")), "aaa.json")
    chosen = fulltext.backend()
    evil = pattern.PatternResults(project, "(a+)+$", chosen)
    assert type(evil.pattern).__module__.startswith("re2")
    assert evil.count() == 0 and not evil.cut
    assert pattern.PatternResults(project, "(a+)+!$", chosen).count() == 2


def test_a_search_cut_short_says_so(owner_client, store_in, project, monkeypatch):
    many = canonical(*[user(f"ticket {n} is open") for n in range(30)])
    store_in(many, "tickets.json")
    monkeypatch.setattr(pattern, "MAX_HITS", 5)
    response = owner_client.get(url(project, q=r"ticket \d+", regex="on"))
    assert len(hits_of(response)) == 5
    assert b"The search stopped after the first 5 rows it found" in response.content


def test_words_the_pattern_needs_let_the_index_choose_the_rows():
    words = lambda text: [term.words for term in pattern.required_words(text)]  # noqa: E731
    assert words(r"^refund \d+ failed") == [("refund",), ("failed",)]
    assert words(r"\bgateway timed\s+out") == [("gateway",), ("timed",), ("out",)]
    # Inside a word, under an alternative, optional or in a group: nothing can be told.
    assert words("ployment") == []
    assert words("a|b") == [] and words("x (gateway|db) y") == [("y",)]
    assert words(" time?out now") == [("tim",), ("now",)]  # the "e" may be absent
    assert words(r"x{2,3}foo") == []
    assert words("(?i)foo bar") == []


def test_the_index_prefilter_finds_what_the_full_scan_finds(store_in, project):
    store_in(REFUND, "refund.json")
    store_in(DEPLOY, "deploy.json")
    chosen = fulltext.backend()
    for text in [r"\bgateway timed out", r"^why did", r" billing\b", r"\brefund\b"]:
        filtered = pattern.PatternResults(project, text, chosen)
        assert filtered.terms, text
        unfiltered = pattern.PatternResults(project, text, chosen)
        unfiltered.terms = []
        assert [(h.key, h.session.pk) for h in filtered] == [
            (h.key, h.session.pk) for h in unfiltered
        ], text
        assert filtered.count() > 0, text


def test_postgresql_tests_only_what_it_reads_as_re2_does():
    assert pattern.postgres_safe(r"order \d+\.\s*done")
    assert not pattern.postgres_safe(r"\bword\b")  # a backspace in PostgreSQL
    assert not pattern.postgres_safe("(?s)a.b")


# --- dates -------------------------------------------------------------------


@pytest.fixture
def two_days(store_in):
    deploy = store_in(DEPLOY, "deploy.json")
    refund = store_in(REFUND, "refund.json")
    dated(deploy, "2026-03-01")
    dated(refund, "2026-03-20")
    return deploy, refund


@pytest.mark.parametrize("regex", ["", "on"])
def test_dates_choose_the_sessions_searched(owner_client, project, two_days, regex):
    query = "the" if not regex else r"\bthe\b"
    every = {
        name for _, name, _, _ in hits_of(owner_client.get(url(project, q=query, regex=regex)))
    }
    assert every == {"deploy.json", "refund.json"}
    early = owner_client.get(url(project, q=query, regex=regex, until="2026-03-10"))
    late = owner_client.get(url(project, q=query, regex=regex, since="2026-03-10"))
    both_ends = owner_client.get(
        url(project, q=query, regex=regex, since="2026-03-20", until="2026-03-20")
    )
    assert {n for _, n, _, _ in hits_of(early)} == {"deploy.json"}
    assert {n for _, n, _, _ in hits_of(late)} == {"refund.json"}
    assert {n for _, n, _, _ in hits_of(both_ends)} == {"refund.json"}, "both days are in"
    assert "in the sessions up to 2026-03-10" in early.content.decode()
    assert "in the sessions from 2026-03-10 on" in late.content.decode()


def test_a_day_with_no_session_finds_nothing_and_says_so(owner_client, project, two_days):
    response = owner_client.get(url(project, q="billing", since="2026-04-01"))
    html = response.content.decode()
    assert not hits_of(response)
    assert "No row of these days' sessions holds these words." in html


def test_from_after_to_is_a_bad_request(owner_client, project):
    response = owner_client.get(url(project, q="x", since="2026-03-02", until="2026-03-01"))
    assert response.status_code == 400
    assert "is after" in unescape(response.content.decode())


def test_the_date_of_a_scanned_session_is_when_it_began(owner_client, project, store_in):
    """The dashboard's date: a scanned file's session start, not the day it was stored."""
    from inspector.scan.models import ScanFile, ScanJob

    deploy = store_in(DEPLOY, "deploy.json")
    job = ScanJob.objects.create(
        owner=project.owner, project=project, source=ScanJob.Source.FOLDER, label="/w"
    )
    ScanFile.objects.create(
        job=job,
        project=project,
        path="deploy.json",
        transcript=deploy,
        status=ScanFile.Status.NEW,
        started=datetime(2025, 7, 4, 9, tzinfo=UTC),
    )
    assert hits_of(owner_client.get(url(project, q="billing", until="2025-07-04")))
    assert not hits_of(owner_client.get(url(project, q="billing", since="2025-07-05")))


def test_postgresql_tests_the_pattern_itself_and_sqlite_reads_it_here(store_in, project):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    store_in(REFUND, "refund.json")
    chosen = fulltext.backend()
    for text, in_database in ((r"order \d+", True), (r"\border\b", False)):
        with CaptureQueriesContext(connection) as queries:
            assert pattern.PatternResults(project, text, chosen).count() > 0, text
        used = any("~*" in query["sql"] for query in queries.captured_queries)
        assert used == (in_database and connection.vendor == "postgresql"), text
