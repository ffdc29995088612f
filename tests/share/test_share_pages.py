"""The shared pages: who gets in, what every mode shows, and what never leaves the server."""

from __future__ import annotations

import logging
from datetime import timedelta

import orjson
import pytest
from django.urls import reverse

from inspector import formats
from inspector.share.models import ShareLink
from tests.diagnosis.test_redact import PLANTED
from tests.formats.registry import seed_of
from tests.testdata import read
from tests.web.conftest import assistant, call, canonical, result, user

pytestmark = pytest.mark.django_db

CANARY = "CANARYzq81"
# A transcript with the canary in every content field: system prompt, user
# text, assistant text, thinking, an image URL, tool arguments (a value and a
# key), tool results (text and parts), an orphan result, user metadata, an
# unreadable record, and the file name.
CANARY_MESSAGES = [
    {"role": "system", "content": f"You are {CANARY}."},
    {"role": "user", "content": f"Find {CANARY} for me"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": f"I think {CANARY}"},
            {"type": "text", "text": f"Looking for {CANARY}."},
            {"type": "image", "url": f"https://img.example/{CANARY}.png"},
        ],
        "metadata": {
            "tool_calls": [
                {"tool_call_id": "c1", "name": "search", "arguments": {"q": CANARY}},
                {"tool_call_id": "c2", "name": "fetch", "arguments": f'{{"{CANARY}": 1}}'},
            ]
        },
    },
    {"role": "tool", "content": f"found {CANARY}", "metadata": {"tool_call_id": "c2"}},
    {
        "role": "tool",
        "content": [{"type": "text", "text": f"stray {CANARY}"}],
        "metadata": {"tool_call_id": "nope"},
    },
    {"role": "user", "content": f"and {CANARY}", "metadata": {"note": CANARY}},
    {"role": CANARY, "content": CANARY},
    {
        "role": "assistant",
        "content": "",
        "metadata": {"tool_calls": [{"tool_call_id": "c2", "name": "fetch", "arguments": {}}]},
    },
]
CANARY_NAME = f"{CANARY}-session.json"

# A Claude Code session: the canary also in cwd, a summary record and a tool_use input.
SESSION = "5a3bb1c8-c3ce-466e-b487-24212cbf1da1"


def cc_record(kind: str, uid: str, parent: str | None, content: object) -> dict:
    message: dict = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = f"msg_{uid}"
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": SESSION,
        "cwd": f"/home/{CANARY}/project",
        "type": kind,
        "message": message,
        "uuid": uid,
        "timestamp": "2026-01-01T00:00:00Z",
    }


CANARY_CLAUDE_CODE = b"".join(
    orjson.dumps(record) + b"\n"
    for record in [
        {"type": "summary", "summary": f"Summary {CANARY}", "leafUuid": "u4"},
        cc_record("user", "u1", None, f"Please {CANARY}"),
        cc_record(
            "assistant",
            "u2",
            "u1",
            [
                {"type": "thinking", "thinking": f"hmm {CANARY}", "signature": "sig"},
                {"type": "text", "text": f"On it {CANARY}"},
                {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"cmd": CANARY}},
                {"type": "tool_use", "id": "toolu_02", "name": "Read", "input": {"p": CANARY}},
            ],
        ),
        cc_record(
            "user",
            "u3",
            "u2",
            [{"type": "tool_result", "tool_use_id": "toolu_02", "content": f"out {CANARY}"}],
        ),
        cc_record("assistant", "u4", "u3", [{"type": "text", "text": f"Done {CANARY}"}]),
    ]
)

# Every credential shape the detector promises, planted in text, arguments,
# results, thinking and the file name of a full-mode link.
SECRETS = {
    **PLANTED,
    "bearer token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123",
    "AWS secret key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "assigned secret": "9f8Q2mZx7LkP4vBn3TqW8yR1",
    "private key": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
}
KEY_BLOCK = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    f"{SECRETS['private key']}\n"
    "-----END OPENSSH PRIVATE KEY-----"
)


