"""Search's answer to the web floor storing a transcript (wired in ``apps.SearchConfig.ready``)."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from django.db import DatabaseError

from inspector.search import fulltext
from inspector.search.tasks import index_transcript
from inspector.web.models import Transcript

log = logging.getLogger(__name__)


def queue_indexing(
    sender: type[Transcript],
    transcript: Transcript,
    rows: Sequence[fulltext.Row] | None = None,
    now: bool = False,
    **kwargs: object,
) -> None:
    """Index a transcript ``store_upload`` has just stored, or queue its indexing (``tasks``).

    With ``now`` (a scan's worker) and the rows the diagnosis just made, the
    rows are indexed here, from memory: the cache file is not read back and
    no second task runs (the two cost a scan about an eighth of its CPU,
    ``bench/profile_scan.py``). Otherwise (an
    upload, whose page waits) it is queued. A failure is logged and fails
    nothing: the transcript stays unindexed, and the next search of its
    project indexes it (``catch_up``).
    """
    if now and rows is not None:
        if fulltext.backend() is None:
            return  # no full-text index on this database
        try:
            fulltext.index_entries(
                transcript, fulltext.entries_of(transcript.pk, rows), transcript.engine_version
            )
        except Exception:
            # Whatever failed (the database, a bug in reading a row's text), the scan's
            # file is stored and counted: its task must go on and finish the job.
            log.exception("indexing transcript %s for search failed", transcript.public_id)
        return
    try:
        index_transcript.enqueue(transcript.pk)
    except DatabaseError:
        log.exception("queueing transcript %s for search failed", transcript.public_id)
