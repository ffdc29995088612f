"""Per-project tallies kept by PostgreSQL's triggers (``inspector.web.tally``).

A table of signed amounts per project, owner, key (and rule, and day): each
statement that inserts, updates or deletes transcripts appends the difference it
makes, as one statement-level trigger adds it up from the statement's transition
tables; readers add the rows up, and fold them into one row per key now and then.
Every way a transcript changes goes through these triggers: ``save()``,
``.update()``, deletes and the collector's SET NULL, COPY, raw SQL; a transaction
rolled back (a scan killed mid-way) takes its rows with it; writers only append, so
concurrent scan workers of one project never wait on each other for a tally.

What one transcript adds is ``web_transcript_tally(row)``, one SQL function that the
triggers, the backfill below and ``tally.rebuild`` all read. PostgreSQL only: on
SQLite (one writer, small data) the dashboard keeps adding up the transcripts.
"""

from django.db import migrations

# What one transcript row adds to its project's tallies. Frozen here: a later change
# of what is tallied is a new migration that replaces the function and rebuilds.
TALLY_FUNCTION = """
CREATE OR REPLACE FUNCTION web_transcript_tally(t web_transcript)
RETURNS TABLE (key text, rule text, day date, value numeric)
LANGUAGE sql IMMUTABLE AS $$
    SELECT v.key, '', NULL::date, v.value
    FROM (VALUES
        ('sessions', 1::numeric),
        ('messages', t.message_count),
        ('empty', (t.message_count = 0)::int),
        ('needs_repair', t.needs_repair::int),
        ('subagents', t.subagent::int),
        ('linked', (t.parent_id IS NOT NULL)::int),
        ('listed', (t.conversations > 0)::int),
        ('listed_repair', (t.conversations > 0 AND t.needs_repair)::int),
        ('size', t.size),
        ('conversations', t.conversations),
        ('conversations_repair', t.conversations_repair),
        ('tokens_in', t.tokens_in),
        ('tokens_out', t.tokens_out),
        ('cache_read', t.cache_read),
        ('cache_write', t.cache_write)
    ) AS v(key, value)
    WHERE v.value <> 0
    UNION ALL
    SELECT k.kind, e.key, NULL::date,
        CASE k.kind
            WHEN 'findings' THEN (e.value)::numeric
            WHEN 'rule_sessions' THEN ((e.value)::numeric <> 0)::int
            ELSE 1
        END
    FROM jsonb_each(CASE WHEN jsonb_typeof(t.counts) = 'object' THEN t.counts ELSE '{}' END) AS e,
        (VALUES ('findings'), ('rule_sessions'), ('rule_rows')) AS k(kind)
    WHERE jsonb_typeof(e.value) = 'number'
    UNION ALL
    SELECT CASE WHEN t.needs_repair THEN 'day_repair' ELSE 'day_clean' END, '',
        (t.first_at AT TIME ZONE 'UTC')::date, 1
    WHERE t.message_count <> 0
        AND t.first_at >= '1900-01-01 00:00:00+00' AND t.first_at < '2200-01-01 00:00:00+00'
$$;
"""

# The rows a set of transcripts adds (sign 1) or takes away (-1), for projects that
# exist: a project being deleted loses its rows (below) after its transcripts were
# set loose, and a row for it written after that would stay for good.
_ROWS = (
    "SELECT r.project_id, r.owner_id, f.key, f.rule, f.day, {sign} * f.value AS value"
    " FROM {rows} AS r, LATERAL web_transcript_tally(r) AS f"
    " WHERE r.project_id IS NOT NULL"
    " AND EXISTS (SELECT 1 FROM web_project AS p WHERE p.id = r.project_id)"
)
_APPEND = (
    "INSERT INTO web_projecttally (project_id, owner_id, key, rule, day, value)"
    " SELECT c.project_id, c.owner_id, c.key, c.rule, c.day, SUM(c.value) FROM ({rows}) AS c"
    " GROUP BY c.project_id, c.owner_id, c.key, c.rule, c.day HAVING SUM(c.value) <> 0;"
)
_INSERTED = _APPEND.format(rows=_ROWS.format(sign=1, rows="new_rows"))
_DELETED = _APPEND.format(rows=_ROWS.format(sign=-1, rows="old_rows"))
_UPDATED = _APPEND.format(
    rows=_ROWS.format(sign=1, rows="new_rows") + " UNION ALL " + _ROWS.format(sign=-1, rows="old_rows")
)

