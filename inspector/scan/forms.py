"""Every input of the scan pages: the upload, and the dashboard's filters (downloads too)."""

from __future__ import annotations

import zipfile
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any, cast

from django import forms
from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db.models import F, QuerySet
from django.utils import timezone

from inspector.diagnosis import REPAIR_RULES
from inspector.local.sessions import is_session_name
from inspector.scan.sources import ZipRefused, plan_zip
from inspector.scan.tasks import zip_limits
from inspector.web.forms import check_days, check_size, describe_size, format_choices

if TYPE_CHECKING:
    from inspector.scan.reports import Session


class MultipleFileInput(forms.FileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    widget = MultipleFileInput

    def clean(self, data: Any, initial: Any = None) -> list[UploadedFile]:
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class ScanForm(forms.Form):
    project = forms.CharField(max_length=200, label="Project")
    # An empty session file is scanned and reported unreadable, as on the command line.
    # The form's metaclass moves declared fields into base_fields, so self.files stays the
    # uploaded files; django-stubs sees a class attribute overriding BaseForm.files.
    files = MultipleFileField(label="Session files, or one .zip", allow_empty_file=True)  # type: ignore[assignment]

    def clean_files(self) -> list[UploadedFile]:
        uploads = self.cleaned_data["files"]
        zips = [upload for upload in uploads if (upload.name or "").lower().endswith(".zip")]
        if zips and len(uploads) > 1:
            raise forms.ValidationError(
                "Upload one .zip on its own, or many .json and .jsonl files without a zip."
            )
        if zips:
            _check_zip(zips[0])
            return uploads
        if not any(is_session_name(upload.name or "") for upload in uploads):
            raise forms.ValidationError(
                "None of these is a session file (.json or .jsonl). Choose session files, "
                "or one .zip of a project folder."
            )
        for upload in uploads:
            check_size(upload.size or 0)
        total = sum(upload.size or 0 for upload in uploads)
        if total > settings.INSPECTOR_SCAN_MAX_BYTES:
            raise forms.ValidationError(
                f"These files hold {describe_size(total)}; one scan takes at most "
                f"{describe_size(settings.INSPECTOR_SCAN_MAX_BYTES)}. Upload them in parts."
            )
        return uploads

    @property
    def zip_upload(self) -> UploadedFile | None:
        uploads = self.cleaned_data["files"]
        first = uploads[0]
        return first if (first.name or "").lower().endswith(".zip") else None


def _check_zip(upload: UploadedFile) -> None:
    if (upload.size or 0) > settings.INSPECTOR_SCAN_MAX_BYTES:
        raise forms.ValidationError(
            f"The zip is {describe_size(upload.size or 0)}; one scan takes at most "
            f"{describe_size(settings.INSPECTOR_SCAN_MAX_BYTES)}. Split it into smaller zips."
        )
    try:
        with zipfile.ZipFile(upload) as archive:
            plan = plan_zip(archive, zip_limits())
    except zipfile.BadZipFile as error:
        raise forms.ValidationError(
            f"This is not a zip file that can be read ({error}). Zip the project folder again "
            "and upload that, or upload the session files themselves."
        ) from error
    except ZipRefused as error:
        raise forms.ValidationError(str(error)) from error
    finally:
        upload.seek(0)
    if not plan.members:
        raise forms.ValidationError(
            "The zip holds no session files (.json or .jsonl). " + " ".join(plan.notes)
        )


# The first is the default: what is wrong first, the newest of it first.
SORTS = {
    "-findings": ("Needs repair first", ["-needs_repair", "-problems", "-date", "-id"]),
    "-date": ("Newest first", ["-date", "-id"]),
    "date": ("Oldest first", ["date", "id"]),
    "file": ("File", ["relative_path", "file_name", "id"]),
    "-messages": ("Most messages", ["-message_count", "-id"]),
}
DEFAULT_SORT = next(iter(SORTS))


class SessionFilterForm(forms.Form):
    """The sessions table's filters and order (the CSV and zip downloads take them too)."""

    needs_repair = forms.ChoiceField(
        required=False,
        label="Verdict",
        choices=[("", "Any"), ("yes", "Needs repair"), ("no", "Clean")],
    )
    rule = forms.ChoiceField(
        required=False,
        label="Rule",
        choices=[("", "Any rule"), *[(rule, rule) for rule in REPAIR_RULES]],
    )
    format = forms.ChoiceField(required=False, label="Shape")
    sort = forms.ChoiceField(
        required=False,
        label="Order",
        choices=[(key, label) for key, (label, _) in SORTS.items()],
    )
    # A file with no messages has nothing to read or repair: the table leaves it out
    # unless asked for (``leaves_out_empty``); the downloads of "all" keep every file.
    empty = forms.ChoiceField(
        required=False,
        label="Empty files",
        choices=[("", "Left out"), ("show", "Shown too"), ("only", "Only them")],
    )
    since = forms.DateField(
        required=False, label="From", widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        required=False, label="To", widget=forms.DateInput(attrs={"type": "date"})
    )
    page = forms.IntegerField(required=False, min_value=1)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["format"]).choices = [("", "Any"), *format_choices()]

    def clean(self) -> dict[str, Any]:
        return check_days(super().clean() or {})

    def apply(self, sessions: QuerySet[Session]) -> QuerySet[Session]:
        """``sessions`` filtered and ordered as asked (after ``is_valid``)."""
        data = self.cleaned_data
        if data["needs_repair"]:
            sessions = sessions.filter(needs_repair=data["needs_repair"] == "yes")
        if data["rule"]:
            sessions = sessions.filter(counts__has_key=data["rule"])
        if data["format"]:
            sessions = sessions.filter(format=data["format"])
        if data["empty"] == "only":
            sessions = sessions.filter(message_count=0)
        # The day a session is listed under (when it began, else its upload), both days in,
        # in the current time zone: as moments, so an index of the dates finds them.
        # (The first and last days a date holds leave nothing out.)
        if data["since"] and data["since"] > date.min:
            sessions = sessions.filter(date__gte=_day_starts(data["since"]))
        if data["until"] and data["until"] < date.max:
            sessions = sessions.filter(date__lt=_day_starts(data["until"] + timedelta(days=1)))
        order = SORTS[data["sort"] or DEFAULT_SORT][1]
        return sessions.order_by(*[_order(field) for field in order])

    @property
    def leaves_out_empty(self) -> bool:
        return not self.cleaned_data.get("empty")

    @property
    def filtered(self) -> bool:
        names = ("needs_repair", "rule", "format", "empty", "since", "until")
        return any(self.cleaned_data.get(name) for name in names)


def _order(field: str) -> Any:
    # No key of a sort is ever null (the date falls back on the upload's), so each is
    # ordered plainly: with NULLS LAST, PostgreSQL could not walk an index backwards
    # for a descending order.
    if field.startswith("-"):
        return F(field[1:]).desc()
    return F(field).asc()


def _day_starts(day: date) -> datetime:
    """The first moment of ``day`` in the current time zone."""
    return timezone.make_aware(datetime.combine(day, time.min))
