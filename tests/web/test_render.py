"""Readable content (issue 18, point 2): Markdown, code, tool calls as what they do. No DB."""

from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from inspector.web import render

ACTIVE = re.compile(r"^<(script|iframe|object|embed|img|svg)|\son\w+\s*=|javascript:", re.I)


def active_tags(html: str) -> list[str]:
    """The tags (not the escaped text) of ``html`` that could run or fetch something."""
    return [tag for tag in re.findall(r"<[^>]*>", html) if ACTIVE.search(tag)]


def args(**values: object) -> str:
    return orjson.dumps(values, option=orjson.OPT_INDENT_2).decode()


# --- Markdown -----------------------------------------------------------------


def test_markdown_renders_emphasis_lists_and_highlighted_code():
    html = render.markdown("Do **this**:\n\n- one\n- two\n\n```python\ndef f():\n    return 1\n```")
    assert "<strong>this</strong>" in html
    assert "<ul>" in html and "<li>one</li>" in html
    assert '<pre class="code"><code class="language-python"><span class="k">def</span>' in html


@pytest.mark.parametrize(
    "text",
    [
        "<script>window.__xss=1</script>",
        '<img src=x onerror="window.__xss=1">',
        "[click](javascript:window.__xss=1)",
        '<a href="javascript:window.__xss=1">x</a>',
        "![pic](https://example.com/x.png)",
        "```html\n<script>alert(1)</script>\n```",
        '```"><script>alert(1)</script>\nx\n```',
        "<iframe src=javascript:alert(1)></iframe>",
        "| a | b |\n|:-|-:|\n| <svg onload=alert(1)> | x |",
    ],
)
def test_markdown_never_lets_markup_through(text):
    html = render.markdown(text)
    assert active_tags(html) == [], html
    assert "style=" not in html  # the CSP would refuse it anyway


def test_raw_html_in_a_message_is_shown_as_text_escaped_as_the_rest_of_the_page():
    text = '<script>window.__xss=1</script> and <img src=x onerror="window.__xss=1">'
    assert render.markdown(text) == (
        "<p>&lt;script&gt;window.__xss=1&lt;/script&gt; and "
        "&lt;img src=x onerror=&quot;window.__xss=1&quot;&gt;</p>"
    )


def test_links_keep_their_address_and_open_nothing_else():
    html = render.markdown("see [the docs](https://example.com/a?b=1)")
    assert '<a href="https://example.com/a?b=1" rel="noopener noreferrer nofollow">' in html


PLAIN = st.text(
    alphabet=st.sampled_from(list("abc XYZ019.,:;?'\"()@$%^{}=+-/\n\u00e9\u2192")), max_size=80
)


@given(PLAIN)
def test_the_plain_text_path_renders_exactly_as_markdown_it_and_nh3(text):
    assert render.markdown(text) == render.markdown_reference(text)


@given(st.text(max_size=60))
def test_any_text_renders_without_active_markup(text):
    html = render.markdown(text)
    assert not re.search(r"<(?!/?(p|br|em|strong|code|pre|ul|ol|li|h\d|hr|blockquote|a|span|"
                         r"del|s|table|thead|tbody|tr|th|td)\b)", html)  # fmt: skip


@given(st.text(max_size=80))
def test_highlighted_json_keeps_every_character(text):
    html = render.highlight_json(text)
    plain = re.sub(r"<[^>]+>", "", html)
    assert (
        plain.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", '"')
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
        == text
    )
    assert "<" not in re.sub(r'<span class="\w+">|</span>', "", html)


# --- tool calls -----------------------------------------------------------------


def test_an_edit_is_a_diff_of_its_file():
    view = render.call_view(
        "Edit",
        args(file_path="app/models.py", old_string="a = 1\nb = 2\n", new_string="a = 1\nb = 3\n"),
    )
    assert view["kind"] == "diff" and view["path"] == "app/models.py"
    assert ("del", "-b = 2") in view["lines"] and ("add", "+b = 3") in view["lines"]
    assert (view["added"], view["removed"]) == (1, 1)


def test_a_multiedit_is_one_diff_of_all_its_edits():
    edits = [{"old_string": "x", "new_string": "y"}, {"old_string": "p", "new_string": "q"}]
    view = render.call_view("MultiEdit", args(file_path="a.txt", edits=edits))
    assert view["kind"] == "diff" and (view["added"], view["removed"]) == (2, 2)


def test_a_write_is_a_diff_that_adds_every_line():
    view = render.call_view("Write", args(file_path="new.md", content="# Title\n\nbody"))
    assert view["verb"] == "writes" and view["lines"] == [
        ("add", "+# Title"),
        ("add", "+"),
        ("add", "+body"),
    ]


def test_str_replace_editor_commands_are_drawn_for_what_they_do():
    replace = render.call_view(
        "str_replace_based_edit_tool",
        args(command="str_replace", path="f.py", old_str="1", new_str="2"),
    )
    assert replace["kind"] == "diff" and replace["path"] == "f.py"
    create = render.call_view(
        "str_replace_editor", args(command="create", path="g.py", file_text="x")
    )
    assert create["kind"] == "diff" and create["verb"] == "writes"
    view = render.call_view("str_replace_editor", args(command="view", path="g.py"))
    assert view == {"kind": "read", "path": "g.py", "where": ""}


