"""What the web floor tells the apps above it, as Django signals (``django.dispatch``).

The web app is the floor the others (share, watch, scan, search) stand on:
it imports none of them. Where one of them acts on something the web floor
did, the web floor sends a signal here and the app connects its receiver in
its own ``AppConfig.ready`` (as ``search`` does, ``search/apps.py``), so the
arrow points up from the app, never down from ``web``.

- ``transcript_stored``: ``store.store_upload`` has stored a new transcript
  (sent with ``transcript=``, once the row and its files exist); ``search``
  queues its indexing.
"""

from __future__ import annotations

from django.dispatch import Signal

transcript_stored = Signal()
