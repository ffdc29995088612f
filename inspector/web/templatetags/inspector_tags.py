"""Small filters the inspector's templates share. None of them marks anything safe.

``readable`` hands the rows partial what ``inspector.web.render`` makes of a
row; the HTML in it (Markdown, highlighted code) is sanitised or escaped
there, and the template marks it safe where it draws it.
"""

from __future__ import annotations

from typing import Any

from django import template

from inspector.engine import RULES
from inspector.web.forms import describe_size
from inspector.web.render import readable_row
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
    seen = context.render_context.setdefault("readable_calls", {})
    return readable_row(row, seen, context.get("subagent_links"))
