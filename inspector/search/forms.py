from __future__ import annotations

from typing import Any

from django import forms


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
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("“From” is after “To”: no day is in between.")
        return data
