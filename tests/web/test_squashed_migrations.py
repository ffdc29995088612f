"""Each app's history is one squashed migration, and a database from before the squash fits it.

A database that applied every old migration of an app counts as having applied the squashed
one (Django's ``replaces``): nothing to apply, and later migrations go on top of it. One that
applied only some of them is refused before ``migrate`` loads anything
(``inspector.web.checks``). The test database is made by the squashed migrations; these
tests rewrite its ``django_migrations`` rows, inside the test's transaction, into what an
older database holds. Run on SQLite and, with ``DATABASE_URL`` set, on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import QuerySet

from inspector.web.checks import partly_applied

pytestmark = pytest.mark.django_db

# The migrations each squashed one replaces, as they were named before the squash.
OLD = {
    ("web", "0001_squashed_0010_rule_indexes"): [
        "0001_initial",
        "0002_worker_beat",
        "0003_transcripts_per_project",
        "0004_signin_links",
        "0005_dashboard_indexes",
        "0006_meta_columns",
        "0007_dashboard_columns",
        "0008_sessions_table_orders",
        "0009_project_tally",
        "0010_rule_indexes",
    ],
    ("scan", "0001_squashed_0003_scan_started"): [
        "0001_initial",
        "0002_session_date_index",
        "0003_scan_started",
    ],
    ("search", "0001_squashed_0004_fts_insert_in_bulk"): [
        "0001_initial",
        "0002_fulltext_index",
        "0003_searchrow_message",
        "0004_fts_insert_in_bulk",
    ],
    ("watch", "0001_squashed_0002_folders_own_projects"): [
        "0001_initial",
        "0002_folders_own_projects",
    ],
}
APPS = ("web", "scan", "search", "watch", "share")


def _recorded() -> QuerySet[Any]:
    return MigrationRecorder(connection).migration_qs


def _as_before_the_squash(upto: dict[str, str] | None = None) -> None:
    """Leave in ``django_migrations`` what a database migrated at the commit before the
    squash holds: the old names only, and for an app in ``upto`` only those up to that name."""
    _recorded().filter(app__in=APPS, name__contains="_squashed_").delete()
    for app, last in (upto or {}).items():
        _recorded().filter(app=app, name__gt=last).delete()


def test_each_app_has_one_migration_and_it_names_every_one_it_replaces():
    loader = MigrationLoader(None)
    for app in APPS:
        assert len([key for key in loader.disk_migrations if key[0] == app]) == 1, app
    for key, names in OLD.items():
        assert loader.disk_migrations[key].replaces == [(key[0], name) for name in names]
    assert loader.disk_migrations[("share", "0001_initial")].replaces == []


def test_a_database_from_before_the_squash_has_nothing_to_apply():
    _as_before_the_squash()
    assert partly_applied(connection) == []
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    # migrate records each squashed migration as applied, as its replaced ones are.
    executor.check_replacements()
    recorded = set(_recorded().values_list("app", "name"))
    assert set(OLD) <= recorded
    assert {(app, name) for (app, _), names in OLD.items() for name in names} <= recorded


def test_a_database_part_way_through_an_old_history_is_refused_with_the_way_out():
    _as_before_the_squash({"web": "0006_meta_columns"})
    (problem,) = partly_applied(connection)
    assert problem.startswith("This database is at web 0006_meta_columns,")
    assert "release before the squash (commit c62e52b), run migrate, then this one" in problem
    with pytest.raises(SystemCheckError, match=r"web\.E001.*web 0006_meta_columns"):
        call_command("migrate", skip_checks=False, verbosity=0)
    with pytest.raises(SystemCheckError, match=r"web\.E001"):
        call_command("check", databases=["default"])
    # Nothing was applied or recorded.
    assert not _recorded().filter(app="web", name__gt="0006_meta_columns").exists()


def test_each_app_part_way_is_named():
    _as_before_the_squash({"scan": "0002_session_date_index", "watch": "0001_initial"})
    assert [problem.split(",")[0] for problem in partly_applied(connection)] == [
        "This database is at scan 0002_session_date_index",
        "This database is at watch 0001_initial",
    ]


def test_a_new_database_is_not_refused():
    assert partly_applied(connection) == []
    call_command("check", databases=["default"])
