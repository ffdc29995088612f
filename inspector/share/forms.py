"""Every input the share pages read."""

from __future__ import annotations

from django import forms

from inspector.share.models import ShareLink

EXPIRY_CHOICES = [("1", "1 day"), ("7", "7 days"), ("30", "30 days"), ("never", "Never")]


class ShareForm(forms.Form):
    mode = forms.ChoiceField(
        choices=ShareLink.MODES, initial=ShareLink.REDACTED, widget=forms.RadioSelect
    )
    expires = forms.ChoiceField(choices=EXPIRY_CHOICES, initial="7", label="Expires after")


class RevokeForm(forms.Form):
    """Where to go after a plain (not htmx) revoke: the share page or the account page."""

    back = forms.ChoiceField(
        required=False, choices=[("", "share page"), ("account", "account page")]
    )
