"""A diagnosis as Markdown, to attach to an issue or send: no server needed to read it.

It says what the page's head says (the verdict, each provider's before and
after, every finding with its rule, message and line, the lines no reader
could read), from the same report the JSON download holds. Text from the
transcript is escaped for Markdown and HTML both, so a finding that quotes
markup renders as the text it is wherever the file is pasted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from inspector.diagnosis.select import finding_place
from inspector.engine import RULES
from inspector.web import words

# What Markdown reads as markup inside a line (no text here starts a line: "#", "-" and
# ">" cannot open a block); "<" and "&" are written as entities instead.
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _text(value: Any) -> str:
    """One line of transcript text, safe inside Markdown and inside a table cell."""
    flat = " ".join(str(value).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;")
    return _SPECIAL.sub(r"\\\1", flat)


def _cut(value: str, limit: int = 300) -> str:
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def markdown(
    name: str,
    report: Mapping[str, Any],
    provider_label: Callable[[str], str] = str,
    address: str = "",
) -> str:
    """``report`` (``diagnosis.report_from``'s) of the file ``name`` as a Markdown document."""
    meta = report.get("meta") or {}
    out = [f"# Transcript diagnosis: {_text(name)}", ""]
    if meta.get("first_prompt"):
        out += [f"> {_text(meta['first_prompt'])}", ""]
    facts = [f"shape {_text(report['format'])}", f"{report['messages']} messages"]
    if report.get("repaired_messages") != report["messages"]:
        facts[-1] += f" ({report['repaired_messages']} after repair)"
    if meta.get("session_id"):
        facts.append(f"session `{_text(meta['session_id'])}`")
    out += ["; ".join(facts) + ".", ""]
    findings = report.get("findings") or []
    if report["needs_repair"]:
        out.append(
            f"**This history needs repair.** {len(findings)} finding"
            f"{'s' if len(findings) != 1 else ''}; the repaired file answers every call "
            "exactly once and invents no event."
        )
    else:
        out.append("**Nothing to repair.** Every tool call is answered once, right after it.")
    out += ["", "## What each provider says", "", "| Provider | As it is | After repair |"]
    out.append("| --- | --- | --- |")
    for provider, verdict in (report.get("providers") or {}).items():
        cells = []
        for side in ("before", "after"):
            reasons = verdict.get(side) or []
            cells.append("accepted" if not reasons else "rejected: " + _cut(_text(reasons[0]), 200))
        out.append(f"| {_text(provider_label(provider))} | {cells[0]} | {cells[1]} |")
    if findings:
        out += ["", f"## Findings ({len(findings)})"]
        by_rule: dict[str, list[Mapping[str, Any]]] = {}
        for finding in findings:
            by_rule.setdefault(str(finding["rule"]), []).append(finding)
        for rule, listed in by_rule.items():
            title = words.title(RULES.get(rule), rule)
            out += ["", f"### {_text(rule)}: {_text(title)} ({len(listed)})", ""]
            for finding in listed:
                out.append(f"- {finding_place(finding)}: {_text(finding['text'])}")
    problems = report.get("problems") or []
    if problems:
        out += ["", f"## Lines no reader could read ({len(problems)})", ""]
        out += [
            f"- line {p['line']} ({_text(p['kind'])}): {_text(p['reason'])}" for p in problems[:200]
        ]
    trailer = f"Diagnosed by Transcript Inspector (engine {_text(report['engine_version'])})"
    out += ["", "---", "", trailer + (f": {address}" if address else "") + ".", ""]
    return "\n".join(out)


# --- one self-contained HTML file --------------------------------------------

# The export holds at most this many rows (the downloads have every one).
HTML_MAX_ROWS = 20_000
# What the file carries inline: the page's styles, and the scripts for dark mode and keys.
_STYLES = ("inspector/app.css", "share/share.css")
_SCRIPTS = ("inspector/theme.js", "inspector/timeline.js")
_ROOT_LINK = re.compile(r'(href|action)="/(?!/)')
_ROOT_HREF = re.compile(r' href="/(?!/)[^"]*"')


def _static(name: str) -> str:
    from django.contrib.staticfiles import finders

    found = finders.find(name)
    path = found[0] if isinstance(found, list) else found
    if not path:
        return ""
    with open(path, encoding="utf-8") as handle:
        # Inline: nothing in it may close the element it sits in.
        return handle.read().replace("</", "<\\/")


def standalone_html(request: Any, transcript: Any, redacted: bool) -> str:
    """The timeline of ``transcript`` as one HTML file that needs nothing else to be read:
    styles and scripts inline, every row (up to ``HTML_MAX_ROWS``), the verdicts and the
    findings; masked as a full share masks it, or redacted as a redacted share is. Links
    to the rule pages point at this server."""
    from inspector.web import store

    return page_html(
        store.get_page_diagnosis(transcript),
        transcript.file_name,
        transcript.meta.get("first_prompt") or "",
        redacted,
        origin=request.build_absolute_uri("/").rstrip("/"),
        request=request,
    )


def page_html(
    diagnosis: Any,
    name: str,
    first_prompt: str,
    redacted: bool,
    origin: str = "",
    request: Any = None,
) -> str:
    """``diagnosis`` (stored or in memory) of the file ``name`` as the one-file timeline.

    Links to this site's pages (the rules') go to ``origin``; with none (``transcript-
    inspector report --html``, no server) they are left out: the badges stay, as text.
    """
    from django.template.loader import render_to_string

    from inspector.diagnosis.select import (
        Filters,
        finding_groups,
        page_count,
        page_rows,
        select_positions,
    )
    from inspector.redact import mask
    from inspector.share.content import mask_text, shared_groups, shared_rows, shared_summary

    filters = Filters()
    positions = select_positions(diagnosis, filters)
    rows: list[Any] = []
    for page in range(1, page_count(positions) + 1):
        if len(rows) >= HTML_MAX_ROWS:
            break
        rows += shared_rows(page_rows(diagnosis, positions, page), redacted)
    left_out = max(0, len(positions) - len(rows[:HTML_MAX_ROWS]))
    rows = rows[:HTML_MAX_ROWS]
    titles = {rule_id: words.title(rule, rule_id) for rule_id, rule in RULES.items()}
    groups = shared_groups(finding_groups(diagnosis, positions, filters, 1, titles), redacted)
    for group in groups:  # every row is on the one page: a finding links to its anchor
        for entry in group["entries"]:
            entry["href"] = "#" + entry["href"].rsplit("#", 1)[-1]
    context = {
        "title": "A shared transcript" if redacted else mask(name),
        "first_prompt": "" if redacted else mask_text(first_prompt),
        "diagnosis": diagnosis,
        # The verdicts quote ids and names: masked, or redacted, as the share's are.
        "providers": shared_summary(diagnosis, redacted)["providers"],
        "groups": groups,
        "rows": rows,
        "row_total": len(positions),
        "left_out": left_out,
        "filters": filters,
        "page": 1,
        "pages": 1,
        "next_query": None,
        "views": [],
        "redacted": redacted,
        "styles": "\n".join(_static(name) for name in _STYLES),
        "scripts": [_static(name) for name in _SCRIPTS],
    }
    html = render_to_string("inspector/export.html", context, request=request)
    if origin:
        return _ROOT_LINK.sub(lambda m: f'{m.group(1)}="{origin}/', html)
    return _ROOT_HREF.sub("", html)
