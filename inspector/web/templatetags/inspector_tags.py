"""Small filters the inspector's templates share. None of them marks anything safe.

``readable`` hands the rows partial what ``inspector.web.render`` makes of a
row; the HTML in it (Markdown, highlighted code) is sanitised or escaped
there, and the template marks it safe where it draws it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from inspector.engine import RULES
from inspector.web.forms import describe_size
from inspector.web.render import Page, readable_row
from inspector.web.timeline import Filters, SessionMap
from inspector.web.timeline import original_page as _original_page

register = template.Library()

# Arguments longer than this (characters or lines) start collapsed.
LONG_ARGUMENTS = 400
LONG_ARGUMENT_LINES = 12
LONG_TEXT = 1000


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
def original_page(row: dict[str, Any]) -> int:
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

    Built here rather than in a template loop: 300 marks through the template
    engine cost more than the rest of the page's header. Every value is escaped.
    """
    if session_map is None:
        return SafeString("")

    def href(mark_page: int, key: str) -> str:
        if mark_page == page:
            return f"#{key}"
        return f"?{urlencode(filters.query(page=mark_page))}#{key}"

    marks = format_html_join(
        "",
        '<a href="{}" tabindex="-1"><rect class="m m-{}" x="{}" y="6" width="1" height="14">'
        "<title>{}</title></rect></a>",
        (
            (
                href(mark.page, mark.key),
                mark.role,
                x,
                f"{mark.role} ({mark.rows} rows)" if mark.rows > 1 else mark.role,
            )
            for x, mark in enumerate(session_map.marks)
        ),
    )
    findings = format_html_join(
        "",
        '<a href="{}" tabindex="-1"><rect class="m-finding" x="{}" y="0" width="1" height="5">'
        "<title>{}</title></rect></a>",
        (
            (href(mark.page, mark.finding_key), x, mark.finding)
            for x, mark in enumerate(session_map.marks)
            if mark.finding
        ),
    )
    start, stop = session_map.window
    return format_html(
        '<svg class="map" viewBox="0 0 {count} {height}" preserveAspectRatio="none" '
        'role="img" aria-label="Map of the {total} rows: one mark per row, coloured by role; '
        'findings above; the rows on this page framed">{marks}{findings}'
        '<rect class="m-window" x="{start}" y="0" width="{width}" height="{height}" '
        'data-per-page="{per_page}"></rect></svg>',
        count=len(session_map.marks),
        height=MAP_HEIGHT,
        total=session_map.total,
        marks=marks,
        findings=findings,
        start=start,
        width=max(stop - start, 1),
        per_page=f"{session_map.per_page:.4f}",
    )


@register.filter
def intcomma_plain(value: Any) -> str:
    """12345 -> "12,345" (humanize's intcomma, without the app)."""
    return f"{int(value or 0):,}"
