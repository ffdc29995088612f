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
    stored: Sequence[tuple[Transcript, Sequence[fulltext.Row] | None]],
    now: bool = False,
    **kwargs: object,
) -> None:
    """Index transcripts ``store_upload`` has just stored, or queue their indexing (``tasks``).

    With ``now`` (a scan's worker) and the rows the diagnosis just made, the
    rows are indexed here, from memory, all the transcripts in one transaction
    (``fulltext.index_many``: a scan's batch of files): the cache file is not read
    back and no second task runs (the two cost a scan about an eighth of its CPU,
    ``bench/profile_scan.py``). Otherwise (an upload, whose page waits) each is
    queued. A failure is logged and fails nothing: the transcript stays unindexed,
    and the next search of its project indexes it (``catch_up``).
    """
    queued = [transcript for transcript, rows in stored if not now or rows is None]
    if len(queued) < len(stored) and fulltext.backend() is not None:
        _index_now([(transcript, rows) for transcript, rows in stored if rows is not None])
    for transcript in queued:
        try:
            index_transcript.enqueue(transcript.pk)
        except DatabaseError:
            log.exception("queueing transcript %s for search failed", transcript.public_id)


def _index_now(stored: Sequence[tuple[Transcript, Sequence[fulltext.Row]]]) -> None:
    # Whatever fails (the database, a bug in reading a row's text), the scan's files are
    # stored and counted: their task must go on and finish the job.
    made = []
    for transcript, rows in stored:
        try:  # the text of each row and its masking, before the write transaction
            made.append(
                (transcript, fulltext.entries_of(transcript.pk, rows), transcript.engine_version)
            )
        except Exception:
            log.exception("indexing transcript %s for search failed", transcript.public_id)
    try:
        fulltext.index_many(made)
    except Exception:
        names = ", ".join(transcript.public_id for transcript, _, _ in made)
        log.exception("indexing transcripts %s for search failed", names)
