"""How a row's content reads: Markdown, highlighted code, and tool calls for what they are.

``readable_row`` takes a row of one page, exactly as the page would show it
(a share page passes rows it has already masked or redacted), and returns
what the templates draw of its content:

- message text and thinking as Markdown (markdown-it-py, raw HTML off, so a
  ``<script>`` in a transcript stays text; links checked; sanitised with nh3
  like every Markdown here), highlighted code blocks (Pygments);
- each tool call as what it does: an edit as a diff (Edit, MultiEdit, Write,
  str_replace, apply_patch), a shell call as its command, a Read as the file
  and lines it read, a Task as its prompt with a link to the subagent's own
  transcript; any other call as highlighted JSON;
- each tool result as its output, read in the light of its call (a Read's
  result as a file excerpt with its line numbers, JSON as JSON).

Only the rows of the page being shown are rendered, and what costs is
cached by its input: the same text always renders the same way, so a cached
render can never show one reader another's content. No Django.
"""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

import nh3
import orjson
from markdown_it import MarkdownIt
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import BashLexer, get_lexer_by_name, get_lexer_for_filename
from pygments.util import ClassNotFound

Row = dict[str, Any]

# A text longer than this (lines or characters) starts folded, with its size said.
FOLD_LINES = 24
FOLD_CHARS = 1500
# A diff or an output shows at most this many lines; the downloads have the rest.
MAX_LINES = 400
CACHE_SIZE = 4096

# --- Markdown ----------------------------------------------------------------

_MARKDOWN = (
    MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False})
    .enable(["table", "strikethrough"])
    # An image would be fetched from wherever the transcript says; a link is enough.
    .disable("image")
)
_FORMATTER = HtmlFormatter(nowrap=True)
_BASH = BashLexer()
_LANGUAGE = re.compile(r"[A-Za-z0-9_+.#-]{1,40}")
_TAGS = {
    "a", "b", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6",
    "hr", "i", "li", "ol", "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
_ATTRIBUTES = {
    "a": {"href"},
    "code": {"class"},
    "pre": {"class"},
    "span": {"class"},
    "ol": {"start"},
}
_TAG = re.compile(r"(<[^>]*>)")


def _fence(code: str, language: str, attrs: Any) -> str:
    """A fenced code block, highlighted when its language is known."""
    name = language.split()[0] if language.strip() else ""
    lexer = _lexer_by_name(name) if _LANGUAGE.fullmatch(name) else None
    body = _highlighted(code, lexer) if lexer is not None else html.escape(code, quote=False)
    cls = f' class="language-{name}"' if lexer is not None else ""
    return f'<pre class="code"><code{cls}>{body}</code></pre>\n'


_MARKDOWN.options["highlight"] = _fence


def _requote(clean: str) -> str:
    # nh3 writes quotes in text as they are; escaped as Django escapes them, a
    # transcript's text reads the same in every part of a page. Attribute
    # values here hold no ">" (hrefs are percent-encoded, classes are words),
    # so splitting on tags is exact.
    pieces = _TAG.split(clean)
    for i in range(0, len(pieces), 2):
        pieces[i] = pieces[i].replace('"', "&quot;").replace("'", "&#x27;")
    return "".join(pieces)


def markdown_reference(text: str) -> str:
    """The straightforward render: markdown-it, then nh3; ``markdown`` is held to it."""
    rendered = _MARKDOWN.render(text)
    clean = nh3.clean(
        rendered,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return _requote(clean).strip()


# Anything Markdown could read as markup; text without any is only paragraphs.
_MARKUP = re.compile(r"[\\`*_\[\]<>!&~|]|^[ \t]|^[-+=#]|^\d{1,9}[.)]", re.M)
_BLANK_LINES = re.compile(r"\n{2,}")


@lru_cache(maxsize=CACHE_SIZE)
def markdown(text: str) -> str:
    """``text`` as sanitised HTML. Most messages hold no markup at all: they
    take a path that only escapes and splits paragraphs (about 5 µs against
    about 250 µs through markdown-it and nh3); the property tests hold the two
    paths to the same output."""
    if _MARKUP.search(text) is None and text.replace("\n", "").isprintable():
        paragraphs = []
        for block in _BLANK_LINES.split(text.strip("\n")):
            lines = [html.escape(line.rstrip(" ")) for line in block.split("\n")]
            paragraphs.append("<p>" + "<br>\n".join(lines) + "</p>")
        return "\n".join(p for p in paragraphs if p != "<p></p>")
    return markdown_reference(text)


# --- code ------------------------------------------------------------------


@lru_cache(maxsize=256)
def _lexer_by_name(name: str) -> Lexer | None:
    try:
        return get_lexer_by_name(name.lower())
    except ClassNotFound:
        return None


@lru_cache(maxsize=256)
def _lexer_for_suffix(suffix: str) -> Lexer | None:
    try:
        return get_lexer_for_filename(f"file{suffix}")
    except ClassNotFound:
        return None


def lexer_for_path(path: str) -> Lexer | None:
    name = path.rsplit("/", 1)[-1]
    suffix = name[name.rfind(".") :] if "." in name else name
    return _lexer_for_suffix(suffix.lower()) if len(suffix) <= 20 else None


# Whitespace needs no colour: unwrapped, a command reads (and is found) as typed.
_WHITESPACE_SPAN = re.compile(r'<span class="w">([^<]*)</span>')


@lru_cache(maxsize=CACHE_SIZE)
def _highlighted_cached(code: str, lexer: Lexer) -> str:
    out = pygments_highlight(code, lexer, _FORMATTER).removesuffix("\n")
    return _WHITESPACE_SPAN.sub(r"\1", out)


def _highlighted(code: str, lexer: Lexer) -> str:
    """``code`` as Pygments' escaped, classed spans (no wrapper); one line per line."""
    return _highlighted_cached(code.removesuffix("\n"), lexer)


_JSON_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\\n]|\\.)*")(?P<colon>\s*:)?'
    r"|(?P<number>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
    r"|(?P<literal>\btrue\b|\bfalse\b|\bnull\b)"
)


