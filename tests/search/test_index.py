"""The project search on the database the suite runs on: SQLite's FTS5 by default,
PostgreSQL's full-text search with ``DATABASE_URL=postgres://...``. Every test here
holds for both backends; expected rows are found in the diagnosis, not written down.
"""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector.search import fulltext
from inspector.search.models import SearchIndexed, SearchRow
from tests.search.conftest import DEPLOY, REFUND
from tests.web.conftest import BROKEN_LONG, XSS_CANONICAL, XSS_TEXT, assistant, canonical, user

pytestmark = pytest.mark.django_db


def rows_of(transcript):
    from inspector.web import store

    return list(store.get_diagnosis(transcript).rows)


def holding(transcript, *words):
    """Keys of the transcript's rows whose indexed text holds every word (whole, any case)."""
    found = []
    for row in rows_of(transcript):
        text = set(fulltext.WORD.findall(fulltext.row_text(row).lower()))
        if all(word in text for word in words):
            found.append(row["key"])
    return found


def words_in(row):
    return fulltext.WORD.findall(fulltext.row_text(row).lower())


def holding_phrase(transcript, *words):
    """Keys of the rows whose indexed text holds these words one after another."""
    n = len(words)
    return [
        row["key"]
        for row in rows_of(transcript)
        if any(tuple(w[i : i + n]) == words for w in [words_in(row)] for i in range(len(w)))
    ]


def found(project, query):
    results = fulltext.search(project, query)
    return [(hit.session.pk, hit.key) for hit in results]


def test_the_backend_is_the_databases_own():
    assert fulltext.backend() is fulltext.BACKENDS[connection.vendor]


def test_a_word_finds_its_rows_in_every_session_of_the_project_and_nowhere_else(
    store_in, project, owner, other_user
):
    from inspector.web.store import project_for

    deploy = store_in(DEPLOY, "deploy.json", path="a/deploy.json")
    refund = store_in(REFUND, "refund.json", path="b/refund.json")
    elsewhere = store_in(
        canonical(user("billing elsewhere")), "x.json", project_for(owner, "Other")
    )
    theirs = store_in(
        canonical(user("billing of mallory")),
        "m.json",
        project_for(other_user, "Payments"),
        other_user,
    )
    expected = [(deploy.pk, key) for key in holding(deploy, "billing")]
    assert len(expected) >= 2 and not holding(refund, "billing")
    assert found(project, "billing") == expected
    results = fulltext.search(project, "billing")
    assert results.count() == len(expected) and results.sessions == 1
    assert elsewhere.pk not in {pk for pk, _ in found(project_for(owner, "Other"), "refund")}
    assert found(project_for(other_user, "Payments"), "billing") == [
        (theirs.pk, key) for key in holding(theirs, "billing")
    ]
    # Across sessions, by session name, then in row order.
    both = found(project, "the")
    assert both == [(deploy.pk, k) for k in holding(deploy, "the")] + [
        (refund.pk, k) for k in holding(refund, "the")
    ]


def test_every_word_must_be_in_the_row_any_case_and_a_phrase_in_order(store_in, project):
    deploy = store_in(DEPLOY, "deploy.json")
    assert found(project, "BILLING staging") == [
        (deploy.pk, k) for k in holding(deploy, "billing", "staging")
    ]
    assert found(project, "billing nowhere-said") == []
    phrase = found(project, '"rolled out"')
    assert phrase and phrase == [(deploy.pk, k) for k in holding_phrase(deploy, "rolled", "out")]
    assert found(project, '"out rolled"') == []
    # Both words in one row, apart: the words match, the phrase does not.
    assert holding(deploy, "billing", "done") and not holding_phrase(deploy, "billing", "done")
    assert found(project, "billing done") == [
        (deploy.pk, k) for k in holding(deploy, "billing", "done")
    ]
    assert found(project, '"billing done"') == []


def test_a_word_finds_longer_words_it_begins_a_quoted_word_only_itself(store_in, project):
    deploy = store_in(DEPLOY, "deploy.json")
    prefixed = {
        row["key"]
        for row in rows_of(deploy)
        if any(word.startswith("deploy") for word in words_in(row))
    }
    assert {key for _, key in found(project, "deploy")} == prefixed
    assert {key for _, key in found(project, '"deploy"')} == set(holding(deploy, "deploy"))
    assert set(holding(deploy, "deploy")) < prefixed  # "deployment" is only a prefix match