def secret_messages() -> bytes:
    s = SECRETS
    return canonical(
        user(f"keys: {s['OpenAI key']} and {s['Anthropic key']}"),
        assistant(
            call("c1", "shell", {"cmd": f"curl -H 'Authorization: Bearer {s['bearer token']}'"}),
            call("c2", "write", {"api_key": s["assigned secret"], "gh": s["GitHub token"]}),
            call("c3", "env"),
            content=f"aws_secret_access_key = {s['AWS secret key']}",
        ),
        result("c1", f"{KEY_BLOCK}\nAWS_ACCESS_KEY_ID={s['AWS access key id']}"),
        result("c2", f"google {s['Google API key']}"),
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"slack {s['Slack token']}"},
                {"type": "text", "text": f"hook {s['Slack webhook']}"},
            ],
        },
        user("thanks"),
    )


SECRET_NAME = f"{SECRETS['GitHub token']}.json"


def share_url(token: str, **query: str) -> str:
    url = reverse("shared_timeline", args=[token])
    if query:
        url += "?" + "&".join(f"{key}={value}" for key, value in query.items())
    return url


def download_url(token: str, kind: str) -> str:
    return reverse("shared_download", args=[token, kind])


def every_response(client, token: str, mode: str) -> dict[str, bytes]:
    """The page in each view, an htmx fragment, and every download the mode allows."""
    bodies = {}
    for view in ("annotated", "original", "repaired"):
        response = client.get(share_url(token, view=view))
        assert response.status_code == 200, view
        bodies[f"page {view}"] = response.content
    fragment = client.get(share_url(token, around="0"), HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and b"<html" not in fragment.content
    bodies["fragment"] = fragment.content
    # The one-file HTML export and the Markdown too (issue 31): masked or redacted as the
    # page is.
    kinds = (
        ("repaired", "canonical", "report", "html", "markdown", "original")
        if mode == "full"
        else ("report", "html", "markdown")
    )
    for kind in kinds:
        response = client.get(download_url(token, kind))
        assert response.status_code == 200, kind
        bodies[f"download {kind}"] = response.content
        bodies[f"file name {kind}"] = response["Content-Disposition"].encode()
    return bodies


# --- who gets in ---------------------------------------------------------------


@pytest.mark.usefixtures("any_storage")
def test_anyone_with_the_token_sees_the_timeline_without_signing_in(client, make_link):
    link, token = make_link("full")
    response = client.get(share_url(token))
    assert response.status_code == 200
    body = response.content.decode()
    assert "broken.json" in body and "Shared, read-only" in body
    assert 'class="badge" href="/rules/PAIR-1/"' in body
    assert "Looking." in body and "ticket 7" in body  # full mode shows content
    assert reverse("delete", args=[link.transcript.public_id]) not in body
    assert reverse("download", args=[link.transcript.public_id, "original"]) not in body
    link.refresh_from_db()
    assert link.view_count == 1


def test_rule_links_from_a_shared_page_open_for_an_anonymous_visitor(client, make_link):
    _, token = make_link()
    assert client.get(share_url(token)).status_code == 200
    assert client.get(reverse("rule", args=["PAIR-1"])).status_code == 200


def test_htmx_pages_of_a_shared_timeline_come_back_as_fragments(client, store_for, make_link):
    messages = [user(f"message {n}") for n in range(450)]
    transcript = store_for(canonical(*messages), "long.json")
    _, token = make_link("full", for_transcript=transcript)
    first = client.get(share_url(token)).content.decode()
    assert 'hx-get="?page=2"' in first
    second = client.get(share_url(token, page="2"), HTTP_HX_REQUEST="true")
    assert second.status_code == 200 and b"<html" not in second.content
    assert b"message 200" in second.content and b'hx-get="?page=3"' in second.content
    link = ShareLink.objects.get()
    assert link.view_count == 1  # fragments are not views


def test_bad_filters_on_a_shared_page_are_400(client, make_link):
    _, token = make_link()
    assert client.get(share_url(token, view="secret")).status_code == 400


def not_found_bodies(client, tokens: list[str]) -> list[bytes]:
    bodies = []
    for token in tokens:
        for url in (share_url(token), download_url(token, "report")):
            response = client.get(url)
            assert response.status_code == 404, url
            bodies.append(response.content)
    return bodies


def test_unknown_revoked_and_expired_tokens_get_the_same_404(client, make_link, freeze_time):
    revoked, revoked_token = make_link()
    revoked.revoke()
    _, expiring_token = make_link("full", "1")
    assert client.get(share_url(expiring_token)).status_code == 200
    freeze_time(timedelta(days=1, seconds=1))
    unknown = "A" * 43
    bodies = not_found_bodies(client, [unknown, revoked_token, expiring_token, "x"])
    assert len(set(bodies)) == 1
    assert b"This link opens nothing" in bodies[0]
    assert b"revoked" in bodies[0] and b"expired" in bodies[0]  # it names all three, picks none


def test_a_link_still_opens_just_before_it_expires(client, make_link, freeze_time):
    _, token = make_link("redacted", "7")
    freeze_time(timedelta(days=7) - timedelta(seconds=5))
    assert client.get(share_url(token)).status_code == 200
    freeze_time(timedelta(days=7, seconds=5))
    assert client.get(share_url(token)).status_code == 404


def test_a_never_expiring_link_opens_years_later(client, make_link, freeze_time):
    _, token = make_link("redacted", "never")
    freeze_time(timedelta(days=3650))
    assert client.get(share_url(token)).status_code == 200


def test_a_link_dies_with_its_transcript(client, make_link):
    link, token = make_link()
    link.transcript.delete()
    assert client.get(share_url(token)).status_code == 404


def test_the_lookup_is_one_query_by_the_hash_of_the_token(make_link, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from inspector.share.views import _live_link

    link, token = make_link()
    link.revoke()
    for candidate in (token, token[:-1] + ("A" if token[-1] != "A" else "B")):
        with CaptureQueriesContext(connection) as queries, pytest.raises(Exception):  # noqa: B017
            _live_link(candidate)
        assert len(queries) == 1
        assert token not in queries[0]["sql"] and "token_hash" in queries[0]["sql"]


def test_a_download_the_mode_does_not_allow_is_the_same_404(client, make_link):
    _, token = make_link("redacted")
    unknown = client.get(download_url("B" * 43, "original"))
    for kind in ("repaired", "canonical", "original", "nonsense"):
        response = client.get(download_url(token, kind))
        assert response.status_code == 404
        assert response.content == unknown.content


@pytest.mark.parametrize("mode", ["full", "redacted"])
def test_share_pages_send_privacy_headers(client, make_link, mode):
    _, token = make_link(mode)
    responses = [
        client.get(share_url(token)),
        client.get(share_url(token), HTTP_HX_REQUEST="true"),
        client.get(download_url(token, "report")),
        client.get(share_url("C" * 43)),
        client.get(share_url(token, view="nope")),
        client.post(share_url(token)),
    ]
    assert [r.status_code for r in responses] == [200, 200, 200, 404, 400, 405]
    for response in responses:
        assert response["Referrer-Policy"] == "no-referrer"
        assert "noindex" in response["X-Robots-Tag"]
        assert response["Cache-Control"] == "private, no-store"
    page = responses[0]
    assert "script-src" in page["Content-Security-Policy"]
    assert b'<meta name="referrer" content="no-referrer">' in page.content


# --- redacted mode: nothing of the content leaves ------------------------------


@pytest.mark.parametrize(
    ("data", "name"),
    [
        (orjson.dumps(CANARY_MESSAGES), CANARY_NAME),
        (CANARY_CLAUDE_CODE, f"{CANARY}.jsonl"),
    ],
    ids=["canonical", "claude-code"],
)
def test_canary_in_every_content_field_never_reaches_a_redacted_link(
    client, store_for, make_link, data, name
):
    transcript = store_for(data, name)
    _, token = make_link("redacted", for_transcript=transcript)
    for what, body in every_response(client, token, "redacted").items():
        assert CANARY.encode() not in body, what
        assert CANARY.lower().encode() not in body.lower(), what


def test_redacted_link_keeps_structure_and_every_finding(client, store_for, make_link):
    transcript = store_for(orjson.dumps(CANARY_MESSAGES), CANARY_NAME)
    _, token = make_link("redacted", for_transcript=transcript)
    body = client.get(share_url(token)).content.decode()
    for rule in ("PAIR-1", "PAIR-3", "ID-1"):
        assert f'class="badge" href="/rules/{rule}/"' in body
    assert "search" in body and "fetch" in body  # tool names
    assert ">c1<" in body and ">c2<" in body and "c2_1" in body  # ids, renamed old → new
    assert "span-start" in body  # spans
    assert "rejected" in body and "accepted" in body  # provider verdicts
    assert "[redacted: 22 characters]" in body  # "Find CANARYzq81 for me"
    assert "A shared transcript" in body and "Shared, redacted" in body
    report = orjson.loads(client.get(download_url(token, "report")).content)
    assert report["shared"] == "redacted"
    assert report["counts"] == {"PAIR-1": 2, "PAIR-3": 1, "ID-1": 1}
    assert [row["role"] for row in report["timeline"]][:3] == ["system", "user", "assistant"]
    assert report["timeline"][1]["text"] == "[redacted: 22 characters]"
    assert report["interrupted"][0] == {
        "id": "c1",
        "name": "search",
        "arguments": "[redacted: 18 characters]",  # {"q":"CANARYzq81"}
    }


def test_a_redacted_link_shows_lengths_of_long_clipped_texts(client, store_for, make_link):
    from inspector.diagnosis import TEXT_LIMIT

    transcript = store_for(canonical(user("x" * (TEXT_LIMIT + 1234))), "long-text.json")
    _, token = make_link("redacted", for_transcript=transcript)
    body = client.get(share_url(token)).content.decode()
    assert f"[redacted: {TEXT_LIMIT + 1234:,} characters]" in body
    assert "xxxxxxxx" not in body


# --- full mode: everything but the secrets ----------------------------------------


def test_planted_credentials_are_masked_everywhere_in_a_full_link(client, store_for, make_link):
    transcript = store_for(secret_messages(), SECRET_NAME)
    _, token = make_link("full", for_transcript=transcript)
    bodies = every_response(client, token, "full")
    for what, body in bodies.items():
        for kind, secret in SECRETS.items():
            assert secret.encode() not in body, (what, kind)
            # JSON writes "/" as "\/" only if asked; check the escaped form anyway.
            assert secret.replace("/", "\\/").encode() not in body, (what, kind)
    page = bodies["page annotated"].decode()
    assert "[masked OpenAI key" in page and "[masked private key" in page
    assert "curl -H" in page  # the rest of the content is there
    assert "[masked GitHub token, 40 chars].json" in page  # the file name too


@pytest.mark.usefixtures("any_storage")
def test_masked_full_downloads_are_still_files_of_their_shape(client, store_for, make_link):
    transcript = store_for(secret_messages(), SECRET_NAME)
    _, token = make_link("full", for_transcript=transcript)
    original = client.get(download_url(token, "original")).content
    reloaded = formats.load(original)
    assert reloaded.format == "canonical" and len(reloaded.messages) == 6
    repaired = formats.load(client.get(download_url(token, "repaired")).content)
    assert repaired.format == "canonical"
    canonical_json = orjson.loads(client.get(download_url(token, "canonical")).content)
    assert isinstance(canonical_json, list)
    report = orjson.loads(client.get(download_url(token, "report")).content)
    assert report["counts"]["PAIR-1"] == 1
    name = client.get(download_url(token, "report"))["Content-Disposition"]
    assert "masked GitHub token" in name and SECRETS["GitHub token"] not in name


def test_masked_jsonl_original_keeps_one_record_a_line(client, store_for, make_link):
    secret = SECRETS["OpenAI key"]
    data = CANARY_CLAUDE_CODE.replace(CANARY.encode(), secret.encode())
    transcript = store_for(data, "session.jsonl")
    _, token = make_link("full", for_transcript=transcript)
    original = client.get(download_url(token, "original")).content
    assert secret.encode() not in original
    assert original.count(b"\n") == data.count(b"\n")
    assert formats.load(original).format == "claude-code"
    repaired = client.get(download_url(token, "repaired")).content
    assert secret.encode() not in repaired
    assert formats.load(repaired).format == "claude-code"


# --- logs --------------------------------------------------------------------------


def test_share_tokens_never_reach_the_request_log(client, make_link, caplog):
    link, token = make_link()
    link.revoke()
    with caplog.at_level(logging.INFO):
        client.get(share_url(token))
        client.get(download_url(token, "report"))
    assert "Not Found" in caplog.text
    assert token not in caplog.text
    assert "/s/[redacted]/" in caplog.text
    assert all(not hasattr(record, "request") for record in caplog.records)


def test_the_log_filter_is_installed_where_request_paths_are_logged():
    from inspector.share.logfilter import RedactShareTokens

    for name in ("django.request", "django.server"):
        filters = logging.getLogger(name).filters
        assert any(isinstance(f, RedactShareTokens) for f in filters), name
    handlers = logging.getLogger().handlers
    assert any(isinstance(f, RedactShareTokens) for handler in handlers for f in handler.filters)


@pytest.mark.parametrize("shape", list(formats.FORMATS))
def test_a_download_of_a_file_without_an_extension_takes_its_shapes(
    client, owner_client, store_for, make_link, shape
):
    """The shared and the owner's repaired download name the shape's EXTENSION (one file of
    each registered shape, named without one), never a list of JSONL shapes."""
    seed = seed_of(shape)
    assert seed is not None
    transcript = store_for(read(seed), "session")
    assert transcript.format == shape
    _, token = make_link("full", for_transcript=transcript)
    shared = client.get(download_url(token, "repaired"))["Content-Disposition"]
    owned = owner_client.get(reverse("download", args=[transcript.public_id, "repaired"]))
    wanted = f'session.repaired.{formats.FORMATS[shape].EXTENSION}"'
    assert shared.endswith(wanted) and owned["Content-Disposition"].endswith(wanted)


@pytest.mark.parametrize("mode", ["full", "redacted"])
def test_a_share_offers_the_markdown_of_what_it_shows(client, make_link, transcript, mode):
    """Issue 31: the Markdown export from a share too, of the link's own report."""
    _, token = make_link(mode)
    page = client.get(share_url(token)).content.decode()
    assert f'href="{download_url(token, "markdown")}"' in page
    response = client.get(download_url(token, "markdown"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/markdown")
    text = response.content.decode()
    findings = len(store_findings(transcript))
    assert f"**This history needs repair.** {findings} findings" in text
    assert "| OpenAI Chat | rejected:" in text and "PAIR-1" in text
    if mode == "redacted":
        assert text.startswith("# Transcript diagnosis: A shared transcript")
        assert "broken.json" not in text and "find the ticket" not in text
    else:
        assert text.startswith("# Transcript diagnosis: broken.json")
        assert "> find the ticket" in text


def store_findings(transcript):
    from inspector.web import store

    return store.get_diagnosis(transcript).findings
