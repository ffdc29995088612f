"""Script payloads in everything a user controls, on every page that shows it: nothing runs.

The browser context bypasses the Content Security Policy, so the only thing
keeping the payloads inert is escaping: a payload that reached the page as
markup would run and set ``window.__xss``. The policy itself is checked as a
header on every response.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import orjson
import pytest
from django.utils import timezone

from tests.web.conftest import BROKEN_CLAUDE_CODE, assistant, call, canonical, result, user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SCRIPT = "<script>window.__xss=1</script>"
IMG = '<img src=x onerror="window.__xss=1">'
SVG = '"><svg onload=window.__xss=1>'
QUOTE = "'><svg onload=window.__xss=1>"
LINKS = (
    '[click me](javascript:window.__xss=1) <a href="javascript:window.__xss=1">here</a> '
    "javascript:window.__xss=1 <iframe src=javascript:window.__xss=1></iframe>"
)
PAYLOADS = (SCRIPT, IMG, SVG, QUOTE, LINKS)

# A call with a payload for an id and no result (PAIR-1), a stray result (PAIR-3).
XSS_MESSAGES = canonical(
    {"role": "system", "content": SCRIPT},
    user(LINKS),
    assistant(
        call(SVG, name=SCRIPT, arguments={"html": IMG, SVG: LINKS}),
        call(IMG, name=QUOTE, arguments=LINKS),
        content=IMG,
    ),
    result(SVG, SCRIPT),
    result(QUOTE, LINKS),
    user(SVG),
)
XSS_FILE_NAME = f"{IMG}{SVG}{SCRIPT}.json"
SESSION = "5a3bb1c8-c3ce-466e-b487-24212cbf1da1"

# Everything on the page that could run: event handler attributes, javascript:
# URLs, inline scripts (the page's own carry the per-request nonce) and frames; the
# dashboard's charts are inline SVG, so an injected <svg> shows by its onload.
ACTIVE_MARKUP = """() => {
  const found = [];
  for (const el of document.querySelectorAll("*")) {
    for (const attr of el.attributes) {
      if (attr.name.startsWith("on")) found.push(`${el.tagName} ${attr.name}`);
      const value = attr.value.trim().toLowerCase();
      if (["href", "src", "action", "formaction"].includes(attr.name)
          && value.startsWith("javascript:")) found.push(`${el.tagName} ${attr.name}`);
    }
    if (el.tagName === "SCRIPT" && !el.src && !el.nonce) found.push("inline SCRIPT");
    if (["IFRAME", "OBJECT", "EMBED"].includes(el.tagName))
      found.push(el.tagName);
  }
  return found;
}"""


@pytest.fixture
def payloads(owner) -> dict[str, str]:
    """Store the payload transcripts, project, scan, token and links; returns the URLs to visit."""
    from inspector.scan.models import ScanFile, ScanJob
    from inspector.share.models import ShareLink
    from inspector.web.models import ApiToken, Transcript
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, f"{SVG}{SCRIPT}")
    messages, _ = store_upload(owner, XSS_MESSAGES, XSS_FILE_NAME, project=project)
    # A Claude Code session whose session id (shown with the resume command) is a payload.
    session = BROKEN_CLAUDE_CODE.read_bytes().replace(SESSION.encode(), orjson.dumps(SVG)[1:-1])
    claude, _ = store_upload(owner, session, f"{SCRIPT}.jsonl", project=project)
    assert claude.session_id == SVG
    Transcript.objects.filter(pk=claude.pk).update(relative_path=f"{IMG}/{SCRIPT}.jsonl")
    Transcript.objects.filter(pk=messages.pk).update(
        relative_path=f"{QUOTE}/{LINKS}.json", parent=claude
    )
    job = ScanJob.objects.create(
        owner=owner,
        project=project,
        source=ScanJob.Source.ZIP,
        label=f"{SCRIPT}.zip",
        status=ScanJob.Status.DONE,
        total=1,
        done=1,
        unreadable=1,
        notes=[IMG],
        finished=timezone.now() + timedelta(seconds=1),
    )
    ScanFile.objects.create(
        job=job,
        project=project,
        path=f"{IMG}.jsonl",
        status=ScanFile.Status.UNREADABLE,
        reason=f"{SVG} {SCRIPT}",
        finished=timezone.now(),
    )
    ApiToken.issue(owner, SVG)
    _, full = ShareLink.issue(messages, ShareLink.FULL, "7")
    _, redacted = ShareLink.issue(messages, ShareLink.REDACTED, "7")
    _, claude_full = ShareLink.issue(claude, ShareLink.FULL, "7")
    pages = {
        "list": "/t/",
        "rule PAIR-1 with your transcripts": "/rules/PAIR-1/",
        "rule PAIR-3 with your transcripts": "/rules/PAIR-3/",
        "share panel": f"/t/{messages.public_id}/share/",
        "projects": "/p/",
        "project dashboard": f"/p/{project.slug}/",
        "scan job": job.get_absolute_url(),
        "account": "/account/",
    }
    for name, transcript in (("messages", messages), ("claude", claude)):
        for view in ("annotated", "original", "repaired"):
            pages[f"{name} timeline, {view}"] = f"/t/{transcript.public_id}/?view={view}"
    for name, token in (("full", full), ("redacted", redacted), ("claude full", claude_full)):
        for view in ("annotated", "original", "repaired"):
            pages[f"{name} share, {view}"] = f"/s/{token}/?view={view}"
    return pages


@pytest.fixture
def unguarded(browser, live_server, owner) -> Iterator[object]:
    """A page signed in as the owner whose browser ignores the Content Security Policy."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    context = browser.new_context(base_url=live_server.url, bypass_csp=True)
    session = SessionStore()
    session[SESSION_KEY] = str(owner.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = owner.get_session_auth_hash()
    session.save()
    cookie = {"name": settings.SESSION_COOKIE_NAME, "value": session.session_key}
    context.add_cookies([cookie | {"url": live_server.url}])
    yield context.new_page()
    context.close()


def test_payloads_show_as_text_and_run_nowhere(unguarded, payloads):
    page = unguarded
    shown = 0
    for name, url in payloads.items():
        response = page.goto(url)
        assert response.status == 200, name
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self' 'nonce-" in policy and "object-src 'none'" in policy, name
        if "/t/" in url and "view=" in url:
            # The share panel comes in by htmx after the page: wait until it is in too.
            page.locator("#share-panel form.share-form").wait_for()
        assert page.evaluate("typeof window.__xss") == "undefined", name
        assert page.evaluate(ACTIVE_MARKUP) == [], name
        text = page.locator("body").inner_text()
        shown += any(payload in text for payload in PAYLOADS)
    # The payloads were on the pages as text, not dropped: all but the redacted share pages.
    assert shown >= len(payloads) - 3
