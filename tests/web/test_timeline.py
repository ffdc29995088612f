from __future__ import annotations

import re

import orjson
import pytest
from django.urls import reverse
from django.utils.html import escape

from inspector.web.models import Transcript
from tests.web.conftest import (
    XSS_CANONICAL,
    XSS_TEXT,
    assistant,
    call,
    canonical,
    result,
    user,
)

pytestmark = pytest.mark.django_db


def timeline_url(transcript, **params) -> str:
    from urllib.parse import urlencode

    url = reverse("timeline", args=[transcript.public_id])
    return f"{url}?{urlencode(params)}" if params else url


def row_keys(html: str) -> list[str]:
    return re.findall(r'<article id="(r\d+)"', html)


def test_timeline_header_shows_file_format_count_and_verdicts(owner_client, transcript):
    html = owner_client.get(timeline_url(transcript)).content.decode()
    assert "broken.json" in html and "canonical" in html and "9 messages" in html
    assert "This history needs repair." in html
    # Each provider's verdict before and after, with its own error text behind a chip.
    assert html.count('<details class="chip bad">') >= 1
    assert '<span class="chip ok">accepted</span>' in html


def test_findings_are_badges_that_link_to_their_rules(owner_client, transcript):
    html = owner_client.get(timeline_url(transcript)).content.decode()
    for rule in ("PAIR-1", "ID-1", "PAIR-3"):
        assert f'href="/rules/{rule}/"' in html


def test_the_repair_is_drawn_in_place(owner_client, transcript):
    html = owner_client.get(timeline_url(transcript)).content.decode()
    assert "inserted by the repair: synthetic result" in html
    assert re.search(r'<code class="id">c2</code> → <code class="id new">c2_1</code>', html)
    assert "orphan result, kept as a user note" in html
    assert "span-start" in html and "span-end" in html


@pytest.fixture
def reordered_transcript(store_for):
    """Results out of order (PAIR-2), a blank placeholder (MSG-1), a cut call (INT-1, INT-2)."""
    return store_for(
        canonical(
            user("go"),
            assistant(call("m1", "search"), call("m2", "read")),
            user("steer"),
            result("m2", "two"),
            result("m1", "one"),
            {"role": "assistant", "content": "  "},
            assistant(call("p1", "create_ticket", arguments='{"title": "x'), content="Creating"),
            user("hello"),
        ),
        "reordered.json",
    )


def test_moved_dropped_and_cut_rows_are_drawn_with_their_cause(owner_client, reordered_transcript):
    html = owner_client.get(timeline_url(reordered_transcript)).content.decode()
    moved = re.search(r'<article id="(r\d+)"[^>]*state-moved.*?</article>', html, re.S).group(0)
    assert "moved here" in moved and "stood at message 5" in moved
    link = re.search(r'class="moved-from" href="([^"]+)"', moved).group(1)
    assert "view=original" in link and link.endswith("#" + re.search(r'id="(r\d+)"', moved)[1])
    dropped = re.search(r"<article[^>]*state-dropped.*?</article>", html, re.S).group(0)
    assert "dropped: blank assistant placeholder" in dropped and "(blank)" in dropped
    assert re.search(r'<li class="call removed">.*?removed: cut off mid-arguments', html, re.S)
    assert "inserted by the repair: interruption note" in html
    repaired = owner_client.get(timeline_url(reordered_transcript, view="repaired")).content
    assert b"state-dropped" not in repaired
    assert b'<span class="call-name">create_ticket' not in repaired


def test_findings_list_jumps_to_rows_on_the_same_page(owner_client, transcript):
    html = owner_client.get(timeline_url(transcript)).content.decode()
    anchors = re.findall(r'<li><a href="#(r\d+)">', html)
    assert anchors and set(anchors) <= set(row_keys(html))


def test_original_view_hides_inserted_rows_and_shows_old_ids(owner_client, transcript):
    annotated = owner_client.get(timeline_url(transcript)).content.decode()
    original = owner_client.get(timeline_url(transcript, view="original")).content.decode()
    assert len(row_keys(original)) == 9 < len(row_keys(annotated))
    assert "c2_1" not in original.split('id="timeline"')[1]


def test_repaired_view_shows_new_ids_only(owner_client, transcript):
    html = owner_client.get(timeline_url(transcript, view="repaired")).content.decode()
    rows = html.split('id="timeline"')[1]
    assert '<code class="id">c2_1</code>' in rows
    assert "</code> → <code" not in rows
    assert 'class="mark ins"' not in rows  # marks belong to the annotated view


def test_rule_filter_shows_only_that_rules_rows(owner_client, transcript):
    html = owner_client.get(timeline_url(transcript, rule="ID-1")).content.decode()
    keys = row_keys(html)
    assert keys and all(
        "ID-1" in re.search(rf'<article id="{k}".*?</article>', html, re.S).group(0) for k in keys
    )