FORWARD = [
    """
    CREATE TABLE web_projecttally (
        id bigserial PRIMARY KEY,
        project_id bigint NOT NULL,
        owner_id bigint NOT NULL,
        key text NOT NULL,
        rule text NOT NULL DEFAULT '',
        day date NULL,
        value numeric NOT NULL
    );
    """,
    "CREATE INDEX web_projecttally_project_idx ON web_projecttally (project_id, key, owner_id);",
    TALLY_FUNCTION,
    f"""
    CREATE FUNCTION web_transcript_tally_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            {_INSERTED}
        ELSIF TG_OP = 'UPDATE' THEN
            {_UPDATED}
        ELSIF TG_OP = 'DELETE' THEN
            {_DELETED}
        ELSE
            DELETE FROM web_projecttally;
        END IF;
        RETURN NULL;
    END;
    $$;
    """,
    "CREATE TRIGGER web_transcript_tally_insert AFTER INSERT ON web_transcript"
    " REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION web_transcript_tally_changed();",
    "CREATE TRIGGER web_transcript_tally_update AFTER UPDATE ON web_transcript"
    " REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION web_transcript_tally_changed();",
    "CREATE TRIGGER web_transcript_tally_delete AFTER DELETE ON web_transcript"
    " REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT"
    " EXECUTE FUNCTION web_transcript_tally_changed();",
    # TRUNCATE (the test runner's flush) fires no row trigger.
    "CREATE TRIGGER web_transcript_tally_truncate AFTER TRUNCATE ON web_transcript"
    " FOR EACH STATEMENT EXECUTE FUNCTION web_transcript_tally_changed();",
    """
    CREATE FUNCTION web_project_tally_gone() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'DELETE' THEN
            DELETE FROM web_projecttally WHERE project_id IN (SELECT id FROM old_projects);
        ELSE
            DELETE FROM web_projecttally;
        END IF;
        RETURN NULL;
    END;
    $$;
    """,
    "CREATE TRIGGER web_project_tally_delete AFTER DELETE ON web_project"
    " REFERENCING OLD TABLE AS old_projects FOR EACH STATEMENT"
    " EXECUTE FUNCTION web_project_tally_gone();",
    "CREATE TRIGGER web_project_tally_truncate AFTER TRUNCATE ON web_project"
    " FOR EACH STATEMENT EXECUTE FUNCTION web_project_tally_gone();",
    # The transcripts stored before: one folded row per key, from the same function.
    "INSERT INTO web_projecttally (project_id, owner_id, key, rule, day, value)"
    " SELECT c.project_id, c.owner_id, c.key, c.rule, c.day, SUM(c.value) FROM ("
    + _ROWS.format(sign=1, rows="web_transcript")
    + ") AS c GROUP BY c.project_id, c.owner_id, c.key, c.rule, c.day HAVING SUM(c.value) <> 0;",
]

BACKWARD = [
    "DROP TRIGGER IF EXISTS web_project_tally_truncate ON web_project;",
    "DROP TRIGGER IF EXISTS web_project_tally_delete ON web_project;",
    "DROP FUNCTION IF EXISTS web_project_tally_gone();",
    "DROP TRIGGER IF EXISTS web_transcript_tally_truncate ON web_transcript;",
    "DROP TRIGGER IF EXISTS web_transcript_tally_delete ON web_transcript;",
    "DROP TRIGGER IF EXISTS web_transcript_tally_update ON web_transcript;",
    "DROP TRIGGER IF EXISTS web_transcript_tally_insert ON web_transcript;",
    "DROP FUNCTION IF EXISTS web_transcript_tally_changed();",
    "DROP FUNCTION IF EXISTS web_transcript_tally(web_transcript);",
    "DROP TABLE IF EXISTS web_projecttally;",
]


def _run(schema_editor, statements):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in statements:
        schema_editor.execute(statement)


def forwards(apps, schema_editor):
    _run(schema_editor, FORWARD)


def backwards(apps, schema_editor):
    _run(schema_editor, BACKWARD)


class Migration(migrations.Migration):
    dependencies = [("web", "0008_sessions_table_orders")]

    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