def test_punctuated_words_are_found_as_the_text_writes_them(store_in, project):
    refund = store_in(REFUND, "refund.json")
    # In the Read call's arguments: "src/payments/views.py".
    keys = [k for _, k in found(project, "views.py")]
    assert keys and keys == [k for k in holding(refund, "views", "py")]
    assert [k for _, k in found(project, "payments/views")] == keys
    assert found(project, "TimeoutError('gateway')") == [
        (refund.pk, k) for k in holding(refund, "timeouterror", "gateway")
    ]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        '"unclosed',
        "*",
        "a*",
        "NEAR(a b)",
        "a AND",
        "OR",
        "NOT x",
        "-x",
        "col:val",
        "^x",
        "(",
        ")",
        "a)",
        "{a b}",
        "x:*",
        "'",
        "'a' & 'b'",
        "!x",
        "a <-> b",
        "\\",
        "%",
        "_",
        "a\x00b",
        "\x02x\x03",
        "∑ ünïcödé 漢字",
        "🙂",
        "1.5e10",
        "---",
        "x" * 200,
    ],
)
def test_no_query_is_an_error(store_in, project, query):
    store_in(DEPLOY, "deploy.json")
    results = fulltext.search(project, query)
    assert results.count() == len(list(results))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=60))
def test_no_typed_text_is_an_error_and_its_count_is_its_rows(store_in, project, query):
    if not SearchIndexed.objects.exists():
        store_in(DEPLOY, "deploy.json")
    results = fulltext.search(project, query)
    hits = list(results)
    assert results.count() == len(hits)
    assert all(hit.snippet.count("<mark>") == hit.snippet.count("</mark>") for hit in hits)


