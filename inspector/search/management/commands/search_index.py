"""``manage.py search_index [--project SLUG] [--owner USER] [--all]``.

Indexes for the project search every transcript not indexed yet, or indexed
from another engine version's rows: those stored before the search existed,
and all of them after an upgrade changes the engine. A search does the same a
few at a time; this does all of them at once. ``--all`` indexes every one again.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from inspector.diagnosis import ENGINE_VERSION
from inspector.search import fulltext
from inspector.web.models import Transcript


class Command(BaseCommand):
    help = "Index transcripts for the project search (those not indexed at this engine version)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", default="", help="only this project (its slug)")
        parser.add_argument("--owner", default="", help="only this user's transcripts")
        parser.add_argument("--all", action="store_true", help="index every transcript again")

    def handle(self, *args: Any, **options: Any) -> None:
        if fulltext.backend() is None:
            raise CommandError("This database has no full-text index: use SQLite or PostgreSQL.")
        transcripts = Transcript.objects.all()
        if options["owner"]:
            transcripts = transcripts.filter(owner__username=options["owner"])
        if options["project"]:
            transcripts = transcripts.filter(project__slug=options["project"])
        if not options["all"]:
            transcripts = transcripts.exclude(search_index__engine_version=ENGINE_VERSION)
        total = transcripts.count()
        rows = failed = 0
        for done, transcript in enumerate(transcripts.order_by("id").iterator(chunk_size=50), 1):
            try:
                rows += fulltext.index_stored(transcript)
            except OSError as error:
                failed += 1
                self.stderr.write(f"{transcript.file_name} ({transcript.public_id}): {error}")
            if self.stdout.isatty() or done == total:
                self.stdout.write(f"\r{done:,}/{total:,} transcripts", ending="")
        self.stdout.write(
            f"\nIndexed {total - failed:,} transcript(s), {rows:,} rows with text"
            + (f"; {failed:,} could not be read." if failed else ".")
        )
