"""Readable content on the pages (issue 18, point 2): subagent links both ways, diffs, masking."""

from __future__ import annotations

import pytest

from tests.testdata import CORPUS, read
from tests.web.conftest import assistant, call, canonical, result, user

pytestmark = pytest.mark.django_db

SESSIONS = CORPUS / "claude-code" / "projects" / "-experiments-worktrees"
PARENT = SESSIONS / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl"
SUBAGENT = (
    SESSIONS
    / "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    / "subagents"
    / "agent-a6aa8ad077d9ea083.jsonl"
)
TASK_CALL = "toolu_0151DrVyXBXfb63SXGNF1qDb"  # answered by agent a6aa8ad077d9ea083


def page_with_row(client, transcript, key: str) -> str:
    """The page of the timeline that shows row ``key``."""
    page = 1
    while True:
        response = client.get(f"/t/{transcript.public_id}/?page={page}")
        assert response.status_code == 200
        html = response.content.decode()
        if f'id="{key}"' in html:
            return html
        page += 1


def test_a_task_call_links_to_its_subagent_and_the_subagent_links_back(owner_client, store_for):
    parent = store_for(read(PARENT), PARENT.name)
    subagent = store_for(read(SUBAGENT), SUBAGENT.name)
    from inspector.web import store

    rows = list(store.get_diagnosis(parent).rows)
    key = next(r["key"] for r in rows for c in r["calls"] if c["id"] == TASK_CALL)
    html = page_with_row(owner_client, parent, key)
    link = f'href="/t/{subagent.public_id}/">open the subagent' + "'s transcript</a>"
    assert link in html
    back = owner_client.get(f"/t/{subagent.public_id}/").content.decode()
    assert f'subagent of <a href="/t/{parent.public_id}/">{PARENT.name}</a>' in back


def test_a_session_kept_in_two_projects_links_to_its_subagent_in_the_same_project(
    owner_client, owner
):
    from inspector.web import store

    linked = {}
    for name in ("first", "second"):
        project = store.project_for(owner, name)
        parent, _ = store.store_upload(owner, read(PARENT), PARENT.name, project=project)
        subagent, _ = store.store_upload(owner, read(SUBAGENT), SUBAGENT.name, project=project)
        linked[name] = (parent, subagent)
    for parent, subagent in linked.values():
        rows = list(store.get_diagnosis(parent).rows)
        key = next(r["key"] for r in rows for c in r["calls"] if c["id"] == TASK_CALL)
        html = page_with_row(owner_client, parent, key)
        assert f'href="/t/{subagent.public_id}/">open the subagent' in html
        back = owner_client.get(f"/t/{subagent.public_id}/").content.decode()
        assert f'subagent of <a href="/t/{parent.public_id}/">' in back


def test_another_users_subagent_is_never_linked(owner_client, store_for, other_user):
    parent = store_for(read(PARENT), PARENT.name)
    theirs = store_for(read(SUBAGENT), SUBAGENT.name, user=other_user)
    from inspector.web import store

    for page in range(1, 20):
        response = owner_client.get(f"/t/{parent.public_id}/?page={page}")
        if response.status_code == 404:
            break
        assert theirs.public_id not in response.content.decode()
    assert store.get_diagnosis(parent).meta["subagents"]


def test_an_edit_on_a_full_share_page_is_a_diff_of_masked_text(owner, store_for):
    from django.test import Client

    from inspector.share.models import ShareLink

    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    data = canonical(
        user("go"),
        assistant(
            call(
                "e1", "Edit", {"file_path": "a.env", "old_string": "K=1", "new_string": f"K={key}"}
            )
        ),
        result("e1", "ok"),
    )
    transcript = store_for(data, "edit.json")
    _, token = ShareLink.issue(transcript, ShareLink.FULL, "never")
    html = Client().get(f"/s/{token}/").content.decode()
    assert 'class="diff-body"' in html
    assert key not in html and "[masked OpenAI key" in html
    _, redacted = ShareLink.issue(transcript, ShareLink.REDACTED, "never")
    html = Client().get(f"/s/{redacted}/").content.decode()
    assert 'class="diff-body"' not in html and "K=1" not in html


def test_a_diff_is_single_spaced_one_block_line_per_line(owner_client, store_for):
    """Each diff line is a block of its own: a newline between the blocks, inside a
    pre-wrap box, would add an empty line after every line of the diff."""
    import re

    old, new = "a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\n"
    data = canonical(
        user("go"),
        assistant(call("e1", "Edit", {"file_path": "x.py", "old_string": old, "new_string": new})),
        result("e1", "ok"),
    )
    transcript = store_for(data, "diff.json")
    html = owner_client.get(f"/t/{transcript.public_id}/").content.decode()
    body = re.search(r'<pre class="diff-body">(.*?)</pre>', html, re.S)
    assert body is not None
    assert '-b = <span class="d-word">2</span>' in body.group(1)  # the word that changed
    plain = re.sub(r'<span class="d-word">(.*?)</span>', r"\1", body.group(1))
    lines = re.findall(r'<span class="d-(\w+)">(.*?)</span>', plain)
    assert [kind for kind, _ in lines] == ["hunk", "ctx", "del", "add", "ctx"]
    # Nothing but the line blocks themselves: no text (a newline) between them.
    between = re.sub(r'<span class="d-\w+">.*?</span>', "", plain)
    assert between == ""
