"""Issue 18, point 2 in the browser: Markdown, diffs, commands, excerpts, toggles; nothing runs."""

from __future__ import annotations

import itertools

import orjson
import pytest

from tests.hardening.test_xss import ACTIVE_MARKUP, IMG, LINKS, QUOTE, SCRIPT, SVG
from tests.web.conftest import assistant, call, canonical, result, user

pytestmark = pytest.mark.django_db(transaction=True)

EDIT = {"file_path": "src/app.py", "old_string": "x = 1\ny = 2\n", "new_string": "x = 1\ny = 3\n"}
READABLE = canonical(
    user("Please **fix** the bug in `app.py`:\n\n1. find it\n2. fix it"),
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The bug is in *y*."},
            {"type": "text", "text": "Here:\n\n```python\ndef f():\n    return 1\n```"},
        ],
        "metadata": {
            "tool_calls": [
                {"tool_call_id": "e1", "name": "Edit", "arguments": EDIT},
                {"tool_call_id": "b1", "name": "Bash", "arguments": {"command": "pytest -q"}},
                {"tool_call_id": "r1", "name": "Read", "arguments": {"file_path": "src/app.py"}},
            ]
        },
    },
    result("e1", "The file was updated."),
    result("b1", "3 passed"),
    result("r1", "     1→x = 1\n     2→y = 3"),
    assistant(content="Done."),
)


@pytest.fixture
def readable(owner):
    from inspector.web.store import store_upload

    transcript, _ = store_upload(owner, READABLE, "readable.json")
    return transcript


def test_messages_read_as_markdown_and_calls_as_what_they_do(signed_in_page, readable):
    page = signed_in_page
    page.goto(f"/t/{readable.public_id}/")
    first = page.locator("#r0")
    assert first.locator(".md strong").inner_text() == "fix"
    assert first.locator(".md ol li").count() == 2
    reply = page.locator("#r1")
    assert reply.locator("pre.code .k").first.inner_text() == "def"
    diff = reply.locator(".diff-body")
    assert diff.locator(".d-del").inner_text() == "-y = 2"
    assert diff.locator(".d-add").inner_text() == "+y = 3"
    # Single-spaced: each line starts where the one before it ends.
    boxes = [line.bounding_box() for line in diff.locator(":scope > span").all()]
    assert len(boxes) == 4 and all(box is not None for box in boxes)
    for above, below in itertools.pairwise(boxes):
        assert abs(below["y"] - (above["y"] + above["height"])) < 1, (above, below)
        assert below["height"] < 1.5 * above["height"]
    assert "src/app.py" in reply.locator("details.diff summary").inner_text()
    assert reply.locator("pre.command").inner_text().strip() == "$ pytest -q"
    assert "reads src/app.py" in reply.inner_text()
    excerpt = page.locator("#r4 pre.numbered")
    assert excerpt.locator(".ln").all_inner_texts() == ["1", "2"]
    assert page.csp_violations == []


def test_thinking_and_tool_calls_hide_and_the_choice_is_kept(signed_in_page, readable):
    page = signed_in_page
    page.goto(f"/t/{readable.public_id}/")
    thinking = page.locator("#r1 details.thinking")
    assert thinking.is_visible()
    page.get_by_role("button", name="Thinking").click()
    assert not thinking.is_visible()
    page.get_by_role("button", name="Tool calls").click()
    assert not page.locator("#r1 .calls").is_visible()
    assert not page.locator("#r2").is_visible(), "results go with their calls"
    page.reload()
    assert not page.locator("#r1 details.thinking").is_visible()
    assert not page.locator("#r1 .calls").is_visible()
    assert page.get_by_role("button", name="Thinking").get_attribute("aria-pressed") == "false"
    page.get_by_role("button", name="Tool calls").click()
    assert page.locator("#r1 .calls").is_visible()


