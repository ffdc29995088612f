"""The chunked diagnosis cache: pages read from storage alone show what ``diagnose`` says."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from html import unescape
from urllib.parse import urlencode

import orjson
import pytest
import zstandard
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils.html import escape

from inspector import formats
from inspector.diagnosis import ENGINE_VERSION, diagnose, report_from
from inspector.diagnosis import stored as cachefile
from inspector.diagnosis.select import PAGE_SIZE
from inspector.web import store
from tests.web.conftest import BROKEN_LONG, broken_history, unanswered_calls

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[7, cachefile.CHUNK_ROWS], ids=["chunks-of-7", "default-chunks"])
def long_transcript(request, monkeypatch, store_for):
    # Chunks of 7 rows put a chunk boundary inside every page and every filtered run.
    monkeypatch.setattr(cachefile, "CHUNK_ROWS", request.param)
    return store_for(BROKEN_LONG, "long.json")


@pytest.fixture
def fresh():
    """The diagnosis made right here, never stored."""
    return diagnose(formats.load(BROKEN_LONG))


def timeline_url(transcript, **params) -> str:
    url = reverse("timeline", args=[transcript.public_id])
    return f"{url}?{urlencode(params)}" if params else url


def cold_get(client, url: str, **headers):
    """A request as a fresh process (or another worker) serves it: from storage only."""
    store._memory.clear()
    return client.get(url, **headers)


def row_keys(html: str) -> list[str]:
    return re.findall(r'<article id="(r\d+)"', html)


def expected_keys(rows, view="annotated", rule="", role="", around=None) -> list[str]:
    """What a filtered view shows, worked out from whole rows: the test's own oracle."""
    if view == "original":
        rows = sorted((r for r in rows if r["in_original"]), key=lambda r: r["input_index"])
    elif view == "repaired":
        rows = [r for r in rows if r["in_repaired"]]
    if role:
        shown = (lambda r: r["original_role"] or r["role"]) if view == "original" else None
        rows = [r for r in rows if (shown(r) if shown else r["role"]) == role]
    if around is None:
        return [r["key"] for r in rows if not rule or rule in r["findings"]]
    hits = [i for i, r in enumerate(rows) if (rule in r["findings"] if rule else r["findings"])]
    return [r["key"] for i, r in enumerate(rows) if any(abs(i - hit) <= around for hit in hits)]


VIEWS = [
    {},
    {"view": "original"},
    {"view": "repaired"},
    {"rule": "ID-1"},
    {"role": "tool", "view": "original"},
    {"role": "user"},
    {"around": 0},
    {"around": 1, "rule": "PAIR-2"},
    {"around": 2, "rule": "PAIR-1", "view": "repaired"},
]


