from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from inspector.web import store
from inspector.web.models import Transcript
from tests.objectstore import stored_names
from tests.web.conftest import BROKEN_CANONICAL, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db


@pytest.mark.usefixtures("any_storage")
def test_upload_keeps_the_bytes_exactly_and_summarises_the_diagnosis(owner):
    transcript, created = store.store_upload(owner, BROKEN_CANONICAL, "broken.json")
    assert created
    assert store.read_raw(transcript) == BROKEN_CANONICAL
    assert transcript.size == len(BROKEN_CANONICAL)
    assert transcript.format == "canonical"
    assert transcript.message_count == 9
    assert transcript.needs_repair
    assert {"PAIR-1", "ID-1", "PAIR-3"} <= set(transcript.counts)
    assert transcript.verdicts["anthropic"]["before_ok"] is False
    assert all(v["after_ok"] for v in transcript.verdicts.values())
    assert re.fullmatch(r"[A-Za-z0-9_-]{16,}", transcript.public_id)
    assert transcript.get_absolute_url() == f"/t/{transcript.public_id}/"
    # The raw bytes are compressed in storage, under a path made from the public id.
    assert transcript.public_id in transcript.raw_path
    with default_storage.open(transcript.raw_path, "rb") as handle:
        assert handle.read() != BROKEN_CANONICAL
    assert stored_names() == sorted(
        [
            transcript.raw_path,
            store._diagnosis_path(transcript.public_id, transcript.engine_version),
        ]
    )


def test_same_bytes_twice_give_the_existing_transcript(owner):
    first, created = store.store_upload(owner, HEALTHY_CANONICAL, "a.json")
    second, created_again = store.store_upload(owner, HEALTHY_CANONICAL, "b.json")
    assert created and not created_again
    assert first.pk == second.pk
    assert Transcript.objects.count() == 1


def test_same_bytes_from_another_user_are_their_own_transcript(owner, other_user):
    mine, _ = store.store_upload(owner, HEALTHY_CANONICAL, "a.json")
    theirs, created = store.store_upload(other_user, HEALTHY_CANONICAL, "a.json")
    assert created and theirs.pk != mine.pk


@pytest.mark.usefixtures("any_storage")
def test_deleting_a_transcript_deletes_its_bytes_and_diagnosis(
    transcript, django_capture_on_commit_callbacks
):
    directory = transcript.storage_dir
    assert len(default_storage.listdir(directory)[1]) == 2  # raw bytes and diagnosis
    with django_capture_on_commit_callbacks(execute=True):
        transcript.delete()
    assert not default_storage.exists(transcript.raw_path)
    assert not default_storage.exists(directory)  # the folder too, not just its files
    assert stored_names() == []


@pytest.mark.usefixtures("any_storage")
def test_queryset_delete_also_deletes_the_bytes(
    owner, store_for, django_capture_on_commit_callbacks
):
    paths = [store_for(data).raw_path for data in (BROKEN_CANONICAL, HEALTHY_CANONICAL)]
    with django_capture_on_commit_callbacks(execute=True):
        Transcript.objects.filter(owner=owner).delete()
    assert not any(default_storage.exists(path) for path in paths)
    assert stored_names() == []


@pytest.mark.usefixtures("any_storage")
def test_a_failed_save_leaves_no_bytes_behind(owner, monkeypatch, settings):
    def refuse(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(Transcript, "save", refuse)
    with pytest.raises(RuntimeError):
        store.store_upload(owner, BROKEN_CANONICAL, "broken.json")
    assert [path for path in Path(settings.MEDIA_ROOT).rglob("*") if path.is_file()] == []
    assert stored_names() == []


@pytest.mark.usefixtures("any_storage")
def test_diagnosis_cache_is_rebuilt_when_the_engine_version_changes(transcript, forget_diagnoses):
    from inspector.diagnosis import ENGINE_VERSION

    Transcript.objects.filter(pk=transcript.pk).update(
        engine_version="0-old", counts={}, needs_repair=False
    )
    old_cache = f"{transcript.storage_dir}/diagnosis-0-old.zst"
    default_storage.save(old_cache, default_storage.open(transcript.raw_path))
    stale = Transcript.objects.get(pk=transcript.pk)
    diagnosis = store.get_diagnosis(stale)
    assert diagnosis.engine_version == ENGINE_VERSION
    fresh = Transcript.objects.get(pk=transcript.pk)
    assert fresh.engine_version == ENGINE_VERSION
    assert fresh.needs_repair and "PAIR-1" in fresh.counts
    assert not default_storage.exists(old_cache)


@pytest.mark.usefixtures("any_storage")
def test_diagnosis_is_read_from_the_storage_cache_without_reparsing(
    transcript, forget_diagnoses, monkeypatch
):
    def no_parsing(*args, **kwargs):
        raise AssertionError("the cache should have been used")

    monkeypatch.setattr(store, "load_bytes", no_parsing)
    monkeypatch.setattr(store, "load_every", no_parsing)
    monkeypatch.setattr(store, "diagnose_file", no_parsing)
    diagnosis = store.get_diagnosis(transcript)
    assert diagnosis.counts == transcript.counts


@pytest.mark.usefixtures("any_storage")
def test_a_missing_cache_file_is_rebuilt(transcript, forget_diagnoses):
    for name in default_storage.listdir(transcript.storage_dir)[1]:
        if name.startswith("diagnosis"):
            default_storage.delete(f"{transcript.storage_dir}/{name}")
    assert store.get_diagnosis(transcript).counts == transcript.counts


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"\x00\x01\x02\xff" * 64, ""),
        (b'{"hello": "\xff\xfe"}', ""),
        (b'{"name": "not a transcript", "version": 3}', ""),
        (b"[1, 2, 3]", ""),
    ],
    ids=["empty", "binary", "invalid-utf8", "json-no-transcript", "list-of-numbers"],
)
def test_unreadable_bytes_raise_a_plain_error_and_store_nothing(owner, data, words):
    with pytest.raises(store.UnreadableTranscript) as error:
        store.store_upload(owner, data, "bad.json")
    assert words in str(error.value).lower()
    assert str(error.value).strip()
    assert Transcript.objects.count() == 0


def test_project_for_makes_a_project_once(owner):
    first = store.project_for(owner, "Payments team")
    again = store.project_for(owner, "payments team")
    assert first.pk == again.pk and first.slug == "payments-team"
    assert store.project_for(owner, "  ") is None


def test_the_cached_diagnosis_reads_back_as_the_to_dict_of_the_diagnosis(
    transcript, forget_diagnoses
):
    import orjson

    from inspector.diagnosis import diagnose

    diagnosis = store.get_diagnosis(transcript)
    expected = diagnose(store.load_transcript(transcript)).to_dict()
    assert diagnosis.to_dict() == expected
    assert orjson.dumps(diagnosis.to_dict()) == orjson.dumps(expected)