@lru_cache(maxsize=CACHE_SIZE)
def highlight_json(text: str) -> str:
    """JSON text as escaped HTML with Pygments' class names on keys, strings and numbers.

    A few regular expressions rather than Pygments' JSON lexer: arguments are on
    nearly every row, and this is about twenty times faster. Every character
    of ``text`` is in the output, escaped, whatever ``text`` holds.
    """
    out: list[str] = []
    cursor = 0
    escape = html.escape
    for match in _JSON_TOKEN.finditer(text):
        out.append(escape(text[cursor : match.start()]))
        kind = match.lastgroup if match.group("string") is None else "string"
        if kind == "string":
            cls = "nt" if match.group("colon") else "s2"
            out.append(f'<span class="{cls}">{escape(match.group("string"))}</span>')
            if match.group("colon"):
                out.append(escape(match.group("colon")))
        else:
            cls = "mi" if kind == "number" else "kc"
            out.append(f'<span class="{cls}">{escape(match.group())}</span>')
        cursor = match.end()
    out.append(escape(text[cursor:]))
    return "".join(out)


# --- tool calls -------------------------------------------------------------

EDIT_TOOLS = frozenset({"edit", "multiedit", "write", "str_replace", "str_replace_editor",
                        "str_replace_based_edit_tool", "apply_patch", "create_file",
                        "write_file", "edit_file"})  # fmt: skip
SHELL_TOOLS = frozenset({"bash", "shell", "exec_command", "local_shell", "run_shell_command",
                         "execute_command", "run_terminal_cmd", "terminal"})  # fmt: skip
READ_TOOLS = frozenset({"read", "read_file", "view", "cat"})
TASK_TOOLS = frozenset({"task", "agent", "dispatch_agent"})


def _arguments(text: str) -> Any:
    """The call's arguments as data when they are JSON, else the text itself."""
    if text[:1] in "{[":
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return text


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _diff_lines(old: str, new: str) -> list[tuple[str, str]]:
    lines: list[tuple[str, str]] = []
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3)
    for number, line in enumerate(diff):
        if number < 2:  # the ---/+++ header: the file is named above the diff
            continue
        kind = {"+": "add", "-": "del", "@": "hunk"}.get(line[:1], "ctx")
        lines.append((kind, line))
    return lines


