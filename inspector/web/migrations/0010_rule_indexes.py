"""An index of each rule's sessions, for the dashboard's rule filter (PostgreSQL only).

The sessions table filtered by a rule (``counts ? 'PAIR-1'``, ``scan.forms.
SessionFilterForm``) counted and paged its sessions through the GIN index of
``counts`` (web 0006), which reads every session of every project that has the
rule and then their wide rows, JSON and all, to keep the project's: 6,000-10,000
pages for PAIR-1 in a 40,000-session project, 20-40 ms for the count and as
much again for a page (``bench/bench_scale.py``). A partial index per rule holds
only that rule's sessions, with the columns the table filters on and its date
order, so the count and a page, a deep one too, are that index alone.

The rules are frozen here as the filter offers them (``diagnosis.REPAIR_RULES``):
a new rule is a new migration. SQLite reads its JSON per row and has no such
index; its dashboard is small.
"""

from django.db import migrations

RULES = ("PAIR-1", "PAIR-2", "PAIR-3", "ID-1", "ID-2", "MSG-1", "INT-1", "INT-2", "LINE-1")


def index_name(rule: str) -> str:
    return "transcript_rule_" + rule.lower().replace("-", "_") + "_idx"


def add_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for rule in RULES:
        # The rule is a literal (from the list above), as Django writes it in the query:
        # PostgreSQL uses a partial index only for a query whose condition implies its own.
        schema_editor.execute(
            f"CREATE INDEX IF NOT EXISTS {index_name(rule)} ON web_transcript"
            " (project_id, owner_id, (COALESCE(scan_started, created)), id,"
            " message_count, needs_repair, problems, format, scan_started, created)"
            f" WHERE counts ? '{rule}'"
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for rule in RULES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {index_name(rule)}")


class Migration(migrations.Migration):
    dependencies = [("web", "0009_project_tally")]

    operations = [migrations.RunPython(add_indexes, drop_indexes)]
