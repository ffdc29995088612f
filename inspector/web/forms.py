"""Every input the web app reads, GET filters included."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from inspector.formats import FORMATS
from inspector.local import databases

ROLE_CHOICES = [(role, role) for role in ("system", "user", "assistant", "tool")]
VIEW_CHOICES = [
    ("annotated", "Annotated"),
    ("original", "Original"),
    ("repaired", "Repaired"),
]


def format_choices() -> list[tuple[str, str]]:
    """The shapes the loader knows, in its order, each with its module's label."""
    return [(name, module.LABEL) for name, module in FORMATS.items()]


def describe_size(size: int) -> str:
    if size >= 1024 * 1024:
        return f"{size / (1024 * 1024):.1f}".removesuffix(".0") + " MB"
    if size >= 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size} bytes"


def check_size(size: int) -> None:
    limit = settings.INSPECTOR_MAX_UPLOAD_BYTES
    if size > limit:
        raise forms.ValidationError(
            f"The transcript is {describe_size(size)} ({size:,} bytes); the limit is "
            f"{describe_size(limit)} ({limit:,} bytes). Upload a smaller file, or ask whoever "
            "runs this server to raise INSPECTOR_MAX_UPLOAD_MB.",
            code="too_large",
        )


def too_many_files() -> str:
    """What to say when a request carries more files than Django will parse."""
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
    return (
        f"More files were sent at once than the limit of {limit:,}. Upload the folder as one "
        f".zip instead (a zip may hold up to {settings.INSPECTOR_SCAN_MAX_FILES:,} files), or "
        "ask whoever runs this server to raise INSPECTOR_MAX_UPLOAD_FILES."
    )


class UploadForm(forms.Form):
    file = forms.FileField(required=False, label="Transcript file")
    text = forms.CharField(
        required=False,
        strip=False,
        label="Or paste it",
        widget=forms.Textarea(attrs={"rows": 6, "placeholder": "Paste JSON or JSONL here"}),
    )
    format = forms.ChoiceField(required=False, label="Shape", initial="")
    project = forms.CharField(required=False, max_length=200, label="Project (optional)")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["format"]).choices = [
            ("", "Detect it"),
            *format_choices(),
        ]

    def clean_file(self) -> UploadedFile | None:
        upload = self.cleaned_data.get("file")
        if upload is not None:
            try:
                check_size(upload.size)
            except forms.ValidationError as error:
                # Named, so an error after dropping several files says which one.
                raise forms.ValidationError(
                    f"{upload.name}: {' '.join(error.messages)}", code="too_large"
                ) from error
        return upload

    def clean_text(self) -> str:
        text = self.cleaned_data.get("text", "")
        check_size(len(text.encode()))
        return text

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None  # Form.clean returns cleaned_data; the stubs allow None
        has_file = data.get("file") is not None
        has_text = bool(data.get("text", "").strip())
        if self.errors:
            return data
        if has_file and has_text:
            raise forms.ValidationError("Give either a file or pasted text, not both.")
        if not has_file and not has_text:
            raise forms.ValidationError(
                "Choose a transcript file, drop one on the page, or paste one."
            )
        return data

    def database(self) -> UploadedFile | None:
        """The uploaded file if it is an SQLite database (by its header, whatever its name),
        whose sessions are read as an agent's (``inspector.local.databases``)."""
        upload = self.cleaned_data.get("file")
        if upload is None:
            return None
        upload.seek(0)
        head = upload.read(len(databases.SQLITE_HEADER))
        upload.seek(0)
        return upload if databases.is_sqlite(head) else None

    def transcript_bytes(self) -> tuple[bytes, str]:
        """The upload's bytes and its file name (after ``is_valid``)."""
        upload = self.cleaned_data.get("file")
        if upload is not None:
            return b"".join(upload.chunks()), upload.name or "transcript"
        return self.cleaned_data["text"].encode(), "pasted"


def check_days(data: dict[str, Any]) -> dict[str, Any]:
    """A filter form's cleaned ``data``, refused if its "since" day is after its "until".

    The scan's session filters and the project search share these two fields.
    """
    since, until = data.get("since"), data.get("until")
    if since and until and since > until:
        raise forms.ValidationError("“From” is after “To”: no day is in between.")
    return data


class TranscriptFilterForm(forms.Form):
    format = forms.ChoiceField(required=False, label="Shape")
    needs_repair = forms.ChoiceField(
        required=False,
        label="Needs repair",
        choices=[("", "Any"), ("yes", "Needs repair"), ("no", "Healthy")],
    )
    sort = forms.ChoiceField(
        required=False,
        label="Order",
        choices=[("", "Needs repair first"), ("new", "Newest first")],
    )
    page = forms.IntegerField(required=False, min_value=1)

    # What is wrong first (the newest of it first), unless asked for the newest.
    ORDERS = {"": ("-needs_repair", "-created", "-id"), "new": ("-created", "-id")}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["format"]).choices = [("", "Any"), *format_choices()]


class TimelineForm(forms.Form):
    view = forms.ChoiceField(required=False, choices=VIEW_CHOICES)
    rule = forms.ChoiceField(required=False, label="Rule")
    role = forms.ChoiceField(required=False, choices=[("", "Any role"), *ROLE_CHOICES])
    around = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=100,
        label="Show only the rows with findings, and this many rows before and after each",
        help_text="Leave empty to show every row.",
    )
    page = forms.IntegerField(required=False, min_value=1)
    branch = forms.CharField(required=False, max_length=200)
    conversation = forms.IntegerField(required=False, min_value=0)

    def __init__(
        self,
        *args: Any,
        rule_ids: list[str],
        present: dict[str, int] | None = None,
        titles: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        # Any rule id is accepted (a link may name one this transcript lacks), but the
        # menu offers only the rules found here, each with its count.
        rule_field = cast(forms.ChoiceField, self.fields["rule"])
        rule_field.choices = [("", "Any rule")] + [(rule, rule) for rule in rule_ids]
        if present is not None:
            titles = titles or {}
            offered = [
                (rule, f"{rule} {titles.get(rule, '')} ({count:,})".replace("  ", " "))
                for rule, count in present.items()
            ]
            chosen = self.data.get("rule") if self.is_bound else None
            if chosen and chosen in rule_ids and chosen not in present:
                offered.append((chosen, f"{chosen} (none here)"))
            rule_field.widget.choices = [("", "Any rule"), *offered]

    def clean_view(self) -> str:
        return self.cleaned_data.get("view") or "annotated"


class SearchForm(TimelineForm):
    """A search within one transcript: the words, and the view whose pages the hits are on."""

    q = forms.CharField(max_length=200, strip=True, label="Search this transcript")


class ApiUploadForm(forms.Form):
    """Query parameters of ``POST /api/transcripts``."""

    name = forms.CharField(required=False, max_length=255)
    format = forms.ChoiceField(required=False)
    project = forms.CharField(required=False, max_length=200)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["format"]).choices = [("", "auto"), *format_choices()]


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, label="Token name", widget=forms.TextInput(attrs={"placeholder": "ci"})
    )