def test_role_filter(owner_client, transcript):
    html = owner_client.get(timeline_url(transcript, role="user")).content.decode()
    assert re.findall(r'class="row role-(\w+)', html) and set(
        re.findall(r'class="row role-(\w+)', html)
    ) == {"user"}


def test_only_findings_with_context(owner_client, transcript):
    everything = row_keys(owner_client.get(timeline_url(transcript)).content.decode())
    findings_only = row_keys(owner_client.get(timeline_url(transcript, around=0)).content.decode())
    with_context = row_keys(owner_client.get(timeline_url(transcript, around=1)).content.decode())
    assert len(findings_only) < len(with_context) <= len(everything)


@pytest.mark.parametrize(
    "params",
    [
        {"view": "sideways"},
        {"around": "-1"},
        {"around": "lots"},
        {"rule": "NOT-A-RULE"},
        {"role": "wizard"},
        {"page": "0"},
        {"page": "two"},
    ],
)
def test_bad_filters_are_400(owner_client, transcript, params):
    response = owner_client.get(timeline_url(transcript, **params))
    assert response.status_code == 400
    assert "cannot use" in response.content.decode()


def test_a_page_past_the_end_is_404(owner_client, transcript):
    assert owner_client.get(timeline_url(transcript, page=2)).status_code == 404


def test_htmx_request_gets_the_rows_fragment_not_a_page(owner_client, transcript):
    response = owner_client.get(timeline_url(transcript), HTTP_HX_REQUEST="true")
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'class="site"' not in html
    assert row_keys(html)
    assert "HX-Request" in response["Vary"]


@pytest.fixture
def long_transcript(store_for):
    messages = [user("start")]
    for number in range(150):
        messages += [assistant(call(f"k{number}")), result(f"k{number}")]
    messages += [assistant(call("late"), content="one more"), user("hello?")]
    return store_for(canonical(*messages), "long.json")


def test_long_timelines_load_in_pages_as_you_scroll(owner_client, long_transcript):
    html = owner_client.get(timeline_url(long_transcript)).content.decode()
    assert len(row_keys(html)) == 200
    sentinel = re.search(r'<a class="sentinel" href="([^"]+)" hx-get="([^"]+)"([^>]*)>', html)
    assert sentinel and sentinel.group(1) == sentinel.group(2) == "?page=2"
    assert 'hx-trigger="revealed"' in sentinel.group(3)
    more = owner_client.get(timeline_url(long_transcript, page=2), HTTP_HX_REQUEST="true")
    keys = row_keys(more.content.decode())
    assert keys[0] == "r200" and "<html" not in more.content.decode()
    # The plain link works too: a whole page, with a way back.
    page_two = owner_client.get(timeline_url(long_transcript, page=2)).content.decode()
    assert "<html" in page_two and "Earlier rows" in page_two


def test_a_finding_on_a_later_page_links_to_that_page(owner_client, long_transcript):
    html = owner_client.get(timeline_url(long_transcript)).content.decode()
    links = re.findall(r'<li><a href="(\?page=2#r\d+)">', html)
    assert links
    key = links[0].split("#")[1]
    assert key in row_keys(owner_client.get(timeline_url(long_transcript, page=2)).content.decode())


def test_transcript_content_is_never_rendered_as_html(owner_client, store_for):
    transcript = store_for(XSS_CANONICAL, "xss.json")
    html = owner_client.get(timeline_url(transcript)).content.decode()
    assert "<script>window.__xss" not in html
    assert '<img src=x onerror="window.__xss=1">' not in html
    assert escape(XSS_TEXT) in html
    assert "&lt;b&gt;tool&lt;/b&gt;" in html


def test_resume_instructions_for_a_claude_code_session(owner_client, claude_transcript):
    html = owner_client.get(timeline_url(claude_transcript)).content.decode()
    session = claude_transcript.meta["session_id"]
    assert session and f"claude --resume {session}" in html
    assert "keep a copy of the original" in html


def test_download_original_gives_the_exact_bytes(owner_client, claude_transcript):
    from tests.web.conftest import BROKEN_CLAUDE_CODE

    response = owner_client.get(reverse("download", args=[claude_transcript.public_id, "original"]))
    assert response.content == BROKEN_CLAUDE_CODE.read_bytes()
    assert "attachment" in response["Content-Disposition"]


def test_download_repaired_file_loads_and_needs_no_more_repair(owner_client, claude_transcript):
    from inspector.diagnosis import diagnose
    from inspector.formats import load

    response = owner_client.get(reverse("download", args=[claude_transcript.public_id, "repaired"]))
    assert ".repaired.jsonl" in response["Content-Disposition"]
    again = diagnose(load(response.content))
    assert again.format == "claude-code"
    assert not again.needs_repair and again.findings == []