def _clip(lines: list[tuple[str, str]]) -> tuple[list[tuple[str, str]], int]:
    return (lines[:MAX_LINES], max(0, len(lines) - MAX_LINES))


def _patch_lines(patch: str) -> list[tuple[str, str]]:
    """An apply_patch (or unified diff) text, each line classed by what it does."""
    lines = []
    for line in patch.splitlines():
        if line.startswith(("*** ", "diff ", "--- ", "+++ ", "index ")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        lines.append((kind, line))
    return lines


_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)


def call_view(name: str, arguments: str) -> dict[str, Any]:
    """What a call does, for the template: ``kind`` names the drawing, the rest fills it."""
    key = name.lower().rsplit("__", 1)[-1]  # mcp__server__tool: the tool's own name
    args = _arguments(arguments)
    data = args if isinstance(args, dict) else {}
    path = _string(data.get("file_path") or data.get("path") or data.get("filename"))
    if key in EDIT_TOOLS or (key == "str_replace_based_edit_tool"):
        view = _edit_view(key, data, args, path)
        if view is not None:
            return view
    if key in SHELL_TOOLS:
        command = data.get("command", data.get("cmd", args if isinstance(args, str) else ""))
        if isinstance(command, list) and all(isinstance(part, str) for part in command):
            # Codex: ["bash", "-lc", "the command"]; anything else is shown joined.
            command = (
                command[-1] if command[:2] in (["bash", "-lc"], ["sh", "-c"]) else " ".join(command)
            )
        if isinstance(command, str) and command:
            if command.lstrip().startswith("apply_patch"):
                return _patch_view(command)
            return {
                "kind": "command",
                "html": _highlighted(command, _BASH),
                "description": _string(data.get("description")),
                "workdir": _string(data.get("workdir") or data.get("cwd")),
            }
    if key in READ_TOOLS and path:
        start = data.get("offset") or data.get("start_line")
        limit = data.get("limit")
        where = ""
        if isinstance(start, int) and isinstance(limit, int):
            where = f"lines {start:,} to {start + limit - 1:,}"
        elif isinstance(start, int):
            where = f"from line {start:,}"
        elif isinstance(limit, int):
            where = f"the first {limit:,} lines"
        return {"kind": "read", "path": path, "where": where}
    if key in TASK_TOOLS and (data.get("prompt") or data.get("description")):
        return {
            "kind": "task",
            "description": _string(data.get("description")),
            "agent_type": _string(data.get("subagent_type")),
            "prompt_html": markdown(_string(data.get("prompt"))),
        }
    if isinstance(args, dict | list):
        return {"kind": "json", "html": highlight_json(arguments)}
    return {"kind": "text", "text": arguments}


def _edit_view(key: str, data: dict[str, Any], args: Any, path: str) -> dict[str, Any] | None:
    command = _string(data.get("command"))
    if key == "apply_patch":
        patch = args if isinstance(args, str) else _string(data.get("input") or data.get("patch"))
        return _patch_view(patch) if patch else None
    if key == "multiedit" and isinstance(data.get("edits"), list):
        lines: list[tuple[str, str]] = []
        for edit in data["edits"]:
            if isinstance(edit, dict):
                lines += _diff_lines(
                    _string(edit.get("old_string")), _string(edit.get("new_string"))
                )
        return _diff_view(path, "edits", lines)
    old = data.get("old_string", data.get("old_str"))
    new = data.get("new_string", data.get("new_str"))
    if isinstance(old, str) and isinstance(new, str):
        return _diff_view(path, "edits", _diff_lines(old, new))
    content = data.get("content", data.get("file_text"))
    if isinstance(content, str) and (
        key in ("write", "create_file", "write_file") or command == "create"
    ):
        return _diff_view(path, "writes", [("add", f"+{line}") for line in content.splitlines()])
    if command == "insert" and isinstance(new, str):
        return _diff_view(path, "inserts into", [("add", f"+{line}") for line in new.splitlines()])
    if command == "view" and path:
        return {"kind": "read", "path": path, "where": ""}
    return None


