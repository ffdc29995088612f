"""The smaller holes of the second hardening round: zips, CSV cells, folders, file counts."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from inspector.scan.downloads import _cell
from inspector.scan.models import ScanJob
from tests.scan.conftest import zip_with
from tests.scan.test_upload import SESSION, post_scan

pytestmark = pytest.mark.django_db


def test_a_zip_of_many_small_members_that_inflate_hugely_together_is_refused(owner_client):
    # Each member is under the size at which one is judged alone; together they are a bomb.
    members = {f"s{n}.jsonl": b"\n" * (900 * 1024) for n in range(20)}
    bomb = zip_with(members)
    response = post_scan(owner_client, ("many.zip", bomb))
    assert response.status_code == 400
    body = response.content.decode()
    assert "would inflate from" in body and "together" in body and "the limit is 100 to 1" in body
    assert not ScanJob.objects.exists()


def test_a_zip_of_ordinary_small_sessions_is_still_taken(owner_client):
    response = post_scan(
        owner_client, ("ok.zip", zip_with({"a.jsonl": SESSION, "b.jsonl": SESSION}))
    )
    assert response.status_code == 302


@pytest.mark.parametrize(
    "value",
    [
        "=1+1",
        "+1",
        "-x",
        "@SUM(A1)",
        " =1+1",
        "\t=1+1",
        "\n=cmd",
        "  @x",
        "\uff1d1+1",  # full-width =
        "\uff0b1",
        "\uff0d1",
        "\uff20SUM(A1)",
        " \uff1dHYPERLINK()",
        "\tplain",
        "\u200b=1+1",  # zero-width space
        "\u200c+1",  # zero-width non-joiner
        "\u200d-1",  # zero-width joiner
        "\u2060@SUM(A1)",  # word joiner
        "\ufeff=HYPERLINK()",  # byte-order mark
        "\u00ad=1",  # soft hyphen
        "\u180e=1",  # Mongolian vowel separator
        "\u202e=1",  # right-to-left override
        "\u034f=1",  # combining grapheme joiner
        "\u3164=1",  # Hangul filler
        "\u00a0\u200b \u2063=cmd",  # no-break space, zero-width space, invisible separator
        "\x00=1",
    ],
)
def test_a_csv_cell_that_a_spreadsheet_would_run_is_kept_as_text(value):
    assert _cell(value) == "'" + value


@pytest.mark.parametrize(
    "value", ["plain", "a=b", "1-2", 3, None, " spaced", "\u200bplain", "x\u200b=1", ""]
)
def test_other_csv_cells_are_left_alone(value):
    assert _cell(value) == value


def test_deleting_a_transcript_leaves_no_empty_folder(
    owner_client, store_for, settings, django_capture_on_commit_callbacks
):
    transcript = store_for(SESSION, "s.jsonl")
    folder = Path(settings.MEDIA_ROOT) / transcript.storage_dir
    assert folder.is_dir()
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(f"/t/{transcript.public_id}/delete/")
    assert response.status_code == 302
    assert not folder.exists()
    assert not folder.parent.exists()  # its fan-out folder held nothing else
    assert not default_storage.exists(transcript.storage_dir)


def test_too_many_files_in_one_scan_upload_names_the_limit(owner_client, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    response = post_scan(owner_client, *[(f"s{n}.jsonl", SESSION) for n in range(5)])
    assert response.status_code == 400
    body = response.content.decode()
    assert "the limit of 3" in body
    assert "INSPECTOR_MAX_UPLOAD_FILES" in body
    assert not ScanJob.objects.exists()


def test_too_many_files_names_the_limit_even_when_csrf_reads_the_body_first(owner, settings):
    from django.test import Client

    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 3
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    secret = "smallitemscsrfsecret0123456789ab"  # 32 characters, as Django's cookie holds
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(owner)
    browser.cookies["csrftoken"] = secret
    files = [SimpleUploadedFile(f"s{n}.jsonl", SESSION) for n in range(5)]
    data = {"project": "web", "files": files, "csrfmiddlewaretoken": secret}
    response = browser.post(reverse("scan:new"), data)
    assert response.status_code == 400
    assert "the limit of 3" in response.content.decode()