def test_each_hit_links_to_its_row_on_its_page_of_the_timeline(store_in, project, owner_client):
    from inspector.diagnosis.select import PAGE_SIZE

    long = store_in(BROKEN_LONG, "long.json")
    rows = rows_of(long)
    want = [(n, row) for n, row in enumerate(rows) if "step 250" in (row.get("text") or "")]
    assert len(want) == 1
    position, row = want[0]
    assert position >= 2 * PAGE_SIZE  # on page 3 or later: the link must say which
    [hit] = list(fulltext.search(project, '"step 250"'))
    assert (hit.key, hit.position, hit.page) == (row["key"], position, position // PAGE_SIZE + 1)
    assert hit.href == f"/t/{long.public_id}/?page={hit.page}&q=step+250#{row['key']}"
    page = owner_client.get(hit.href.split("#")[0])
    assert page.status_code == 200
    html = page.content.decode()
    start = html.index(f'id="{row["key"]}"')
    assert "step 250" in html[start : start + 3000]


def test_a_snippet_marks_the_match_and_escapes_the_transcripts_markup(store_in, project):
    store_in(XSS_CANONICAL, "xss.json")
    hits = list(fulltext.search(project, "onerror"))
    assert hits
    for hit in hits:
        assert "<script" not in hit.snippet and "<img" not in hit.snippet
        assert "&lt;script&gt;" in hit.snippet or "&lt;img" in hit.snippet
        marks = hit.snippet.split("<mark>")[1:]
        assert marks and all(m.split("</mark>")[0].lower() == "onerror" for m in marks)
    assert XSS_TEXT not in "".join(hit.snippet for hit in hits)


def test_secrets_are_not_in_the_index_and_not_found(store_in, project):
    key = "sk-ant-api03-" + "Zq7wX2pL9m" * 8
    transcript = store_in(
        canonical(user(f"use ANTHROPIC_API_KEY={key} for billing"), assistant(content="ok")),
        "k.json",
    )
    bodies = list(SearchRow.objects.filter(transcript=transcript).values_list("body", flat=True))
    assert bodies and not any(key in body or key[13:33] in body for body in bodies)
    assert found(project, key) == [] and found(project, key[13:33]) == []
    [hit] = list(fulltext.search(project, "billing"))
    assert key not in hit.snippet and "masked" in hit.snippet
    assert found(project, "masked anthropic") == [(transcript.pk, hit.key)]


def _fts_matches(word):
    """Rows the SQLite FTS5 table itself matches, integrity checked first (SQLite only)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO search_searchrow_fts(search_searchrow_fts) VALUES ('integrity-check')"
        )
        cursor.execute(
            "SELECT count(*) FROM search_searchrow_fts WHERE search_searchrow_fts MATCH %s", [word]
        )
        return cursor.fetchone()[0]


def test_deleting_a_transcript_removes_its_entries(store_in, project):
    deploy = store_in(DEPLOY, "deploy.json")
    refund = store_in(REFUND, "refund.json")
    assert found(project, "billing") and found(project, "gateway")
    if connection.vendor == "sqlite":
        assert _fts_matches("billing") > 0
    deploy.delete()
    assert not SearchRow.objects.filter(transcript=deploy.pk).exists()
    assert not SearchIndexed.objects.filter(transcript=deploy.pk).exists()
    assert found(project, "billing") == []
    assert found(project, "gateway") == [(refund.pk, k) for k in holding(refund, "gateway")]
    if connection.vendor == "sqlite":
        assert _fts_matches("billing") == 0 and _fts_matches("gateway") > 0
    # A queryset delete (a scan replacing a path, an account deleted) does the same.
    type(refund).objects.filter(pk=refund.pk).delete()
    assert SearchRow.objects.count() == 0 and found(project, "gateway") == []


def test_indexing_again_replaces_the_entries(store_in, project):
    deploy = store_in(DEPLOY, "deploy.json")
    before = list(
        SearchRow.objects.filter(transcript=deploy).values_list("key", "body").order_by("position")
    )
    assert fulltext.index_stored(deploy) == len(before)
    after = list(
        SearchRow.objects.filter(transcript=deploy).values_list("key", "body").order_by("position")
    )
    assert after == before
    assert found(project, "billing") == [(deploy.pk, k) for k in holding(deploy, "billing")]


def test_rows_are_read_as_they_come_and_written_a_batch_at_a_time(store_in, project, monkeypatch):
    transcript = store_in(DEPLOY, "deploy.json")
    monkeypatch.setattr(fulltext, "BATCH_ROWS", 7)
    chosen = fulltext.backend()
    produced = 0
    written: list[int] = []
    held: list[int] = []
    insert = chosen.insert

    def counting_insert(cursor, entries):
        written.append(len(entries))
        held.append(produced - sum(written[:-1]))  # rows read but not yet written before this batch
        insert(cursor, entries)

    monkeypatch.setattr(chosen, "insert", counting_insert)

    def rows():
        nonlocal produced
        for n in range(100):
            produced += 1
            yield {"key": f"r{n}", "role": "user", "text": f"line {n} of billing"}

    assert fulltext.index_rows(transcript, rows(), "test") == 100
    assert written == [7] * 14 + [2]
    assert max(held) <= 7
    assert fulltext.search(project, "billing").count() == 100


def test_a_batch_also_ends_at_its_characters(store_in, monkeypatch):
    transcript = store_in(DEPLOY, "deploy.json")
    monkeypatch.setattr(fulltext, "BATCH_CHARS", 1000)
    chosen = fulltext.backend()
    sizes: list[int] = []
    insert = chosen.insert
    monkeypatch.setattr(
        chosen,
        "insert",
        lambda cursor, entries: (
            sizes.append(sum(len(e[4]) for e in entries)),
            insert(cursor, entries),
        ),
    )
    rows = ({"key": f"r{n}", "role": "tool", "text": "y" * 300} for n in range(20))
    fulltext.index_rows(transcript, rows, "test")
    assert len(sizes) > 1 and all(size < 1000 + 300 for size in sizes)


def test_a_failed_index_never_fails_the_upload_and_the_next_search_indexes_it(
    store_in, project, monkeypatch
):
    chosen = fulltext.backend()

    def fail(cursor, entries):
        raise DatabaseError("disk full")

    monkeypatch.setattr(chosen, "insert", fail)
    deploy = store_in(DEPLOY, "deploy.json")
    assert deploy.pk and list(fulltext.stale(project)) == [deploy]
    monkeypatch.undo()
    assert fulltext.catch_up(project, 5.0) == 0
    assert found(project, "billing") == [(deploy.pk, k) for k in holding(deploy, "billing")]


def test_transcripts_of_another_engine_version_are_indexed_again(store_in, project):
    deploy = store_in(DEPLOY, "deploy.json")
    refund = store_in(REFUND, "refund.json")
    assert list(fulltext.stale(project)) == []
    SearchIndexed.objects.filter(transcript=deploy).update(engine_version="0-old")
    SearchIndexed.objects.filter(transcript=refund).delete()
    SearchRow.objects.filter(transcript=refund).delete()
    assert set(fulltext.stale(project)) == {deploy, refund}
    assert found(project, "gateway") == []
    # No time at all: nothing indexed, and both still to do.
    assert fulltext.catch_up(project, 0.0) == 2
    assert fulltext.catch_up(project, 5.0) == 0
    assert found(project, "gateway") == [(refund.pk, k) for k in holding(refund, "gateway")]


def test_the_command_indexes_what_is_not_indexed(store_in, project):
    from io import StringIO

    from django.core.management import call_command

    deploy = store_in(DEPLOY, "deploy.json")
    SearchIndexed.objects.all().delete()
    SearchRow.objects.all().delete()
    out = StringIO()
    call_command("search_index", stdout=out)
    assert "Indexed 1 transcript(s)" in out.getvalue()
    assert found(project, "billing") == [(deploy.pk, k) for k in holding(deploy, "billing")]
    out = StringIO()
    call_command("search_index", "--project", project.slug, stdout=out)
    assert "Indexed 0 transcript(s)" in out.getvalue()


def test_pages_of_hits_follow_on_without_overlap(store_in, project):
    long = store_in(BROKEN_LONG, "long.json")
    everything = found(project, "step")
    assert len(everything) == len(holding(long, "step")) > 100
    results = fulltext.search(project, "step")
    first, second = results[0:50], results[50:100]
    assert [(h.session.pk, h.key) for h in first + second] == everything[:100]
    assert results[len(everything) : len(everything) + 50] == []


def test_an_upload_queues_its_indexing_for_a_worker_instead_of_doing_it(settings, store_in):
    # Indexing inline doubled the time from upload to timeline (bench/bench_web.py): the
    # upload queues it, below a scan's files, and a worker's run of the task indexes it.
    from django_tasks_db.models import DBTaskResult

    from inspector.search.models import SearchRow
    from inspector.search.tasks import PRIORITY, index_transcript

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    transcript = store_in(
        canonical(user("where is the invoice"), assistant(content="here")), "q.json"
    )
    assert not SearchRow.objects.filter(transcript=transcript).exists()
    queued = DBTaskResult.objects.get(task_path="inspector.search.tasks.index_transcript")
    assert queued.args_kwargs["args"] == [transcript.pk]
    assert queued.priority == PRIORITY < 0
    assert index_transcript.call(transcript.pk) == "2 rows"
    assert SearchRow.objects.filter(transcript=transcript).count() == 2


def test_a_queue_that_fails_leaves_the_upload_stored_and_logs_why(store_in, monkeypatch, caplog):
    # The web floor only sends ``events.transcripts_stored``; search's receiver (wired in
    # SearchConfig.ready) queues the indexing, and a failure to queue fails nothing.
    from inspector.search import signals
    from inspector.web.models import Transcript

    class Refusing:
        def enqueue(self, pk: int) -> None:
            raise DatabaseError("queue table is locked")

    monkeypatch.setattr(signals, "index_transcript", Refusing())
    with caplog.at_level("ERROR", logger="inspector.search.signals"):
        transcript = store_in(
            canonical(user("where is the refund"), assistant(content="ok")), "r.json"
        )
    assert Transcript.objects.filter(pk=transcript.pk).exists()
    assert f"queueing transcript {transcript.public_id} for search failed" in caplog.text
    assert not SearchRow.objects.filter(transcript=transcript).exists()


def test_a_search_looks_past_the_sessions_it_found_indexed_and_still_finds_new_ones(
    store_in, project
):
    from django.core.cache import cache

    deploy = store_in(DEPLOY, "deploy.json")
    assert fulltext.catch_up(project, 5.0) == 0
    assert cache.get(fulltext._checked_key(project)) >= deploy.pk
    # Stored later and not indexed (its queued task lost): the next search indexes it.
    refund = store_in(REFUND, "refund.json")
    SearchIndexed.objects.filter(transcript=refund).delete()
    SearchRow.objects.filter(transcript=refund).delete()
    assert list(fulltext.stale(project)) == [refund]
    assert fulltext.catch_up(project, 0.0) == 1  # no time: still to do, and said so
    assert fulltext.catch_up(project, 5.0) == 0
    assert found(project, "gateway") == [(refund.pk, k) for k in holding(refund, "gateway")]
    assert list(fulltext.stale(project)) == []


def test_a_transcript_that_fails_to_index_is_tried_once_a_search_and_counted_as_left(
    store_in, project, monkeypatch
):
    deploy = store_in(DEPLOY, "deploy.json")
    SearchIndexed.objects.filter(transcript=deploy).delete()
    tries = []

    def fail(transcript):
        tries.append(transcript.pk)
        raise OSError("storage unreachable")

    monkeypatch.setattr(fulltext, "index_stored", fail)
    assert fulltext.catch_up(project, 1.0) == 1 and tries == [deploy.pk]
    monkeypatch.undo()
    assert fulltext.catch_up(project, 5.0) == 0 and list(fulltext.stale(project)) == []
