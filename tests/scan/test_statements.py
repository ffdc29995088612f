"""How many SQL statements the scan of one file runs: pinned, so the count cannot grow back.

A real session is small (140 KB on average in the shared corpus), so the fixed cost
of each file (its statements, transactions and task) is most of a scan's time
(README, "A scan of real sessions"). Counted through ``scan_file`` as a worker runs it,
without the task queue's own statements; the savepoints of nested atomic blocks are
left out (a worker's outermost one is a transaction, which is not a statement here).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inspector.scan.jobs import folder_job
from inspector.scan.models import ScanFile
from inspector.scan.tasks import scan_file, scan_files, start
from inspector.web.store import project_for

# A new transcript: the file's row; the job's current file; the owner's transcripts of
# these bytes (this project's and a twin to copy, one query); the insert; an older
# transcript at the path; the file's outcome; the transcript's scan_started; the job's
# counters; then search: the transcript locked, its old entries deleted, its rows in one
# executemany (and on SQLite the FTS5 table in one INSERT ... SELECT), the indexed mark
# in one upsert. (Before 2026-12-03: 17 on SQLite, and 5 savepoints inside the two
# transactions.)
NEW = 12 if connection.vendor == "postgresql" else 13
# An unreadable file: its row, the current file, (the bytes' lookup,) outcome, counters.
EMPTY = 4
GARBAGE = 5
# The same bytes at the same path again: its row, the current file, the bytes' lookup,
# the path read back, the outcome, scan_started refreshed (a lock and an update), the
# counters.
UNCHANGED = 8
# Atomic blocks of a new file: the insert's transaction, the insert's own savepoint (a
# refused insert must not abort the transaction, PostgreSQL) and the index's transaction.
# In a worker the first and last are transactions, here (in the test's) savepoints.
NEW_ATOMIC = 3
# And the last file's fold of the tallies, on PostgreSQL, its own transaction.
LAST_ATOMIC = 1 if connection.vendor == "postgresql" else 0
# The job's counters tell its last file's task it is the last (UPDATE ... RETURNING),
# which then reads the job, links subagents and marks the job done; on PostgreSQL it
# also folds the project's tallies (``web.tally.fold``: the project's lock, the fold).
LAST = 5 if connection.vendor == "postgresql" else 3


def statements(queries: list[dict[str, str]]) -> list[str]:
    return [
        query["sql"]
        for query in queries
        if not query["sql"].startswith(("SAVEPOINT", "RELEASE SAVEPOINT"))
    ]


def scan_counting(owner, root, atomic: dict[str, int] | None = None) -> dict[str, list[str]]:
    """Scan ``root`` file by file; each file's statements by its path (and in ``atomic``,
    each file's savepoints)."""
    job, found = folder_job(owner, project_for(owner, "mixed"), root)
    counted: dict[str, list[str]] = {}
    for file_id in start(job, found, enqueue=False):
        path = ScanFile.objects.get(pk=file_id).path
        with CaptureQueriesContext(connection) as queries:
            scan_file.call(file_id)
        counted[path] = statements(queries.captured_queries)
        if atomic is not None:
            atomic[path] = sum(
                query["sql"].startswith("SAVEPOINT") for query in queries.captured_queries
            )
    return counted


@pytest.mark.django_db
def test_statements_per_scanned_file_are_pinned(owner, mixed_tree):
    atomic: dict[str, int] = {}
    first = scan_counting(owner, mixed_tree, atomic)
    last = list(first)[-1]
    expected = {
        path: EMPTY if path == "empty.jsonl" else GARBAGE if path == "garbage.json" else NEW
        for path in first
    }
    expected[last] += LAST
    assert {path: len(sql) for path, sql in first.items()} == expected, first
    assert {path: atomic[path] for path, count in expected.items() if count >= NEW} == {
        path: NEW_ATOMIC + (LAST_ATOMIC if path == last else 0)
        for path, count in expected.items()
        if count >= NEW
    }

    again = scan_counting(owner, mixed_tree)
    expected = {
        path: EMPTY if path == "empty.jsonl" else GARBAGE if path == "garbage.json" else UNCHANGED
        for path in again
    }
    expected[last] += LAST
    assert {path: len(sql) for path, sql in again.items()} == expected, again


# What a group of a batch's files (``scan_files``: one transaction for their rows, one for
# their search entries) sends once instead of once a file: the files' rows read, the
# job's current file, the job's counters; and once instead of once a new transcript: the
# transcripts locked for indexing, their old entries deleted, (on SQLite) the FTS5 table
# filled by one INSERT ... SELECT, the indexed marks in one upsert.
ONCE_A_GROUP = 3
ONCE_A_GROUP_OF_NEW = 3 if connection.vendor == "postgresql" else 4


@pytest.mark.django_db
def test_a_batch_sends_its_files_shared_statements_once_and_each_files_else(
    owner, other_user, mixed_tree
):
    # The same tree for two owners (no twin of the other's to copy): file by file, then
    # as one batch of one group.
    one_by_one = scan_counting(owner, mixed_tree)
    job, found = folder_job(other_user, project_for(other_user, "mixed"), mixed_tree)
    ids = start(job, found, enqueue=False)
    with CaptureQueriesContext(connection) as queries:
        scan_files.call(ids)
    batch = statements(queries.captured_queries)
    new = ScanFile.objects.filter(job=job, status=ScanFile.Status.NEW).count()
    assert len(batch) == (
        sum(map(len, one_by_one.values()))
        - ONCE_A_GROUP * (len(ids) - 1)
        - ONCE_A_GROUP_OF_NEW * (new - 1)
    )
    assert len(ids) == len(one_by_one) > 1
    assert new > 1
