from __future__ import annotations

from typing import Any

from django import forms

from inspector.web.forms import check_days


class ProjectSearchForm(forms.Form):
    """The project search: words (or a regular expression) to look for in every session,
    the days of the sessions to look in, and which page of rows."""

    q = forms.CharField(
        required=False,
        max_length=200,
        strip=True,
        label="Search every session",
        widget=forms.TextInput(
            attrs={"type": "search", "placeholder": 'words or "a phrase"', "autocomplete": "off"}
        ),
    )
    regex = forms.BooleanField(required=False, label="Regular expression")
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    page = forms.IntegerField(required=False, min_value=1)

    def clean(self) -> dict[str, Any]:
        return check_days(super().clean() or {})