def payload_session() -> bytes:
    fence = f"```{SVG}\n{SCRIPT}\n```"
    return canonical(
        user(f"{LINKS}\n\n{fence}\n\n**{IMG}**\n\n| {SVG} | x |\n|---|---|\n| {QUOTE} | y |"),
        assistant(
            call("e1", "Edit", {"file_path": SVG, "old_string": SCRIPT, "new_string": IMG}),
            call("w1", "Write", {"file_path": QUOTE, "content": LINKS}),
            call("m1", "MultiEdit", {"file_path": IMG, "edits": [{"old_string": SVG, "new_string": QUOTE}]}),  # noqa: E501
            call("s1", "str_replace_editor", {"command": "str_replace", "path": IMG, "old_str": SVG, "new_str": SCRIPT}),  # noqa: E501
            call("p1", "apply_patch", {"input": f"*** Begin Patch\n*** Update File: {SVG}\n-{SCRIPT}\n+{IMG}\n*** End Patch"}),  # noqa: E501
            call("b1", "Bash", {"command": f"echo '{SCRIPT}' {IMG}", "description": SVG}),
            call("r1", "Read", {"file_path": f"{SVG}.html"}),
            call("t1", "Task", {"description": IMG, "prompt": f"{SCRIPT} [x](javascript:window.__xss=1)", "subagent_type": SVG}),  # noqa: E501
            content=f"# {SCRIPT}\n\n> {IMG}\n\n- {SVG}",
        ),
        result("e1", SCRIPT),
        result("w1", orjson.dumps({"html": IMG}).decode()),
        result("m1", IMG),
        result("s1", SVG),
        result("p1", QUOTE),
        result("b1", f"\x1b[31m{SCRIPT}\x1b[0m"),
        result("r1", f"     1→{SCRIPT}\n     2→{IMG}"),
        result("t1", LINKS),
    )  # fmt: skip


def test_payloads_in_markdown_diffs_commands_and_excerpts_run_nothing_without_the_csp(
    browser, live_server, owner
):
    """The CSP is bypassed here: only the rendering's own escaping keeps these inert."""
    from inspector.share.models import ShareLink
    from inspector.web.store import store_upload
    from tests.conftest import signed_in_cookie

    transcript, _ = store_upload(owner, payload_session(), "payloads.json")
    _, token = ShareLink.issue(transcript, ShareLink.FULL, "never")
    context = browser.new_context(base_url=live_server.url, bypass_csp=True)
    context.add_cookies([signed_in_cookie(owner, live_server.url)])
    page = context.new_page()
    try:
        for path in (f"/t/{transcript.public_id}/", f"/s/{token}/"):
            response = page.goto(path)
            assert response.status == 200, path
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            assert page.evaluate(ACTIVE_MARKUP) == [], path
            assert page.evaluate("typeof window.__xss") == "undefined", path
            assert page.locator(".diff-body").count() >= 4, path
            assert SCRIPT in page.locator("main").inner_text(), "payloads read as text"
    finally:
        context.close()


def test_expand_all_opens_every_block_and_fold_all_closes_them(signed_in_page, owner):
    from inspector.web.store import store_upload

    long_output = "\n".join(f"line {n}" for n in range(80))
    data = canonical(
        user("go"),
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "ok"}],
            "metadata": {
                "tool_calls": [
                    {"tool_call_id": "b1", "name": "Bash", "arguments": {"command": "ls"}}
                ]
            },
        },
        result("b1", long_output),
    )
    transcript, _ = store_upload(owner, data, "folds.json")
    page = signed_in_page
    page.goto(f"/t/{transcript.public_id}/")
    blocks = page.locator("#timeline details")
    assert blocks.count() >= 2
    closed = "els => els.filter(d => !d.open).length"
    assert page.eval_on_selector_all("#timeline details", closed) >= 2
    button = page.get_by_role("button", name="Expand all")
    button.click()
    assert page.eval_on_selector_all("#timeline details", closed) == 0
    assert page.locator("#r2 pre.output").is_visible()
    page.get_by_role("button", name="Fold all").click()
    assert (
        page.eval_on_selector_all("#timeline details", "els => els.filter(d => d.open).length") == 0
    )
    assert page.get_by_role("button", name="Expand all").is_visible()
    assert page.csp_violations == []
