"""Every way a transcript's summary is written fills the columns kept from its meta.

The dashboard sums and dates ``first_at`` and the token columns instead of
reading every row's JSON (``reports.summarize``, ``reports.day_chart``), so a
row whose columns disagree with its meta would count wrongly.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from inspector.web import store
from inspector.web.models import META_COLUMNS, ApiToken, Transcript, meta_columns
from tests.scan.conftest import PROJECTS

pytestmark = pytest.mark.django_db


def _columns(transcript: Transcript) -> dict[str, object]:
    transcript.refresh_from_db()
    return {name: getattr(transcript, name) for name in META_COLUMNS}


def _filled(transcript: Transcript) -> bool:
    return _columns(transcript) == meta_columns(transcript.meta)


@pytest.fixture
def timed(run_scan) -> Transcript:
    """A scanned session whose meta has a first timestamp and token counts."""
    run_scan(PROJECTS)
    scanned = list(Transcript.objects.all())
    assert scanned and all(_filled(t) for t in scanned)
    with_tokens = [t for t in scanned if t.first_at is not None and t.tokens_in and t.tokens_out]
    assert with_tokens, "the corpus has sessions with timestamps and token counts"
    return with_tokens[0]


def test_a_scan_fills_the_columns_of_every_file(timed):
    assert timed.first_at == datetime.fromisoformat(timed.meta["timing"]["first"]).astimezone(UTC)
    assert timed.tokens_in == timed.meta["timing"]["tokens_in"]


@pytest.mark.usefixtures("any_storage")
def test_uploads_copies_the_api_and_rebuilds_fill_the_columns(timed, owner, owner_client):
    data = store.read_raw(timed)
    expected = _columns(timed)
    # A plain store_upload (no project): the same bytes are the scanned transcript ...
    loose = store.store_upload(owner, data, "again.jsonl")[0]
    assert loose.pk == timed.pk
    # ... and in another project a copy of its summary, columns included.
    project = store.project_for(owner, "elsewhere")
    copied, created = store.store_upload(owner, data, "copy.jsonl", project=project)
    assert created and copied.pk != timed.pk and _columns(copied) == expected
    # The web upload form and the API: new bytes, diagnosed again.
    changed = data + b"\n"
    upload = SimpleUploadedFile("t.jsonl", changed, content_type="application/octet-stream")
    assert owner_client.post(reverse("upload"), {"file": upload}).status_code in (200, 302)
    by_form = Transcript.objects.get(owner=owner, project=None, size=len(changed))
    assert _columns(by_form) == expected
    _, token = ApiToken.issue(owner, "ci")
    response = owner_client.post(
        reverse("api_upload"),
        data + b"\n\n",
        content_type="application/json",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code in (200, 201)
    by_api = Transcript.objects.get(owner=owner, size=len(data) + 2)
    assert _columns(by_api) == expected
    # Rebuilding the diagnosis writes them again (an .update(), not a save).
    blank = {"first_at": None, "tokens_in": 0, "tokens_out": 0, "cache_read": 0, "cache_write": 0}
    Transcript.objects.filter(pk=by_api.pk).update(**blank)
    store.rebuild_diagnosis(by_api)
    assert _columns(by_api) == expected


def test_saving_a_changed_meta_saves_its_columns(owner):
    row = Transcript.objects.create(
        owner=owner, file_name="t", format="x", size=1, sha256="a" * 64, meta={}
    )
    assert _columns(row) == meta_columns({})
    row.meta = {"timing": {"first": "2026-03-01T23:30:00-05:00", "tokens_in": 7, "cache_read": 1.5}}
    row.save(update_fields=["meta"])
    assert _columns(row) == {
        "first_at": datetime(2026, 3, 2, 4, 30, tzinfo=UTC),
        "tokens_in": 7,
        "tokens_out": 0,
        "cache_read": 0,
        "cache_write": 0,
    }


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        ({"first": "2026-01-02T03:04:05"}, datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ({"first": "0001-01-01T00:30:00+05:00"}, None),  # before year 1 in UTC
        ({"first": "not a date"}, None),
        ({"first": 17}, None),
        ({}, None),
    ],
)
def test_first_at_reads_a_timestamp_as_the_dashboard_did(timing, expected):
    assert meta_columns({"timing": timing})["first_at"] == expected


def test_token_columns_count_json_integers_only():
    timing = {"tokens_in": True, "tokens_out": 2.0, "cache_read": 2**70, "cache_write": -5}
    assert meta_columns({"timing": timing}) == {
        "first_at": None,
        "tokens_in": 0,
        "tokens_out": 0,
        "cache_read": 0,
        "cache_write": -5,
    }
    assert meta_columns("not a dict")["tokens_in"] == 0
    assert meta_columns({"timing": [1]})["tokens_in"] == 0