PATCH = (
    "*** Begin Patch\n*** Update File: src/app.py\n@@ def main\n-    old()\n+    new()\n"
    "*** End Patch"
)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("apply_patch", args(input=PATCH)),
        ("apply_patch", PATCH),
        ("shell", args(command=["apply_patch", PATCH])),
    ],
)
def test_apply_patch_is_a_diff_naming_its_files(name, arguments):
    view = render.call_view(name, arguments)
    assert view["kind"] == "diff" and view["path"] == "src/app.py"
    assert ("add", "+    new()") in view["lines"] and ("del", "-    old()") in view["lines"]


@pytest.mark.parametrize(
    ("name", "arguments", "command"),
    [
        ("Bash", args(command="ls -la | wc -l", description="Count"), "ls -la | wc -l"),
        ("shell", args(command=["bash", "-lc", "git status"], workdir="/w"), "git status"),
        ("exec_command", args(cmd="make test"), "make test"),
    ],
)
def test_a_shell_call_is_its_command(name, arguments, command):
    view = render.call_view(name, arguments)
    assert view["kind"] == "command"
    assert re.sub(r"<[^>]+>", "", view["html"]).replace("&gt;", ">") == command


def test_a_read_names_its_file_and_lines():
    view = render.call_view("Read", args(file_path="/src/a.py", offset=10, limit=5))
    assert view == {"kind": "read", "path": "/src/a.py", "where": "lines 10 to 14"}


def test_a_read_result_is_a_numbered_highlighted_excerpt():
    out = render.output_view(
        "    10→import os\n    11→print(os)\n", {"kind": "read", "path": "a.py"}
    )
    assert out["kind"] == "excerpt" and [n for n, _ in out["numbered"]] == ["10", "11"]
    assert '<span class="kn">import</span>' in out["numbered"][0][1]


def test_a_task_shows_its_prompt_as_markdown():
    view = render.call_view(
        "Task", args(description="Find it", prompt="Look **here**", subagent_type="x")
    )
    assert view["kind"] == "task" and "<strong>here</strong>" in view["prompt_html"]


def test_other_calls_are_highlighted_json_and_text_stays_text():
    assert render.call_view("search", args(q="x"))["kind"] == "json"
    assert render.call_view("search", '{"q": "cut mid')["kind"] == "text"
    assert render.call_view("Edit", "[redacted: 40 characters]") == {
        "kind": "text",
        "text": "[redacted: 40 characters]",
    }


def test_a_result_reads_in_the_light_of_its_call():
    rows = [
        {"role": "assistant", "text": "", "calls": [
            {"id": "c1", "new_id": None, "name": "Read", "arguments": args(file_path="x.py")}]},
        {"role": "tool", "text": "     1→x = 1", "result": {"id": "c1"}},
        {"role": "tool", "text": '{"ok": true}', "result": {"id": "c9"}},
        {"role": "tool", "text": "plain <b>", "result": {"id": "c8"}},
    ]  # fmt: skip
    page = render.Page()  # one page: a result reads in the light of a call drawn above it
    shown = [render.readable_row(row, page) for row in rows]
    assert [content["output"]["kind"] for content in shown[1:]] == ["excerpt", "json", "output"]
    assert shown[3]["output"]["html"] == "plain &lt;b&gt;"
    assert rows[0]["calls"][0].keys() == {"id", "new_id", "name", "arguments"}, "rows unchanged"


def test_long_text_folds_and_says_how_long():
    content = render.readable_row({"role": "user", "text": "line\n" * 40}, render.Page())
    assert content["fold"] and content["lines"] == 41
    out = render.output_view("x\n" * 100, None)
    assert out["folded"] and out["lines"] == 101


# --- words that changed inside a changed line (issue 31) ----------------------


def marked_words(line: str) -> list[str]:
    return re.findall(r'<span class="d-word">(.*?)</span>', line)


def test_a_changed_line_marks_only_the_words_that_changed_on_both_sides():
    view = render.call_view(
        "Edit",
        args(
            file_path="a.py",
            old_string="total = price * count\n",
            new_string="total = cost * count\n",
        ),
    )
    lines = dict((kind, line) for kind, line in view["marked"] if kind in ("add", "del"))
    assert marked_words(lines["del"]) == ["price"] and marked_words(lines["add"]) == ["cost"]
    assert lines["del"].startswith("-total = ") and lines["add"].endswith(" * count")


def test_lines_that_share_little_are_replaced_whole_and_unpaired_lines_unmarked():
    view = render.call_view(
        "Edit",
        args(file_path="a.py", old_string="alpha\n", new_string="something else entirely\nmore\n"),
    )
    assert all(not marked_words(line) for _, line in view["marked"])
    assert ("add", "+more") in view["marked"]


@given(st.text(max_size=60), st.text(max_size=60))
def test_word_marks_keep_every_character_escaped_and_add_no_other_markup(old, new):
    lines = [("del", f"-{old}"), ("add", f"+{new}")]
    for (_, text), (_, shown) in zip(lines, render.word_marked(lines), strict=True):
        assert re.sub(r"</?span[^>]*>", "", shown) == html_escape(text)
        assert set(re.findall(r"<[^>]*>", shown)) <= {'<span class="d-word">', "</span>"}
        assert not active_tags(shown)


def html_escape(text: str) -> str:
    import html

    return html.escape(text, quote=False)


def test_markup_in_a_changed_line_stays_text_inside_and_outside_the_marks():
    lines = render.word_marked(
        [("del", '-<img src=x onerror="alert(1)"> a'), ("add", '+<img src=y onerror="alert(1)"> a')]
    )
    for _, shown in lines:
        assert "<img" not in shown and "&lt;img" in shown and not active_tags(shown)
