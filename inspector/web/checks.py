"""A database only part-way through a history that was squashed: refused, with the way out.

Each app's migrations were squashed into one (``0001_squashed_...``, with ``replaces``
naming the old ones) and the old files deleted. A database that applied all of an app's
old migrations counts as having applied the squashed one; a new one applies it. A
database that applied only some of them cannot go on from here: the steps it lacks are
in no file of this release, and Django's loader, left to itself, drops the squashed
migration and fails further on (``Related model 'web.project' cannot be resolved``).
This check, run by ``migrate`` before it loads the migrations (and by ``manage.py check
--database default``), names where the database stands and what to run first.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from django.core import checks
from django.db import connections
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder

# The last commit whose tree holds the old migrations, the squash's parent.
BEFORE_THE_SQUASH = "c62e52b"


def partly_applied(connection: Any) -> list[str]:
    """What is wrong with ``connection``'s recorded migrations: one sentence per squashed
    migration whose replaced migrations are recorded only in part; empty when none is."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return []
    applied = recorder.applied_migrations()
    loader = MigrationLoader(None, ignore_no_migrations=True, load=False)
    loader.load_disk()
    found = []
    for key, migration in sorted(loader.disk_migrations.items()):
        replaced: Sequence[tuple[str, str]] = migration.replaces
        done = [name for name in replaced if name in applied]
        if key in applied or not done or len(done) == len(replaced):
            continue
        app, last = done[-1]
        found.append(
            f"This database is at {app} {last}, part-way through the migrations that "
            f"{app} {key[1]} replaces, and those are gone from this release. First upgrade "
            f"with a release before the squash (commit {BEFORE_THE_SQUASH}), run migrate, "
            "then this one."
        )
    return found


@checks.register(checks.Tags.database)
def no_partly_applied_squash(
    app_configs: Iterable[Any] | None = None, databases: Iterable[str] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    return [
        checks.Error(message, id="web.E001", obj=f"database {alias!r}")
        for alias in databases or ()
        for message in partly_applied(connections[alias])
    ]
