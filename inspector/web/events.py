"""What the web floor tells the apps above it, as Django signals (``django.dispatch``).

The web app is the floor the others (share, watch, scan, search) stand on:
it imports none of them. Where one of them acts on something the web floor
did, the web floor sends a signal here and the app connects its receiver in
its own ``AppConfig.ready`` (as ``search`` does, ``search/apps.py``), so the
arrow points up from the app, never down from ``web``.

- ``transcripts_stored``: ``store.store_upload`` (or ``store.landed``, for a scan's
  batch of files) has stored new transcripts (sent with ``stored=``, a list of
  ``(transcript, rows)``, once their rows and files exist, ``rows`` the timeline rows
  in memory when they were just made, else ``None``; and ``now=``, true when the
  caller is background work that would rather the receivers did their part now than
  queue it: a scan's worker); ``search`` indexes them then, from those rows, all in
  one transaction, or queues their indexing.
- ``timeline_shown``: ``views.timeline`` is drawing ``transcript``'s page;
  each receiver answers a dict the page's context takes in
  (``timeline_context``); ``scan`` adds ``neighbours``, the sessions needing
  repair before and after it in its dashboard's order.
"""

from __future__ import annotations

from typing import Any

from django.dispatch import Signal

from inspector.web.models import Transcript

transcripts_stored = Signal()
timeline_shown = Signal()


def timeline_context(transcript: Transcript) -> dict[str, Any]:
    """What the apps above the web floor add to the timeline page of ``transcript``."""
    context: dict[str, Any] = {}
    for _receiver, answer in timeline_shown.send(sender=Transcript, transcript=transcript):
        if isinstance(answer, dict):
            context |= answer
    return context
