"""Tags that bring the share app's data into the web app's pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.db.models import QuerySet

from inspector.share.models import ShareLink

register = template.Library()


@register.simple_tag
def live_share_links(user: Any) -> QuerySet[ShareLink]:
    """The user's links that still open: not revoked, not expired."""
    if not getattr(user, "is_authenticated", False):
        return ShareLink.objects.none()
    return ShareLink.live().filter(transcript__owner=user).select_related("transcript")
