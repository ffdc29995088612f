"""Each project's totals as PostgreSQL's triggers keep them (migration ``web 0009``, in
``web/migrations/0001_squashed_0010_rule_indexes.py``).

Every statement that writes transcripts appends, in its own transaction, the
signed amounts it changes per project, owner and key (``web_projecttally``); a
project's totals are the sums of its rows. Readers add them up in one statement
(one snapshot), and fold a project's rows into one per key when they have grown
(``fold``): the rows a fold deletes and the one it writes go in one statement,
under a lock per project that a rebuild takes too, so a concurrent writer's rows
are neither lost nor counted twice.

Keys (the ``Summary`` of ``scan.reports`` names them): plain totals with rule ''
and no day; ``findings``, ``rule_sessions`` and ``rule_rows`` (sessions with the
rule in their counts at all) per rule; ``day_repair`` and ``day_clean`` per UTC
day of ``first_at``, for sessions with messages.

Only on PostgreSQL (``available``): elsewhere the callers add up the transcripts.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from decimal import Decimal
from typing import Any

from django.db import connections, transaction

# A project's rows are folded when this many more than its keys have piled up.
FOLD_AFTER = 2000
# pg_advisory_xact_lock's first key: this module's locks, one per project.
LOCK_SPACE = 330_917

Key = tuple[str, str, date | None]


def available(using: str = "default") -> bool:
    return connections[using].vendor == "postgresql"


def project_tallies(project_id: int, owner_id: int, using: str = "default") -> dict[Key, Decimal]:
    """The project's tallies of ``owner_id``'s transcripts, folded now if many rows piled up."""
    found = _sums(
        using, "key, rule, day", "project_id = %s AND owner_id = %s", [project_id, owner_id]
    )
    rows = sum(row[4] for row in found)
    if rows - len(found) > FOLD_AFTER:
        fold(project_id, using, wait=False)
    return {(key, rule, day): value for key, rule, day, value, _ in found if value}


def _sums(using: str, by: str, where: str, params: list[Any]) -> list[tuple[Any, ...]]:
    """The tally rows ``where`` picks, added up per ``by`` (this module's column lists): each
    group's ``by`` values, its sum and how many rows it adds (how far they have piled up)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            # ``by`` and ``where`` are this module's constants; the values go in ``params``.
            f"SELECT {by}, SUM(value), COUNT(*) FROM web_projecttally"  # noqa: S608
            f" WHERE {where} GROUP BY {by}",
            params,
        )
        return cursor.fetchall()


def totals_per_project(
    project_ids: Iterable[int], keys: Iterable[str], using: str = "default"
) -> dict[int, dict[str, Decimal]]:
    """Plain totals (``keys``) of each project, over all its transcripts."""
    ids, names = list(project_ids), list(keys)
    if not ids:
        return {}
    found = _sums(using, "project_id, key", "project_id = ANY(%s) AND key = ANY(%s)", [ids, names])
    totals: dict[int, dict[str, Decimal]] = {}
    piled: set[int] = set()
    for project_id, key, value, rows in found:
        totals.setdefault(project_id, {})[key] = value
        if rows > FOLD_AFTER // 10:
            piled.add(project_id)
    for project_id in sorted(piled):
        fold(project_id, using, wait=False)
    return totals


def fold(project_id: int, using: str = "default", wait: bool = True) -> bool:
    """Fold the project's rows into one per owner and key; whether it ran.

    ``wait=False``: not if another fold or rebuild of the project is under way.
    """
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        if not _lock(cursor, project_id, wait):
            return False
        cursor.execute(
            "WITH gone AS (DELETE FROM web_projecttally WHERE project_id = %s"
            " RETURNING project_id, owner_id, key, rule, day, value)"
            " INSERT INTO web_projecttally (project_id, owner_id, key, rule, day, value)"
            " SELECT project_id, owner_id, key, rule, day, SUM(value) FROM gone"
            " GROUP BY project_id, owner_id, key, rule, day HAVING SUM(value) <> 0",
            [project_id],
        )
    return True


def rebuild(project_id: int, using: str = "default") -> None:
    """The project's tallies added up again from its transcripts (one statement, one snapshot:
    rows of writes it does not see stay, the others go)."""
    with transaction.atomic(using=using), connections[using].cursor() as cursor:
        _lock(cursor, project_id, wait=True)
        cursor.execute(
            "WITH gone AS (DELETE FROM web_projecttally WHERE project_id = %s)"
            " INSERT INTO web_projecttally (project_id, owner_id, key, rule, day, value)"
            " SELECT t.project_id, t.owner_id, f.key, f.rule, f.day, SUM(f.value)"
            " FROM web_transcript AS t, LATERAL web_transcript_tally(t) AS f"
            " WHERE t.project_id = %s"
            " GROUP BY t.project_id, t.owner_id, f.key, f.rule, f.day HAVING SUM(f.value) <> 0",
            [project_id, project_id],
        )


def _lock(cursor: Any, project_id: int, wait: bool) -> bool:
    if wait:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_SPACE, _key(project_id)])
        return True
    cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [LOCK_SPACE, _key(project_id)])
    return bool(cursor.fetchone()[0])


def _key(project_id: int) -> int:
    """The lock's second key, an int4 (two projects sharing one only wait on each other)."""
    return project_id % 2_147_483_647
