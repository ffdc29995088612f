"""Small filters the inspector's templates share. None of them marks anything safe but
``verdicts``, which escapes every piece of text it writes.

``readable`` hands the rows partial what ``inspector.web.render`` makes of a
row; the HTML in it (Markdown, highlighted code) is sanitised or escaped
there, and the template marks it safe where it draws it.
"""

from __future__ import annotations

import html
import unicodedata
from typing import Any
from urllib.parse import urlencode

import orjson
from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import localize
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from inspector.diagnosis.model import Row
from inspector.diagnosis.select import Filters, SessionMap
from inspector.diagnosis.select import original_page as _original_page
from inspector.engine import RULES
from inspector.engine.causes import mark_words
from inspector.web.forms import describe_size
from inspector.web.render import Page, readable_row

register = template.Library()

# Arguments longer than this (characters or lines) start collapsed.
LONG_ARGUMENTS = 400
LONG_ARGUMENT_LINES = 12
LONG_TEXT = 1000


@register.filter
def cause_words(cause: Any) -> str:
    """A row's label for why its turn was cut (``inspector.engine.causes``)."""
    return mark_words(cause if isinstance(cause, str) else None)


@register.filter
def rule_title(rule_id: str) -> str:
    rule = RULES.get(rule_id)
    return getattr(rule, "title", "") if rule is not None else ""


@register.filter
def is_long(text: Any) -> bool:
    text = str(text or "")
    return len(text) > LONG_ARGUMENTS or text.count("\n") >= LONG_ARGUMENT_LINES


@register.filter
def is_long_text(text: Any) -> bool:
    return len(str(text or "")) > LONG_TEXT


@register.filter
def filesize(size: int) -> str:
    return describe_size(int(size or 0))


@register.filter
def plus_one(value: int | None) -> int | str:
    """Message indexes are 0-based inside; people read 1-based numbers."""
    return "" if value is None else int(value) + 1


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    return mapping.get(key) if isinstance(mapping, dict) else None


PROVIDER_LABELS = {
    "openai-chat": "OpenAI Chat",
    "anthropic": "Anthropic",
    "responses": "Responses",
    "gemini": "Gemini",
}


@register.filter
def provider_label(name: str) -> str:
    return PROVIDER_LABELS.get(name, name)


@register.filter
def original_page(row: Row) -> int:
    return _original_page(row)


@register.simple_tag(takes_context=True)
def readable(context: template.Context, row: dict[str, Any]) -> dict[str, Any]:
    """The row's content as drawn: from the very row the page shows (masked on share pages).

    The calls seen so far in this render are kept, so a result reads in the
    light of its call; the view's ``subagent_links`` give Task calls their link.
    """
    page = context.render_context.get("readable_page")
    if page is None:
        page = context.render_context["readable_page"] = Page()
    return readable_row(row, page, context.get("subagent_links"))


MAP_HEIGHT = 20


@register.simple_tag
def session_map_svg(session_map: SessionMap | None, filters: Filters, page: int) -> SafeString:
    """The map above the timeline as SVG: a mark per row (or run of rows), coloured by role,
    the findings above them, the page being shown framed; every mark links to its rows.

    Built here with plain strings rather than a template loop or format_html
    per mark: 300 marks that way cost more than the rest of the page's header
    (25 ms against 3 ms). Every value put in is escaped.
    """
    if session_map is None:
        return SafeString("")
    pages: dict[int, str] = {}

    def href(mark_page: int, key: str) -> str:
        if mark_page == page:
            return f"#{escape(key)}"
        if mark_page not in pages:
            pages[mark_page] = escape(f"?{urlencode(filters.query(page=mark_page))}")
        return f"{pages[mark_page]}#{escape(key)}"

    out = [
        f'<svg class="map" viewBox="0 0 {len(session_map.marks)} {MAP_HEIGHT}" '
        'preserveAspectRatio="none" role="img" '
        f'aria-label="Map of the {session_map.total} rows: one mark per row, coloured by role; '
        'findings above; the rows on this page framed">'
    ]
    for x, mark in enumerate(session_map.marks):
        role = escape(mark.role)
        label = f"{role} ({mark.rows} rows)" if mark.rows > 1 else role
        out.append(
            f'<a href="{href(mark.page, mark.key)}" tabindex="-1"><rect class="m m-{role}" '
            f'x="{x}" y="6" width="1" height="14"><title>{label}</title></rect></a>'
        )
    for x, mark in enumerate(session_map.marks):
        if mark.finding:
            out.append(
                f'<a href="{href(mark.page, mark.finding_key)}" tabindex="-1">'
                f'<rect class="m-finding" x="{x}" y="0" width="1" height="5">'
                f"<title>{escape(mark.finding)}</title></rect></a>"
            )
    start, stop = session_map.window
    out.append(
        f'<rect class="m-window" x="{start}" y="0" width="{max(stop - start, 1)}" '
        f'height="{MAP_HEIGHT}" data-per-page="{session_map.per_page:.4f}"></rect></svg>'
    )
    return SafeString("".join(out))