def _diff_view(path: str, verb: str, lines: list[tuple[str, str]]) -> dict[str, Any]:
    shown, more = _clip(lines)
    added = sum(1 for kind, _ in lines if kind == "add")
    removed = sum(1 for kind, _ in lines if kind == "del")
    # ``lines`` as text; ``marked``, the same as the page's HTML, changed words marked.
    return {"kind": "diff", "path": path, "verb": verb, "lines": shown,
            "marked": word_marked(shown), "more": more, "added": added,
            "removed": removed}  # fmt: skip


# Words, runs of spaces, and single other characters: what a changed line is compared by.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
# Lines less alike than this are shown as replaced whole: marking nearly every word is noise.
WORD_DIFF_RATIO = 0.4
WORD_DIFF_CHARS = 2000  # longer lines are not compared word by word


def word_marked(lines: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Each diff line as escaped HTML; in a removed line followed by its replacement, the
    words that changed are in ``<span class="d-word">`` on both sides.

    The n-th line of a run of removed lines is paired with the n-th of the run of added
    lines right after it, as unified diffs are read.
    """
    out = [(kind, html.escape(line, quote=False)) for kind, line in lines]
    i = 0
    while i < len(lines):
        if lines[i][0] != "del":
            i += 1
            continue
        j = i
        while j < len(lines) and lines[j][0] == "del":
            j += 1
        k = j
        while k < len(lines) and lines[k][0] == "add":
            k += 1
        for old, new in zip(range(i, j), range(j, k), strict=False):
            marked = _changed_words(lines[old][1], lines[new][1])
            if marked is not None:
                out[old], out[new] = ("del", marked[0]), ("add", marked[1])
        i = max(k, i + 1)
    return out


def _changed_words(old: str, new: str) -> tuple[str, str] | None:
    if len(old) > WORD_DIFF_CHARS or len(new) > WORD_DIFF_CHARS:
        return None
    before, after = _TOKEN.findall(old[1:]), _TOKEN.findall(new[1:])
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    if matcher.ratio() < WORD_DIFF_RATIO:
        return None
    sides: tuple[list[str], list[str]] = ([html.escape(old[:1])], [html.escape(new[:1])])
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        for side, tokens, start, stop in ((0, before, a0, a1), (1, after, b0, b1)):
            text = html.escape("".join(tokens[start:stop]), quote=False)
            if not text:
                continue
            sides[side].append(text if tag == "equal" else f'<span class="d-word">{text}</span>')
    return "".join(sides[0]), "".join(sides[1])


def _patch_view(patch: str) -> dict[str, Any]:
    lines = _patch_lines(patch)
    files = _PATCH_FILE.findall(patch)
    view = _diff_view(", ".join(files), "patches", lines)
    return view


# --- tool results -------------------------------------------------------------

_NUMBERED = re.compile(r"^ *(\d+)[→\t](.*)$")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def output_view(text: str, call: Mapping[str, Any] | None) -> dict[str, Any]:
    """A tool result's text as the page shows it: a file excerpt, JSON, or output."""
    kind = (call or {}).get("kind")
    if kind == "read":
        excerpt = _excerpt(text, call.get("path", "") if call else "")
        if excerpt is not None:
            return excerpt
    stripped = text.lstrip()
    if stripped[:1] in "{[" and len(text) <= 200_000:
        try:
            orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
        else:
            return _output("json", highlight_json(text), text)
    plain = _ANSI.sub("", text) if "\x1b" in text else text
    return _output("output", html.escape(plain), plain)


def _output(kind: str, body: str, text: str) -> dict[str, Any]:
    lines = text.count("\n") + 1
    return {"kind": kind, "html": body, "lines": lines, "chars": len(text),
            "folded": lines > FOLD_LINES or len(text) > FOLD_CHARS,
            "preview": "\n".join(text.split("\n", 8)[:8])}  # fmt: skip


def _excerpt(text: str, path: str) -> dict[str, Any] | None:
    """``cat -n`` output (Claude Code's Read): numbers apart, the code highlighted."""
    numbers: list[str] = []
    code: list[str] = []
    for line in text.split("\n")[: MAX_LINES * 5]:
        match = _NUMBERED.match(line)
        if match is None:
            if line.strip():
                return None
            continue
        numbers.append(match.group(1))
        code.append(match.group(2))
    if not numbers:
        return None
    lexer = lexer_for_path(path)
    source = "\n".join(code)
    body = _highlighted(source, lexer) if lexer is not None else html.escape(source)
    lines = list(zip(numbers, body.split("\n"), strict=False))
    view = _output("excerpt", "", source)
    view["numbered"] = lines[:MAX_LINES]
    view["more"] = max(0, len(lines) - MAX_LINES)
    view["path"] = path
    return view


# --- rows -------------------------------------------------------------------


@dataclass(slots=True)
class Page:
    """What drawing one page's rows carries from row to row."""

    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # call id -> its view
    last_at: datetime | None = None  # the previous row's timestamp


def when(stamp: Any) -> datetime | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def duration(seconds: float) -> str:
    """A gap between rows, as people say it: 0.4 s, 12 s, 3 min, 2 h 5 min, 3 days."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min"
    if seconds < 86400:
        hours, rest = divmod(seconds, 3600)
        return f"{hours:.0f} h {rest // 60:.0f} min" if rest >= 60 else f"{hours:.0f} h"
    return f"{seconds / 86400:.0f} days"


def timing_words(timing: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The header's totals of what the rows record: when, how long, tokens, models."""
    if not timing:
        return None
    first, last = when(timing.get("first")), when(timing.get("last"))
    models = timing.get("models") or {}
    return {
        "first": first,
        "last": last,
        "took": duration((last - first).total_seconds()) if first and last else "",
        "tokens_in": timing.get("tokens_in") or 0,
        "tokens_out": timing.get("tokens_out") or 0,
        # Of the tokens in: read from the prompt cache, and written into it.
        "cache_read": timing.get("cache_read") or 0,
        "cache_write": timing.get("cache_write") or 0,
        "models": sorted(models, key=lambda name: -models[name]),
    }


def readable_row(
    row: Row, page: Page, subagent_links: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """What the page draws of a row's content: ``html`` (its text), ``output``,
    ``parts`` and ``calls`` (each with its ``view``).

    ``page`` carries the views of the calls of the rows drawn before it on the
    same page, so a result is read in the light of its call, and the previous
    row's time, for the time since it; ``subagent_links``
    maps a Task call's id to the address of the subagent's own transcript.
    The row itself is shared with the diagnosis cache and is not changed.
    """
    content: dict[str, Any] = {"html": "", "output": None, "when": None, "since": ""}
    seen = page.calls
    moment = when(row.get("at"))
    if moment is not None:
        content["when"] = moment
        if page.last_at is not None and moment >= page.last_at:
            content["since"] = duration((moment - page.last_at).total_seconds())
        page.last_at = moment
    text = row.get("text") or ""
    if row.get("role") == "tool":
        call_id = (row.get("result") or {}).get("id") or ""
        if text.strip():
            content["output"] = output_view(text, seen.get(call_id))
    elif text.strip():
        lines = text.count("\n") + 1
        content |= {
            "html": markdown(text),
            "fold": lines > FOLD_LINES or len(text) > FOLD_CHARS,
            "lines": lines,
        }
    content["parts"] = [
        {**part, "html": markdown(part.get("text") or "")}
        if part.get("type") == "thinking"
        else part
        for part in row.get("parts") or ()
    ]
    content["calls"] = [_call(call, seen, subagent_links) for call in row.get("calls") or ()]
    # Reasoning and nothing else a provider takes (no text, no call): not a blank row.
    content["reasoning_only"] = (
        not text.strip()
        and not content["calls"]
        and any(part.get("type") == "thinking" for part in content["parts"])
    )
    return content


def _call(
    call: dict[str, Any], seen: dict[str, dict[str, Any]], links: Mapping[str, str] | None
) -> dict[str, Any]:
    view = call_view(call.get("name") or "", call.get("arguments") or "")
    if view["kind"] == "task" and links:
        view = {**view, "link": links.get(call.get("id") or "")}
    seen[call.get("new_id") or call.get("id") or ""] = view
    seen.setdefault(call.get("id") or "", view)
    return {**call, "view": view}
