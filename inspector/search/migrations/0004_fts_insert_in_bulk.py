# SQLite: rows reach the FTS5 table in bulk, one INSERT ... SELECT per batch
# (inspector.search.fulltext.SQLite.insert), instead of by the AFTER INSERT
# trigger of migration 0002. FTS5 writes its pending terms out at each statement
# of a trigger, so a transcript's 180 rows made 180 small segments to merge:
# indexing went at about 6 MB of text a second, where one statement for the
# batch goes at about 20 (bench/profile_scan.py, README "Benchmarks and load").
# The delete and update triggers stay: Django's cascades delete rows one
# statement per model, which the delete trigger follows.
#
# PostgreSQL (and any other database) has nothing to change here.

from django.db import migrations

INSERT_TRIGGER = (
    "CREATE TRIGGER search_searchrow_fts_insert AFTER INSERT ON search_searchrow BEGIN "
    "INSERT INTO search_searchrow_fts(rowid, body) VALUES (new.id, new.body); END"
)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS search_searchrow_fts_insert")


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        schema_editor.execute(INSERT_TRIGGER)


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0003_searchrow_message"),
    ]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