@register.simple_tag
def day_bars(bars: list[dict[str, Any]]) -> SafeString:
    """The day chart's bars (``scan.reports.day_chart``): per day, its title and a rect per part.

    Plain strings, as ``session_map_svg``: the template loop over a big project's
    270 days cost about 40 ms of its dashboard. Every value is a number or a date but
    the part's kind, which is escaped.
    """
    out = []
    for bar in bars:
        out.append(
            f"<g><title>{bar['day'].isoformat()}: {bar['repair']} need repair, "
            f"{bar['clean']} clean, {bar['unreadable']} unreadable</title>"
        )
        for part in bar["parts"]:
            out.append(
                f'<rect x="{bar["x"]}" y="{part["y"]}" width="{bar["width"]}" '
                f'height="{part["height"]}" class="bar-{escape(part["kind"])}"></rect>'
            )
        out.append("</g>\n")
    return SafeString("".join(out))


@register.simple_tag
def project_rows(projects: Any) -> SafeString:
    """The project list's rows (``scan.reports.project_list``: ``sessions``, ``needing_repair``).

    Plain strings, as ``day_bars``: the template loop, a lookup per cell, cost about
    35 ms of the list of 150 projects. The names are escaped; the date is the
    ``date:"Y-m-d"`` of the project's creation in the current time zone.
    """
    out = []
    for project in projects:
        url = escape(reverse("scan:project", args=[project.slug]))
        repair = int(project.needing_repair)
        cell = f'<span class="bad-text">{repair}</span>' if repair else "0"
        out.append(
            f'    <tr>\n      <td><a href="{url}">{escape(project.name)}</a></td>\n'
            f'      <td class="num">{int(project.sessions)}</td>\n'
            f'      <td class="num">{cell}</td>\n'
            f"      <td>{timezone.localdate(project.created).isoformat()}</td>\n    </tr>\n"
        )
    return SafeString("".join(out))


@register.simple_tag
def unreadable_rows(files: Any) -> SafeString:
    """The dashboard's unreadable files (``scan.reports.unreadable_list``), a row each.

    Plain strings, as ``project_rows``: a big project lists hundreds. Path and reason
    escaped; the link is the file's scan (``job``, its public id), its text the
    ``date:"Y-m-d H:i"`` of when the file was read (blank if never).
    """
    escape = _escape
    out = []
    jobs: dict[str, str] = {}
    for file in files:
        url = jobs.get(file.job)
        if url is None:
            url = jobs[file.job] = escape(reverse("scan:job", args=[file.job]))
        when = ""
        if file.finished is not None:
            t = timezone.localtime(file.finished)
            when = f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}"
        out.append(
            f'<tr><td class="path">{escape(file.path)}</td><td>{escape(file.reason)}</td>'
            f'<td><a href="{url}">{when}</a></td></tr>'
        )
    return SafeString("".join(out))


_NO_FINDINGS = '<span class="ok-text">none</span>'


def _shown(value: Any) -> str:
    """``{{ value }}`` as a template shows it: localized, then escaped."""
    return html.escape(str(localize(value)))


def _escape(value: Any) -> str:
    """``escape(value)``, without its check for lazy strings: a table's rows call it thousands
    of times."""
    return html.escape(str(value))


def _prompt(prompt: Any) -> str:
    """``Truncator(localize(prompt)).chars(90)``: a prompt no longer than that once normalised,
    as most are, is itself (``chars`` would count its characters one by one to find so)."""
    shown = localize(prompt)
    if isinstance(shown, str):
        normal = unicodedata.normalize("NFC", shown)
        if len(normal) <= PROMPT_CHARS:
            return normal
    return Truncator(shown).chars(PROMPT_CHARS)


PROMPT_CHARS = 90


