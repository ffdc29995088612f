from __future__ import annotations

from django import forms


class ProjectSearchForm(forms.Form):
    """The project search: words to look for in every session, and which page of rows."""

    q = forms.CharField(
        required=False,
        max_length=200,
        strip=True,
        label="Search every session",
        widget=forms.TextInput(
            attrs={"type": "search", "placeholder": 'words or "a phrase"', "autocomplete": "off"}
        ),
    )
    page = forms.IntegerField(required=False, min_value=1)
