"""Share links: a read-only view of one diagnosis for anyone holding the token.

The token is shown once, when the link is made; the database keeps only its
sha256, so a copy of the database opens no shared page.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.db import models
from django.utils import timezone

from inspector.web.models import Transcript, new_public_id

# 32 random bytes: 256 bits, 43 url-safe characters.
TOKEN_BYTES = 32
EXPIRY_DAYS = {"1": 1, "7": 7, "30": 30, "never": None}


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class ShareLink(models.Model):
    FULL = "full"
    REDACTED = "redacted"
    MODES = [
        (REDACTED, "Redacted: structure and findings, no content"),
        (FULL, "Full: everything, possible secrets masked"),
    ]

    # For revoke URLs; the token itself is never stored.
    public_id = models.CharField(max_length=32, unique=True, default=new_public_id, editable=False)
    transcript = models.ForeignKey(Transcript, on_delete=models.CASCADE, related_name="share_links")
    token_hash = models.CharField(max_length=64)
    mode = models.CharField(max_length=16, choices=MODES, default=REDACTED)
    expires = models.DateTimeField(null=True, blank=True, help_text="empty: never")
    created = models.DateTimeField(auto_now_add=True)
    revoked = models.DateTimeField(null=True, blank=True)
    view_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created", "-id"]
        constraints = [
            # The share page's one lookup: the hash of the token in the URL.
            models.UniqueConstraint(fields=["token_hash"], name="sharelink_token_hash_unique"),
        ]
        indexes = [
            # The timeline's share panel: one transcript's links, newest first;
            # the account page joins through it for the user's live links.
            models.Index(fields=["transcript", "-created"], name="sharelink_transcript_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.mode} share link {self.public_id}"

    @classmethod
    def issue(cls, transcript: Transcript, mode: str, expiry: str) -> tuple[ShareLink, str]:
        """Make a link; returns the row and the token, which is never stored."""
        token = secrets.token_urlsafe(TOKEN_BYTES)
        days = EXPIRY_DAYS[expiry]
        expires = timezone.now() + timedelta(days=days) if days is not None else None
        link = cls.objects.create(
            transcript=transcript, token_hash=hash_token(token), mode=mode, expires=expires
        )
        return link, token

    @classmethod
    def live(cls, now: datetime | None = None) -> models.QuerySet[ShareLink]:
        now = now or timezone.now()
        return cls.objects.filter(revoked__isnull=True).filter(
            models.Q(expires__isnull=True) | models.Q(expires__gt=now)
        )

    def is_live(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.revoked is None and (self.expires is None or self.expires > now)

    @property
    def status(self) -> str:
        if self.revoked is not None:
            return "revoked"
        return "live" if self.is_live() else "expired"

    def revoke(self) -> None:
        if self.revoked is None:
            self.revoked = timezone.now()
            self.save(update_fields=["revoked"])

    def record_view(self) -> None:
        ShareLink.objects.filter(pk=self.pk).update(view_count=models.F("view_count") + 1)
