"""The guard's shortcut for a refused body: only what follows the kept start is read.

The plain path (``inspector.guard._repaired``) reads the whole body as the
inspector does, repairs what follows the longest start the provider accepts
and writes the whole history back with the shape's writer, which writes every
message of that start as the record it was read from. ``read_rest`` and
``written`` make the
same body from the list items after that start alone: it finds the start on
the raw items (the latest assistant item, or for Responses the latest start of
a response, at or before the first problem, whose start the provider accepts),
reads only the items after it (with the body's other keys, so its system
prompt too), repairs and writes them, and puts them after the start's items as
they came. The start's items are looked through
once for what reading the whole would refuse and for their ids.

That gives the plain path's bytes where reading and repairing are local at
the cut, which is what ``read_rest`` makes sure of before it answers (else
``None``, and the plain path runs):

- the item before the cut is not an assistant's, so no run of assistant
  messages is joined across it (``formats.runs``), and none between the cut
  and the first problem follows another (where the reader might join them,
  the SPEC's cuts are not plain on the raw items);
- every item of the start is one the reader takes (no ``Problem``, nothing
  that refuses the file) and written in this shape (``detect.item_shape``);
- every call and result id of the start and of the rest is a non-empty id the
  provider's export takes (``formats.id_rules``), no call id is used twice,
  and the rest uses none of the start's: so no id is renamed, made up
  (Gemini's ``call_{turn}_{index}``, ID-2's ``call_{m}_{c}``, which name
  positions in the whole), or looked up across the cut (Anthropic's result
  names), and the repair of the rest alone is what follows the start in the
  repair of the whole (the engine's prefix rule, ``repair_history``'s
  ``assigned``);
- Responses: the cut is where the reader starts the model's response (after a
  user, system or developer message or an output; an assistant message item
  after the model's text or calls, where it may also start one, is left to the
  plain path), the start answers its own calls and no item id of it is used
  after it;
- the repaired body is accepted as first written (else the plain path tries
  its other writings).

The provider's check is not walked again over the start where no check looks
across the cut (``providers.local_cut``; for Responses the conditions above):
the start then has the body's problems before the first one, none, and the body
sent is checked from the cut on (``accepted``, ``providers.check_after``).
``tests/guard/test_tail.py`` holds it to the plain path byte for byte, and the
split check to the whole one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from inspector import formats
from inspector.engine import Repair
from inspector.engine.canonical import is_blank, is_partial
from inspector.engine.providers import (
    HISTORY_KEY,
    RESPONSES_CALLS,
    RESPONSES_OUTPUTS,
    RESPONSES_SERVER_ITEMS,
    check,
    check_after,
    local_cut,
)
from inspector.formats.base import Parsed
from inspector.formats.detect import item_shape
from inspector.formats.openai_chat import missing_content
from inspector.formats.private import call_id, calls_of
from inspector.formats.responses import is_call, is_output

__all__ = [
    "ANTHROPIC_KEYS",
    "ANTHROPIC_PARTS",
    "CHAT_KEYS",
    "RESPONSES_KINDS",
    "RESPONSES_ROLES",
    "Rest",
    "accepted",
    "plain_chat",
    "read_rest",
    "sendable_ids",
    "surely_ends_a_span",
    "written",
]


@dataclass(frozen=True, slots=True)
class _Shape:
    """What the shortcut asks of a shape: the role its model's items carry, and
    ``head_ids(items)``: the call ids and the result ids of items the reader takes
    as they are, or ``None`` for an item it might not (or might read otherwise)."""

    model_role: str
    head_ids: Callable[[list[Any]], tuple[list[str], list[str]] | None]
    # Whether its reader joins a run of assistant messages with a call before its last
    # (``formats.runs``), and the key or block type of a call in a model item.
    joins: bool = False
    call_key: str = ""


# The keys and part types of a record that ``detect.item_shape`` can only find in the
# shape's own (or no) shape, given the roles the ``_ids`` functions let through; any
# other record is asked of it. (Every Gemini content has ``parts``: always Gemini's.)
_CHAT_KEYS = CHAT_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_CHAT_PARTS = frozenset({"text", "image_url", "input_audio"})
_ANTHROPIC_KEYS = ANTHROPIC_KEYS = frozenset({"role", "content"})
_ANTHROPIC_PARTS = ANTHROPIC_PARTS = frozenset(
    {"text", "tool_use", "tool_result", "thinking", "redacted_thinking"}
)


def _plain(
    record: dict[str, Any], content: Any, keys: frozenset[str], parts: frozenset[str], own: str
) -> bool:
    """Whether the reader's ``refuse_others`` would count ``record`` for its own shape or
    for none (so reading the start with the rest cannot make the list another shape's)."""
    if keys.issuperset(record) and (
        not isinstance(content, list)
        or all(p.__class__ is not dict or p.get("type") in parts for p in content)
    ):
        return True
    return item_shape(record) in (None, own)


def plain_chat(record: dict[str, Any], content: Any) -> bool:
    """``_plain`` for a Chat record: the reader counts it for Chat's shape or for none."""
    return _plain(record, content, _CHAT_KEYS, _CHAT_PARTS, "openai-chat")


def _chat_ids(items: list[Any]) -> tuple[list[str], list[str]] | None:
    """``openai_chat._canonical_message``'s ids, for records it reads without a problem."""
    calls: list[str] = []
    results: list[str] = []
    for record in items:
        if record.__class__ is not dict or missing_content(record) is not None:
            return None
        role = record.get("role")
        content = record.get("content")
        if content is not None and not isinstance(content, str | list):
            return None
        if not _plain(record, content, _CHAT_KEYS, _CHAT_PARTS, "openai-chat"):
            return None
        if role == "assistant":
            raw = record.get("tool_calls")
            if record.get("function_call") is not None or not isinstance(raw, list | None):
                return None  # the pre-tools call: an id-less call
            for call in raw or ():
                if call.__class__ is not dict:
                    return None
                paired = call.get("call_id")
                cid = paired if isinstance(paired, str) and paired else call.get("id")
                if not isinstance(cid, str) or not cid or call.get("type") == "custom":
                    return None
                calls.append(cid)
        elif role == "tool":
            rid = record.get("tool_call_id")
            if not isinstance(rid, str) or not rid:
                return None
            results.append(rid)
        elif role not in ("system", "developer", "user"):
            return None  # "function" answers by name; anything else is a problem
    return calls, results


def _anthropic_ids(items: list[Any]) -> tuple[list[str], list[str]] | None:
    """``anthropic._canonical_messages``' ids, for messages it reads without a problem.

    One walk of each message's blocks: its ids, and whether they are all of the block
    types ``_plain`` takes as they are (else the record is asked of ``item_shape``)."""
    calls: list[str] = []
    results: list[str] = []
    parts = _ANTHROPIC_PARTS
    for record in items:
        if record.__class__ is not dict:
            return None
        role = record.get("role")
        content = record.get("content")
        if role not in ("user", "assistant", "system"):
            return None
        plain = _ANTHROPIC_KEYS.issuperset(record)
        if content.__class__ is not list:
            if not isinstance(content, str | list):
                return None
            if isinstance(content, str):
                if not plain and item_shape(record) not in (None, "anthropic"):
                    return None
                continue
        for block in content:
            if block.__class__ is not dict:
                continue
            kind = block.get("type")
            if kind not in parts:
                plain = False
            elif kind == "text":
                if not isinstance(block.get("text"), str):
                    return None  # a text part the reader keeps as it is (``_unread_part``)
            elif kind == "tool_use":
                if role == "assistant":
                    cid = block.get("id")
                    if not isinstance(cid, str) or not cid:
                        return None
                    calls.append(cid)
            elif kind == "tool_result" and role == "user":
                rid = block.get("tool_use_id")
                if not isinstance(rid, str) or not rid:
                    return None
                results.append(rid)
        if not plain and item_shape(record) not in (None, "anthropic"):
            return None
    return calls, results


def _gemini_ids(items: list[Any]) -> tuple[list[str], list[str]] | None:
    """``gemini._read_contents``' ids, for turns that carry their ids (none made up)."""
    calls: list[str] = []
    results: list[str] = []
    for content in items:
        role = content.get("role") if content.__class__ is dict else None
        if role not in ("user", "model", "function"):
            return None  # not a content, or not a turn the reader takes
        parts = content.get("parts")
        if not isinstance(parts, list):
            return None
        for part in parts:
            if part.__class__ is not dict:
                continue
            if role == "model":
                call = part.get("functionCall")
                if isinstance(call, dict):
                    cid = call.get("id")
                    if not isinstance(cid, str) or not cid:
                        return None
                    calls.append(cid)
            else:
                response = part.get("functionResponse")
                if isinstance(response, dict):
                    rid = response.get("id")
                    if not isinstance(rid, str) or not rid:
                        return None
                    results.append(rid)
    return calls, results


# The Responses item kinds the shortcut reads in a start: messages, reasoning, client
# calls and their outputs, and what the server ran; any other kind is the plain path's.
_RESPONSES_KINDS = RESPONSES_KINDS = frozenset(
    {None, "message", "reasoning", *RESPONSES_CALLS, *RESPONSES_OUTPUTS, *RESPONSES_SERVER_ITEMS}
)
_RESPONSES_ROLES = RESPONSES_ROLES = ("user", "system", "developer", "assistant")


def _responses_ids(items: list[Any]) -> tuple[list[str], list[str]] | None:
    """``responses._read``'s ids, for items it reads without a problem, each a client
    call or output carrying its ``call_id`` (not the item ``id`` some writers pair by)."""
    calls: list[str] = []
    results: list[str] = []
    for item in items:
        if item.__class__ is not dict:
            return None
        kind = item.get("type")
        if kind.__class__ is not str and kind is not None:
            return None
        if kind not in _RESPONSES_KINDS or item_shape(item) not in (None, "responses"):
            return None
        iid = item.get("id")
        if iid is not None and (iid.__class__ is not str or not iid):
            return None
        if kind is None or kind == "message":
            content = item.get("content")
            if item.get("role") not in _RESPONSES_ROLES or not isinstance(content, str | list):
                return None
            continue
        if is_call(item) or is_output(item):
            cid = item.get("call_id")
            if cid.__class__ is not str or not cid:
                return None
            (calls if is_call(item) else results).append(cid)
    return calls, results


def _item_ids(items: list[Any]) -> set[str]:
    """The Responses item ids (``id``) of ``items``: the provider takes each once."""
    return {i["id"] for i in items if i.__class__ is dict and i.get("id").__class__ is str}


def _opens_response(items: list[Any], at: int) -> bool | None:
    """Whether the reader starts an assistant message at Responses item ``at``, a cut no
    check looks across but for ids: ``True`` right after a user, system or developer
    message or an output (the reader closes the model's items there), or at an
    assistant message item after the model's text or calls (it starts another) that is
    not reasoning's; ``False`` where the item is not the model's or goes on its
    message; ``None`` where the items are not plain, or the start would end in reasoning
    that the item at the cut follows (the start alone is refused: the plain path's)."""
    item = items[at]
    if item.__class__ is not dict or _closes(item):
        return None if item.__class__ is not dict else False
    kind = item.get("type")
    if kind is not None and kind.__class__ is not str:
        return None
    said = False  # whether the model's items before ``at`` hold text or a call
    n = at - 1
    while n >= 0:
        before = items[n]
        if before.__class__ is not dict:
            return None
        if _closes(before):
            break
        said = said or is_call(before) or _is_message(before)
        n -= 1
    if n == at - 1:
        return True
    if not _is_message(item) or not said:
        return False
    return None if items[at - 1].get("type") == "reasoning" else True


def _is_message(item: dict[str, Any]) -> bool:
    return item.get("type") in (None, "message") and item.get("role") == "assistant"


def _closes(item: dict[str, Any]) -> bool:
    """Whether a Responses item is a user's, system or developer message or an output."""
    kind = item.get("type")
    if kind is None or kind == "message":
        return item.get("role") in ("user", "system", "developer")
    return is_output(item)


_SHAPES = {
    "openai-chat": _Shape("assistant", _chat_ids),
    "anthropic": _Shape("assistant", _anthropic_ids, joins=True, call_key="tool_use"),
    "gemini": _Shape("model", _gemini_ids, joins=True, call_key="functionCall"),
    "responses": _Shape("", _responses_ids),
}


@dataclass(frozen=True, slots=True)
class Rest:
    """What follows the kept start, read alone: ``parsed`` holds the body's leading
    system messages (``lead`` of them) and then the rest's; ``head`` the start's items."""

    head: list[Any]
    parsed: Parsed
    lead: int
    # Whether no check looks across the cut (``providers.local_cut``): then the body
    # sent is checked from the cut on alone (``accepted``).
    local: bool = False
    # Responses: the start's call ids and item ids, which the body sent after it must not
    # use again (the provider's check would refuse what its check from the cut sees not).
    calls: frozenset[str] = frozenset()
    items: frozenset[str] = frozenset()
    # The ids the start's repair gave out, where the rest uses one of them (ID-1 skips
    # them: ``repair_history``'s ``assigned``); empty where it uses none.
    assigned: frozenset[str] = frozenset()


def read_rest(
    body: dict[str, Any], key: str, provider: str, first: int, model: str | None
) -> Rest | None:
    """The rest after the kept start of ``body``, which ``provider`` refuses first at list
    position ``first``, read alone; ``None`` where the plain path might read or repair
    it otherwise (see the module)."""
    shape = _SHAPES.get(provider)
    if shape is None:
        return None
    items = body[key]
    role = shape.model_role

    def by_model(item: Any) -> bool:
        return item.__class__ is dict and item.get("role") == role

    start = 0
    local = False
    for at in range(min(first, len(items) - 1), 0, -1):
        if provider == "responses":
            opens = _opens_response(items, at)
            if opens is None:
                return None  # a cut the reader may make inside the model's items
            if opens:
                start, local = at, True  # its start is accepted: see below
                break
            continue
        if not by_model(items[at]):
            continue
        if shape.joins and by_model(items[at - 1]) and _may_join(items, at, shape):
            return None
        # Where no check looks across the cut, the start has the body's problems before
        # ``first``: none, so it is accepted without walking it again.
        local = local_cut(provider, body, at, model=model)
        if local or check(provider, {**body, key: items[:at]}, model=model).accepted:
            start = at
            break
    if not start:
        return None
    head = items[:start]
    ids = shape.head_ids(head)
    if ids is None:
        return None
    head_calls, head_results = ids
    if len(set(head_calls)) != len(head_calls) or shape.head_ids(items[start:]) is None:
        return None  # the rest's ids read from the items too: none made up from a position
    head_items: frozenset[str] = frozenset()
    if provider == "responses":
        # The start has the body's problems before ``first``, none, but for a call it
        # leaves to an output after the cut; the body sent is checked from the cut on,
        # with no item id or call id the start has (``accepted``).
        if not set(head_calls).issubset(head_results):
            return None
        head_items = frozenset(_item_ids(head))
        if head_items.intersection(_item_ids(items[start:])):
            return None
    try:
        parsed = formats.load(orjson.dumps({**body, key: items[start:]}), provider)
    except formats.FormatError:
        return None
    if parsed.problems or parsed.causes or parsed.not_started or parsed.state["mode"] != "body":
        return None
    messages, sources = parsed.messages, parsed.sources
    lead = 0
    while lead < len(sources) and sources[lead] == [0]:
        lead += 1  # the system prompt, read from the body's own key
    if lead == len(messages) or not surely_ends_a_span(messages[lead]):
        return None
    opened = sources[lead]  # a Responses message is the items of one response
    if opened != [1] and (provider != "responses" or not opened or opened[0] != 1):
        return None
    rest = messages[lead:]
    rest_ids = formats.history_ids(rest)
    rest_calls = [call_id(c) for m in rest for c in calls_of(m)]
    if len(set(rest_calls)) != len(rest_calls) or "" in rest_ids:
        return None
    taken = {*head_calls, *head_results}
    reused = taken.intersection(rest_ids)
    if reused and not _renamed_alone(reused, rest, head, head_calls, head_results, provider):
        return None
    if provider == "anthropic" and not head_results and not any(m["role"] == "tool" for m in rest):
        return None  # no result anywhere: the reader's ``_answered_elsewhere`` reads them all
    chars, limit = formats.id_rules(provider)
    for value in (*taken, *rest_ids):
        if (chars is not None and not chars.fullmatch(value)) or (
            limit is not None and len(value) > limit
        ):
            return None  # an id the export renames: renaming reads the whole history
    assigned = frozenset(head_calls) if reused else frozenset()
    return Rest(head, parsed, lead, local, frozenset(head_calls), head_items, assigned)


def _renamed_alone(
    reused: set[str],
    rest: list[dict[str, Any]],
    head: list[Any],
    head_calls: list[str],
    head_results: list[str],
    provider: str,
) -> bool:
    """Whether the rest, which uses ``reused`` ids of the start, is repaired alone as in
    the whole when the repair is told the start's call ids (``Rest.assigned``).

    Kimi's and Gemini's ids restart every reply, so a later call may carry an earlier
    call's id: the engine renames it (ID-1, ``{id}_{k}``), skipping every id the start's
    repair gave out. Those are the start's call ids, each given once, where no call of
    the start is cut mid-stream (INT-1 would take it out) and every result of the start
    answers one of them. Only calls of the rest may use them: a result of the rest under
    a start's id takes its tool's name (or kind) from the start's call in the reader
    that reads the whole.
    """
    if not reused.issubset(head_calls) or not set(head_results).issubset(head_calls):
        return False
    if any(call_id(m["metadata"]) in reused for m in rest if m["role"] == "tool"):
        return False
    return not _cut_call(head, provider)


def _cut_call(items: list[Any], provider: str) -> bool:
    """Whether a call of ``items`` (records ``head_ids`` took) has arguments cut mid-stream
    (``canonical.is_partial``): each reader keeps a call's raw arguments as they are."""
    for item in items:
        for arguments in _raw_arguments(item, provider):
            if is_partial(arguments):
                return True
    return False


def _raw_arguments(item: dict[str, Any], provider: str) -> list[Any]:
    """The arguments of the calls in one record, as its shape's reader takes them."""
    if provider == "openai-chat":
        found = []
        calls = item.get("tool_calls") if item.get("role") == "assistant" else None
        for call in calls or ():
            if call.get("type") == "custom" and isinstance(call.get("custom"), dict):
                continue  # read as {"input": ...}
            function = call.get("function")
            found.append(function.get("arguments", "") if isinstance(function, dict) else "")
        return found
    if provider == "responses":
        return [item.get("arguments", "")] if item.get("type") == "function_call" else []
    if provider == "anthropic":
        content = item.get("content")
        if item.get("role") != "assistant" or not isinstance(content, list):
            return []
        return [
            b.get("input") for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    parts = item.get("parts")
    if item.get("role") != "model" or not isinstance(parts, list):
        return []
    calls = [p.get("functionCall") for p in parts if isinstance(p, dict)]
    return [call.get("args", {}) for call in calls if isinstance(call, dict)]


def sendable_ids(messages: list[dict[str, Any]], provider: str) -> bool:
    """Whether every call and result id of ``messages`` is one ``provider``'s export
    takes as it is (``formats.id_rules``): else the export renames it (ID-3)."""
    chars, limit = formats.id_rules(provider)
    if chars is None and limit is None:
        return True
    return not any(
        (chars is not None and not chars.fullmatch(value))
        or (limit is not None and len(value) > limit)
        for value in formats.history_ids(messages)
    )


def accepted(rest: Rest, out: dict[str, Any], provider: str, model: str | None) -> bool:
    """Whether ``provider`` accepts ``out``, the body ``written`` after ``rest``'s start:
    the items after the start alone are checked where no check looks across the cut
    (the start is accepted, and its items are the body's as they came)."""
    start = len(rest.head)
    if provider == "responses" and rest.local:
        after = out[HISTORY_KEY[provider]][start:]
        sent_calls = {i.get("call_id") for i in after if i.__class__ is dict and is_call(i)}
        if rest.items.intersection(_item_ids(after)) or rest.calls.intersection(sent_calls):
            return False
        return check_after(provider, out, start, model=model).accepted
    if rest.local and local_cut(provider, out, start, model=model):
        return check_after(provider, out, start, model=model).accepted
    return check(provider, out, model=model).accepted


def written(rest: Rest, repaired: Repair, body: dict[str, Any], key: str, provider: str) -> Any:
    """The body with the start's items as they came and the repaired rest written after
    them by the shape's own writer."""
    messages = [*rest.parsed.messages[: rest.lead], *repaired.messages[rest.lead :]]
    out = orjson.loads(formats.FORMATS[provider].serialise(messages, rest.parsed))
    return {**out, key: [*rest.head, *out[key]]}


def _may_join(items: list[Any], at: int, shape: _Shape) -> bool:
    """Whether the run of model items around ``at`` may be read as one message: it holds
    a call before its last item (every item taken as joinable, which is the most)."""
    first = at
    while first > 0 and _by(items[first - 1], shape):
        first -= 1
    end = at
    while end + 1 < len(items) and _by(items[end + 1], shape):
        end += 1
    return any(_has_call(items[n], shape.call_key) for n in range(first, end))


def _by(item: Any, shape: _Shape) -> bool:
    return item.__class__ is dict and item.get("role") == shape.model_role


def _has_call(item: dict[str, Any], key: str) -> bool:
    """Whether a model item holds a call: an Anthropic ``tool_use`` block, a Gemini
    ``functionCall`` part (any of them; a part that is not one is no call)."""
    content = item.get("content" if key == "tool_use" else "parts")
    if not isinstance(content, list):
        return False
    if key == "tool_use":
        return any(b.__class__ is dict and b.get("type") == key for b in content)
    return any(b.__class__ is dict and b.get(key) is not None for b in content)


def surely_ends_a_span(message: dict[str, Any]) -> bool:
    """SPEC §4's cut: an assistant message with non-blank content or a call that parses."""
    if message.get("role") != "assistant":
        return False
    if not is_blank(message.get("content")):
        return True
    md = message.get("metadata")
    calls = md.get("tool_calls") if isinstance(md, dict) else None
    return any(
        isinstance(call, dict) and not is_partial(call.get("arguments")) for call in calls or ()
    )
