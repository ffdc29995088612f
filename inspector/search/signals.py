"""Search's answer to the web floor storing a transcript (wired in ``apps.SearchConfig.ready``)."""

from __future__ import annotations

import logging

from django.db import DatabaseError

from inspector.search.tasks import index_transcript
from inspector.web.models import Transcript

log = logging.getLogger(__name__)


def queue_indexing(sender: type[Transcript], transcript: Transcript, **kwargs: object) -> None:
    """Queue the indexing of a transcript ``store_upload`` has just stored (``tasks``).

    A failure to queue is logged and does not fail the upload: the transcript
    stays unindexed, and the next search of its project indexes it (``catch_up``).
    """
    try:
        index_transcript.enqueue(transcript.pk)
    except DatabaseError:
        log.exception("queueing transcript %s for search failed", transcript.public_id)