@pytest.mark.parametrize("params", VIEWS, ids=lambda p: urlencode(p) or "annotated")
def test_every_page_of_a_view_read_from_storage_shows_the_rows_diagnose_gives(
    owner_client, long_transcript, fresh, params
):
    expected = expected_keys(fresh.rows, **params)
    assert expected  # each view shows something, or the test would prove nothing
    pages = -(-len(expected) // PAGE_SIZE)
    shown = []
    for page in range(1, pages + 1):
        response = cold_get(owner_client, timeline_url(long_transcript, **params, page=page))
        assert response.status_code == 200
        assert response.context["row_total"] == len(expected)
        shown.append(row_keys(response.content.decode()))
    assert [key for keys in shown for key in keys] == expected
    assert all(len(keys) == PAGE_SIZE for keys in shown[:-1])
    past_the_end = timeline_url(long_transcript, **params, page=pages + 1)
    assert cold_get(owner_client, past_the_end).status_code == 404


def _timeline_and_findings(html: str) -> tuple[str, str]:
    rows = html[html.index('<div class="timeline') : html.index("</section>\n</div>")]
    findings = re.search(r'<section class="findings">.*?</section>', html, re.S).group(0)
    return rows, findings


@pytest.mark.parametrize(
    "params",
    [{}, {"page": 3}, {"view": "original", "page": 2}, {"role": "user"}, {"rule": "PAIR-1"}],
    ids=["first-page", "later-page", "original-later-page", "role-filter", "rule-filter"],
)
def test_a_page_from_storage_is_the_page_of_the_diagnosis_made_directly(
    owner_client, long_transcript, fresh, monkeypatch, params
):
    url = timeline_url(long_transcript, **params)
    from_storage = cold_get(owner_client, url).content.decode()
    monkeypatch.setattr(store, "get_diagnosis", lambda transcript: fresh)
    direct = owner_client.get(url).content.decode()
    assert _timeline_and_findings(from_storage) == _timeline_and_findings(direct)
    assert row_keys(from_storage)


def test_htmx_later_page_from_storage_is_the_fragment_of_those_rows(
    owner_client, long_transcript, fresh
):
    response = cold_get(owner_client, timeline_url(long_transcript, page=3), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert "<html" not in html
    assert row_keys(html) == [row["key"] for row in fresh.rows[2 * PAGE_SIZE : 3 * PAGE_SIZE]]


@pytest.mark.parametrize("params", [{}, {"role": "user"}, {"view": "original", "page": 2}])
def test_every_jump_to_a_finding_lands_on_the_page_that_shows_it(
    owner_client, long_transcript, fresh, params
):
    html = cold_get(owner_client, timeline_url(long_transcript, **params)).content.decode()
    findings = re.search(r'<section class="findings">.*?</section>', html, re.S).group(0)
    links = re.findall(r'<li><a href="([^"]*)#(r\d+)">', findings)
    # 25 of each of the five rules; some on other pages of this view.
    assert len(links) == 5 * 25 and any(query for query, _ in links)
    pages = {"": row_keys(html)}
    for query, key in links:
        if query not in pages:
            url = timeline_url(long_transcript) + unescape(query)
            pages[query] = row_keys(cold_get(owner_client, url).content.decode())
        assert key in pages[query], (query, key)
    assert sorted(fresh.counts) == sorted(
        re.findall(r'class="badge" href="/rules/([^/]+)/">', findings)
    )


@pytest.mark.usefixtures("any_storage")
def test_the_stored_diagnosis_reads_back_whole(long_transcript, fresh, forget_diagnoses):
    assert store.get_page_diagnosis(long_transcript).to_dict() == fresh.to_dict()
    store._memory.clear()
    stored = store.get_diagnosis(long_transcript)
    assert isinstance(stored.rows, cachefile.StoredRows)
    assert stored.to_dict() == fresh.to_dict()
    assert len(stored.rows) == len(fresh.rows) and len(stored.findings) == len(fresh.findings)
    assert list(stored.rows) == fresh.rows
    assert stored.rows[0] == fresh.rows[0] and stored.rows[-1] == fresh.rows[-1]
    assert stored.rows[190:215] == fresh.rows[190:215]
    assert stored.rows[::97] == fresh.rows[::97]
    with pytest.raises(IndexError):
        stored.rows[len(fresh.rows)]


@pytest.mark.usefixtures("any_storage")
def test_a_later_page_reads_a_small_part_of_the_cache(
    owner_client, store_for, monkeypatch, forget_diagnoses
):
    transcript = store_for(broken_history(1500), "longer.json")  # 3,305 rows, 17 pages
    path = store._diagnosis_path(transcript.public_id, ENGINE_VERSION)
    size = default_storage.size(path)
    read = {"bytes": 0}
    real_open = default_storage.open

    class Counting:
        def __init__(self, handle):
            self.handle = handle

        def read(self, *args):
            data = self.handle.read(*args)
            read["bytes"] += len(data)
            return data

        def __getattr__(self, name):
            return getattr(self.handle, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    monkeypatch.setattr(default_storage, "open", lambda *a, **k: Counting(real_open(*a, **k)))
    response = cold_get(owner_client, timeline_url(transcript, page=9))
    assert response.status_code == 200 and len(row_keys(response.content.decode())) == PAGE_SIZE
    assert 0 < read["bytes"] < size / 4


def _cache_names(transcript) -> list[str]:
    return sorted(default_storage.listdir(transcript.storage_dir)[1])


def _old_layout_blob(diagnosis) -> bytes:
    # What the cache held before the chunked layout: one compressed document.
    return zstandard.ZstdCompressor(level=3).compress(orjson.dumps(diagnosis))


@pytest.mark.usefixtures("any_storage")
def test_a_cache_of_the_old_single_document_layout_is_rebuilt_and_removed(
    transcript, forget_diagnoses, monkeypatch
):
    fresh = diagnose(store.load_transcript(transcript))
    current = _cache_names(transcript)
    for name in current:
        if name.startswith("diagnosis-"):
            default_storage.delete(f"{transcript.storage_dir}/{name}")
    old = f"{transcript.storage_dir}/diagnosis-{ENGINE_VERSION}.zst"
    default_storage.save(old, ContentFile(_old_layout_blob(fresh)))
    reads = []
    real_diagnose = store.diagnose_file
    monkeypatch.setattr(store, "diagnose_file", lambda *a: reads.append(1) or real_diagnose(*a))

    diagnosis = store.get_diagnosis(transcript)

    assert reads == [1]  # rebuilt from the raw bytes
    assert diagnosis.to_dict() == fresh.to_dict()
    assert _cache_names(transcript) == current  # raw bytes and the new cache only
    store._memory.clear()
    assert store.get_diagnosis(transcript).to_dict() == fresh.to_dict()
    assert reads == [1]  # and read from the new cache next time


@pytest.mark.usefixtures("any_storage")
@pytest.mark.parametrize(
    "damage",
    [
        lambda data, fresh: data[: len(data) // 2],
        lambda data, fresh: data[: cachefile.PREFIX.size + 3],
        lambda data, fresh: b"",
        lambda data, fresh: _old_layout_blob(fresh),
        lambda data, fresh: data[:40] + b"\0" * (len(data) - 40),
    ],
    ids=["cut-in-half", "cut-in-the-header", "empty", "old-layout-under-the-new-name", "zeroed"],
)
def test_a_cache_that_does_not_read_whole_is_rebuilt(transcript, forget_diagnoses, damage):
    fresh = diagnose(store.load_transcript(transcript))
    path = store._diagnosis_path(transcript.public_id, ENGINE_VERSION)
    with default_storage.open(path, "rb") as handle:
        whole = handle.read()
    default_storage.delete(path)
    default_storage.save(path, ContentFile(damage(whole, fresh)))

    assert store.get_diagnosis(transcript).to_dict() == fresh.to_dict()
    with default_storage.open(path, "rb") as handle:
        assert handle.read() == whole


@pytest.mark.usefixtures("any_storage")
def test_deleting_a_transcript_removes_every_file_and_what_memory_holds(
    owner_client, long_transcript, django_capture_on_commit_callbacks
):
    owner_client.get(timeline_url(long_transcript))  # held in memory now
    assert any(key[0] == long_transcript.public_id for key in store._memory)
    assert len(_cache_names(long_transcript)) == 2
    with django_capture_on_commit_callbacks(execute=True):
        owner_client.post(reverse("delete", args=[long_transcript.public_id]))
    assert not default_storage.exists(long_transcript.storage_dir)  # no empty folder left
    assert not any(key[0] == long_transcript.public_id for key in store._memory)


def test_threads_sharing_one_stored_diagnosis_each_get_their_own_rows_and_lists(
    store_for, monkeypatch, forget_diagnoses
):
    monkeypatch.setattr(cachefile, "CHUNK_ROWS", 7)
    fresh = diagnose(formats.load(unanswered_calls(250)))
    transcript = store_for(unanswered_calls(250), "unanswered.json")
    store._memory.clear()
    stored = store.get_page_diagnosis(transcript)
    start = threading.Barrier(8)

    def read(number: int):
        start.wait()
        rows = stored.rows.take(range(number, len(fresh.rows), 8))
        return rows, list(stored.findings), list(stored.providers["responses"]["before"])

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(read, range(8)))
    for number, (rows, findings, issues) in enumerate(answers):
        assert rows == fresh.rows[number::8]
        assert findings == fresh.findings
        assert issues == fresh.providers["responses"]["before"]


def test_rows_of_a_cache_replaced_since_it_was_opened_are_refused(tmp_path):
    path = tmp_path / "diagnosis.bin"
    first = diagnose(formats.load(broken_history(30)))
    path.write_bytes(cachefile.encode(first, 25).data)
    opened = cachefile.read(lambda: path.open("rb"))
    assert opened.rows[3] == first.rows[3]
    path.write_bytes(cachefile.encode(diagnose(formats.load(broken_history(31))), 25).data)
    with pytest.raises(cachefile.Unreadable):
        opened.rows[3]
    with pytest.raises(cachefile.Unreadable):
        next(iter(opened.rows))


def test_a_page_of_a_badly_broken_transcript_reads_only_the_head_of_its_long_lists(
    owner_client, store_for, monkeypatch, refuse_long_lists
):
    fresh = diagnose(formats.load(unanswered_calls(250)))
    issues = len(fresh.providers["openai-chat"]["before"])
    assert issues > cachefile.AT_HAND and len(fresh.findings) > cachefile.AT_HAND
    transcript = store_for(unanswered_calls(250), "unanswered.json")

    html = cold_get(owner_client, timeline_url(transcript, page=2)).content.decode()

    assert f"{len(fresh.findings)} findings below" in html
    assert f"rejected ({issues})" in html and f"and {issues - 20} more" in html
    first = fresh.providers["openai-chat"]["before"][0]["text"]
    assert escape(first) in html


def test_the_report_of_a_badly_broken_transcript_has_every_list_whole(
    owner_client, store_for, forget_diagnoses
):
    fresh = diagnose(formats.load(unanswered_calls(250)))
    transcript = store_for(unanswered_calls(250), "unanswered.json")
    store._memory.clear()
    url = reverse("download", args=[transcript.public_id, "report"])
    assert orjson.loads(owner_client.get(url).content) == orjson.loads(
        orjson.dumps(report_from(fresh))
    )
    stored = store.get_page_diagnosis(transcript)
    assert stored.findings[-1] == fresh.findings[-1] and stored.findings[5:9] == fresh.findings[5:9]
    assert stored.interrupted == fresh.interrupted
    assert (
        stored.providers["openai-chat"]["before"][-3:]
        == fresh.providers["openai-chat"]["before"][-3:]
    )