@register.simple_tag
def session_rows(sessions: Any) -> SafeString:
    """The dashboard's sessions table, a row per session (``scan.reports.page_of``'s page).

    Plain strings, as ``verdicts``: the template loop, its lookups, filters and
    ``{% url %}`` for each cell, was most of the table's time (about 1 ms a row).
    What the loop showed, as it showed it: every value escaped, a meta or counts
    that is not an object showing nothing. The sessions of a page share a few
    verdicts: each is drawn once (keyed by its JSON).
    """
    escape = _escape
    out = []
    rules: dict[str, str] = {}
    drawn: dict[bytes, str] = {}
    for t in sessions:
        meta = t.meta if isinstance(t.meta, dict) else {}
        prompt = meta.get("first_prompt")
        url = escape(t.get_absolute_url())
        when = ""
        if t.date is not None:
            moment = timezone.localtime(t.date)
            when = (
                f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d} "
                f"{moment.hour:02d}:{moment.minute:02d}"
            )
        title = ""
        if prompt:
            title = (
                f'<a href="{url}" class="title" title="{_shown(prompt)}">'
                f"{escape(_prompt(prompt))}</a><br>"
            )
        parent = ""
        if t.parent is not None:
            parent = (
                f' · subagent of <a href="{escape(t.parent.get_absolute_url())}">'
                f"{escape(t.parent.relative_path or t.parent.file_name)}</a>"
            )
        badges = []
        counts = t.counts if isinstance(t.counts, dict) else {}
        for rule, count in counts.items():
            href = rules.get(rule)
            if href is None:
                href = rules[rule] = escape(reverse("rule", args=[rule]))
            badges.append(
                f'<a class="badge" href="{href}" title="{escape(rule_title(rule))}">'
                f"{escape(rule)} \u00d7{_shown(count)}</a> "
            )
        if t.needs_repair:
            chips = '<span class="chip bad">needs repair</span>'
        elif not t.message_count:
            chips = '<span class="chip">empty</span>'
        else:
            chips = '<span class="chip ok">clean</span>'
        if t.problems:
            chips += (
                ' <span class="chip warn" title="lines or records no reader could read">'
                f"{t.problems} unreadable line{'' if t.problems == 1 else 's'}</span>"
            )
        out.append(
            f"      <tr>\n        <td>{when}</td>\n"
            f'        <td>{title}<span class="{"small" if prompt else ""}">'
            f'<a href="{url}" class="path">{escape(t.relative_path or t.file_name)}</a></span>\n'
            f'          <span class="muted small">{escape(t.format)}{parent}</span></td>\n'
            f'        <td class="num">{t.message_count}</td>\n'
            f"        <td>{''.join(badges) or _NO_FINDINGS}</td>\n"
            f"        <td>{chips}</td>\n"
            f"        <td>{_drawn_verdicts(t.verdicts, drawn)}</td>\n      </tr>\n"
        )
    return SafeString("".join(out))


def _drawn_verdicts(value: Any, drawn: dict[bytes, str]) -> str:
    """``verdicts(value)``, drawn once for each JSON value it is given (in ``drawn``)."""
    try:
        key = orjson.dumps(value)
    except TypeError:  # not a JSON value orjson writes (an integer past 64 bits)
        return verdicts(value)
    found = drawn.get(key)
    if found is None:
        found = drawn[key] = verdicts(value)
    return found


@register.filter
def intcomma_plain(value: Any) -> str:
    """12345 -> "12,345" (humanize's intcomma, without the app)."""
    return f"{int(value or 0):,}"


def _verdict_word(ok: Any, undecided: Any) -> str:
    if not ok:
        return "rejected"
    if undecided:
        return f"cannot tell ({undecided[0]})"
    return "accepted"


def _verdict_mark(ok: Any, undecided: Any) -> str:
    if not ok:
        return '<span class="bad">✗</span>'
    if undecided:
        return '<span class="warn" aria-label="cannot tell">?</span>'
    return '<span class="ok">✓</span>'


@register.simple_tag
def verdicts(verdicts: Any) -> SafeString:
    """Each provider's verdict, before → after repair, for the tables (a row's ``verdicts``).

    Built here rather than by an included template: a table of 50 sessions
    included one 50 times, about half of what a dashboard's table took to draw
    (``bench/bench_scale.py``). Every piece of text is escaped; only the markup
    written here is not.
    """
    out = []
    for name, verdict in (verdicts or {}).items():
        label = escape(PROVIDER_LABELS.get(name, name))
        before = (verdict.get("before_ok"), verdict.get("before_undecided"))
        after = (verdict.get("after_ok"), verdict.get("after_undecided"))
        notes = verdict.get("notes") or ()
        title = (
            f"{label}: {escape(_verdict_word(*before))} before, "
            f"{escape(_verdict_word(*after))} after repair"
            + "".join(f"; {escape(note)}" for note in notes)
        )
        starred = (
            '<span class="muted" aria-label="not everything was checked">*</span>' if notes else ""
        )
        out.append(
            f'<span class="verdict" title="{title}">{label} {_verdict_mark(*before)}→'
            f"{_verdict_mark(*after)}{starred}</span> "
        )
    return mark_safe("".join(out))  # noqa: S308 -- every piece of text is escaped above
