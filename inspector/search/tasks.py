"""Indexing a stored transcript for project search, as background work.

Indexing reads every row again (its text as a share shows it, secrets
masked) and writes it to the database's full-text index: about as long as
diagnosing took. Done inline, it doubled the time from upload to timeline and
the CPU a scan spends per file (``bench/bench_web.py``, ``bench/bench_scan.py``),
so ``store_upload`` queues it instead, below the scan's own files in priority;
a search that finds transcripts not yet indexed indexes them first for a
moment (``fulltext.catch_up``) and says how many it left out.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError
from django.tasks import task

from inspector.search import fulltext
from inspector.web.models import Transcript

log = logging.getLogger(__name__)

# Below a scan's files (priority 0): the scan's results come first, the index after.
PRIORITY = -10


@task(priority=PRIORITY)
def index_transcript(transcript_pk: int) -> str:
    """Index one transcript's timeline rows, read from its stored diagnosis."""
    transcript = Transcript.objects.filter(pk=transcript_pk).first()
    if transcript is None:
        return "deleted"
    try:
        count = fulltext.index_stored(transcript)
    except DatabaseError:
        log.exception("indexing transcript %s for search failed", transcript.public_id)
        return "failed"
    return f"{count} rows"
