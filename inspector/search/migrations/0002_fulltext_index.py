# The database's own full-text index over search_searchrow.body, made here
# because no model field describes it (inspector.search.fulltext reads it):
#
# - SQLite: an FTS5 table with external content (the rows' text is stored once,
#   in search_searchrow) and triggers that keep it in step with every insert,
#   update and delete, cascades from deleted transcripts included. The
#   unicode61 tokenizer keeps diacritics, so a word matches as it is written.
#   A later migration that changes search_searchrow on SQLite rebuilds the table
#   (Django copies it to a new one): it must make these triggers again.
# - PostgreSQL: a tsvector column, filled by the INSERT itself with
#   to_tsvector('simple', <the words of the text>), and a GIN index on it.
#
# Any other database gets neither: the search says it is not available there.

from django.db import migrations

SQLITE = [
    (
        "CREATE VIRTUAL TABLE search_searchrow_fts USING fts5("
        "body, content='search_searchrow', content_rowid='id', "
        "tokenize='unicode61 remove_diacritics 0')"
    ),
    (
        "CREATE TRIGGER search_searchrow_fts_insert AFTER INSERT ON search_searchrow BEGIN "
        "INSERT INTO search_searchrow_fts(rowid, body) VALUES (new.id, new.body); END"
    ),
    (
        "CREATE TRIGGER search_searchrow_fts_delete AFTER DELETE ON search_searchrow BEGIN "
        "INSERT INTO search_searchrow_fts(search_searchrow_fts, rowid, body) "
        "VALUES ('delete', old.id, old.body); END"
    ),
    (
        "CREATE TRIGGER search_searchrow_fts_update AFTER UPDATE ON search_searchrow BEGIN "
        "INSERT INTO search_searchrow_fts(search_searchrow_fts, rowid, body) "
        "VALUES ('delete', old.id, old.body); "
        "INSERT INTO search_searchrow_fts(rowid, body) VALUES (new.id, new.body); END"
    ),
    # Rows stored before this migration (none: it comes with the table) would be read in here.
    "INSERT INTO search_searchrow_fts(search_searchrow_fts) VALUES ('rebuild')",
]
SQLITE_BACK = [
    "DROP TRIGGER IF EXISTS search_searchrow_fts_update",
    "DROP TRIGGER IF EXISTS search_searchrow_fts_delete",
    "DROP TRIGGER IF EXISTS search_searchrow_fts_insert",
    "DROP TABLE IF EXISTS search_searchrow_fts",
]
POSTGRESQL = [
    "ALTER TABLE search_searchrow ADD COLUMN document tsvector NOT NULL DEFAULT ''::tsvector",
    "CREATE INDEX search_searchrow_document_idx ON search_searchrow USING GIN (document)",
]
POSTGRESQL_BACK = [
    "DROP INDEX IF EXISTS search_searchrow_document_idx",
    "ALTER TABLE search_searchrow DROP COLUMN IF EXISTS document",
]


def _run(schema_editor, by_vendor):
    for statement in by_vendor.get(schema_editor.connection.vendor, []):
        schema_editor.execute(statement)


def forwards(apps, schema_editor):
    _run(schema_editor, {"sqlite": SQLITE, "postgresql": POSTGRESQL})


def backwards(apps, schema_editor):
    _run(schema_editor, {"sqlite": SQLITE_BACK, "postgresql": POSTGRESQL_BACK})


class Migration(migrations.Migration):
    dependencies = [
        ("search", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards, elidable=False),
    ]