def test_download_canonical_and_report(owner_client, transcript):
    canonical_json = owner_client.get(reverse("download", args=[transcript.public_id, "canonical"]))
    messages = orjson.loads(canonical_json.content)
    assert isinstance(messages, list) and len(messages) > 9
    report = orjson.loads(
        owner_client.get(reverse("download", args=[transcript.public_id, "report"])).content
    )
    assert report["needs_repair"] and {"PAIR-1", "ID-1", "PAIR-3"} <= set(report["counts"])


def test_unknown_download_is_404(owner_client, transcript):
    url = reverse("download", args=[transcript.public_id, "everything"])
    assert owner_client.get(url).status_code == 404


def test_delete_removes_the_transcript_and_its_bytes(
    owner_client, transcript, django_capture_on_commit_callbacks
):
    from django.core.files.storage import default_storage

    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(reverse("delete", args=[transcript.public_id]))
    assert response.status_code == 302 and response["Location"] == reverse("transcript_list")
    assert not Transcript.objects.filter(pk=transcript.pk).exists()
    assert not default_storage.exists(transcript.raw_path)


def test_a_glued_line_is_marked_on_its_row_and_counts_as_needing_repair(owner_client, store_for):
    # A lost newline (LINE-1): not only in the list of unread lines, but on the row itself.
    envelope = {"sessionId": "s1", "isSidechain": False}
    first = {
        **envelope,
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "message": {"role": "user", "content": "hi"},
    }
    second = {
        **envelope,
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "yo"}]},
    }
    data = orjson.dumps(first) + b"\n" + orjson.dumps(first | {"uuid": "u0"})
    data += orjson.dumps(second | {"parentUuid": "u0"}) + b"\n"
    transcript = store_for(data, "session.jsonl")
    assert transcript.needs_repair
    html = owner_client.get(timeline_url(transcript)).content.decode()
    assert "This history needs repair." in html
    rows = re.findall(r'<article id="(r\d+)"[^>]*>.*?</article>', html, re.S)
    marked = [
        m.group(0)
        for m in re.finditer(r'<article id="r\d+"[^>]*has-findings.*?</article>', html, re.S)
    ]
    assert len(rows) == 3 and len(marked) == 1
    assert 'class="mark glued"' in marked[0] and "line 2" in marked[0]
    assert 'href="/rules/LINE-1/"' in marked[0]


def test_the_line_rule_page_shows_the_lines_before_and_after(client):
    html = client.get(reverse("rule", args=["LINE-1"])).content.decode()
    assert "Two records were written on one line" in html
    assert html.count('<pre class="lines">') == 2
    assert escape('"content":"run the tests"}}{"type":"assistant"') in html


def test_a_body_that_continues_a_stored_response_cannot_be_told(owner_client, store_for):
    # Its call lives in the stored response: Responses can be neither said to accept nor
    # to reject the body, and the chip says why.
    body = {
        "model": "gpt-4o-mini",
        "previous_response_id": "resp_0401",
        "input": [{"type": "function_call_output", "call_id": "call_up", "output": "72F"}],
    }
    stored = store_for(orjson.dumps(body), "continued.json")
    html = owner_client.get(timeline_url(stored)).content.decode()
    assert html.count('<span class="chip warn" title="the request continues') == 2
    assert "previous_response_id resp_0401" in html


def test_the_list_says_cannot_tell_not_accepted_for_a_stored_history(owner_client, store_for):
    body = {
        "model": "gpt-4o-mini",
        "previous_response_id": "resp_0402",
        "input": [{"type": "function_call_output", "call_id": "call_up", "output": "72F"}],
    }
    store_for(orjson.dumps(body), "continued.json")
    html = owner_client.get(reverse("transcript_list")).content.decode()
    assert "Responses: cannot tell (the request continues" in html
    assert '<span class="warn" aria-label="cannot tell">?</span>' in html


def test_an_item_kind_no_check_reads_is_said_on_the_verdict(owner_client, store_for):
    # Neither a silent pass nor a silent reject: the chip says the item was not checked,
    # and that the export leaves it out; so does the list.
    body = {
        "model": "gpt-5",
        "input": [
            {"role": "user", "content": "hi"},
            {"type": "frobnicate_call", "id": "fx_1", "data": 1},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
            },
        ],
    }
    stored = store_for(orjson.dumps(body), "unknown-kind.json")
    html = owner_client.get(timeline_url(stored)).content.decode()
    note = (
        "not checked: unknown item kind frobnicate_call (kept in the file, left out of the export)"
    )
    assert html.count(f'<span class="muted check-note">{note}</span>') == 2
    listing = owner_client.get(reverse("transcript_list")).content.decode()
    assert f"; {note}" in listing
