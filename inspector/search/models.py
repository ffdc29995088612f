"""What the project search stores: each timeline row's text, and which transcripts are indexed.

The rows are plain tables on every database; the full-text index over
``SearchRow.body`` is the database's own and is made by the migration, outside
the model: an FTS5 table kept in step by triggers on SQLite, a ``tsvector``
column with a GIN index on PostgreSQL (``inspector.search.fulltext``).

Deleting a transcript deletes its entries, however it is deleted (one row, a
queryset, its owner's account): neither model has signals or relations of its
own, so Django's cascade removes each transcript's rows in one ``DELETE``, and on
SQLite the triggers take them out of the FTS5 table.
"""

from __future__ import annotations

from django.db import models

from inspector.web.models import Transcript


class SearchRow(models.Model):
    """One row of a transcript's timeline (the annotated view), as the search reads it."""

    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="search_rows")
    position = models.PositiveIntegerField(help_text="the row's place in the annotated timeline")
    key = models.CharField(max_length=32, help_text="the row's anchor on the timeline")
    role = models.CharField(max_length=32)
    # The number the timeline, its findings, the exports and the CLI give the row.
    message = models.PositiveIntegerField(
        null=True,
        help_text="the row's message in the file, from 1; 0 for a row the repair inserted; "
        "null in an entry indexed before it was kept",
    )
    body = models.TextField(help_text="the row's text, secrets masked")

    class Meta:
        indexes = [
            models.Index(fields=["transcript", "position"], name="searchrow_transcript_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.key} of transcript {self.transcript_id}"


class SearchIndexed(models.Model):
    """A transcript whose rows are indexed, and the engine version whose rows they are."""

    transcript = models.OneToOneField(
        Transcript,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="search_index",
    )
    engine_version = models.CharField(max_length=64)
    rows = models.PositiveIntegerField(default=0, help_text="rows with text, indexed")
    indexed = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"transcript {self.transcript_id}: {self.rows} rows (engine {self.engine_version})"
