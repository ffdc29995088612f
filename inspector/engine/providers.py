"""What each provider rejects in a history, with the error text it sends back (SPEC §6).

One validator per provider, each taking that provider's own wire shape: the
request body (``{"messages": ...}``, ``{"input": ...}``, ``{"contents": ...}``)
or just the list inside it. Each returns the problems in list order, every
one with the index the provider uses (``index`` as an int, ``path`` the way
the error names it, ``messages.3`` or ``messages.3.content.1``) and the text
the provider returns for it.

The texts are module constants so the rules catalogue can quote the same
words. They are the providers' own wording as seen in real 400 responses,
except the two marked *ours*: no public record of the provider's text for
that case was found, so the wording is the inspector's and says the same
thing.

Pure: this module imports nothing from ``inspector.formats``; converting a
canonical history to a wire shape is the formats' job (``to_wire``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

PROVIDERS = ("openai-chat", "anthropic", "responses", "gemini")

# Anthropic Messages API (invalid_request_error messages).
ANTHROPIC_MISSING_RESULT = (
    "messages.{N}: `tool_use` ids were found without `tool_result` blocks immediately after:"
    " {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next"
    " message."
)
ANTHROPIC_UNEXPECTED_RESULT = (
    "messages.{N}.content.{M}: unexpected `tool_use_id` found in `tool_result` blocks: {id}."
    " Each `tool_result` block must have a corresponding `tool_use` block in the previous"
    " message."
)
ANTHROPIC_DUPLICATE_ID = "messages.{N}.content.{M}: `tool_use` ids must be unique"
ANTHROPIC_EMPTY_TEXT = "messages: text content blocks must be non-empty"
ANTHROPIC_WHITESPACE_TEXT = "messages: text content blocks must contain non-whitespace text"
ANTHROPIC_EMPTY_CONTENT = (
    "messages.{N}: all messages must have non-empty content except for the optional final"
    " assistant message"
)
ANTHROPIC_ID_PATTERN = "^[a-zA-Z0-9_-]+$"
ANTHROPIC_BAD_ID = (
    "messages.{N}.content.{M}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
)
ANTHROPIC_BAD_RESULT_ID = (
    "messages.{N}.content.{M}.tool_result.tool_use_id: String should match pattern"
    " '^[a-zA-Z0-9_-]+$'"
)
ANTHROPIC_INPUT_NOT_OBJECT = (
    "messages.{N}.content.{M}.tool_use.input: Input should be a valid dictionary"
)

# OpenAI Chat Completions. "preceeding" is their spelling.
OPENAI_MISSING_RESULT = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to"
    " each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
OPENAI_ORPHAN_RESULT = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message"
    " with 'tool_calls'."
)
OPENAI_DUPLICATE_RESULT = (
    "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{first}]"
    " and messages[{second}]."
)
# Ours: two calls of one assistant message sharing an id.
OPENAI_DUPLICATE_CALL_ID = (
    "Invalid parameter: Duplicate value for 'tool_calls[{M}].id' of '{id}' in messages[{N}]."
)
OPENAI_ARGUMENTS_NOT_STRING = (
    "Invalid type for 'messages[{N}].tool_calls[{M}].function.arguments': expected a string,"
    " but got {kind} instead."
)

# OpenAI Responses.
RESPONSES_MISSING_OUTPUT = "No tool output found for function call {id}."
RESPONSES_ORPHAN_OUTPUT = "No tool call found for function call output with call_id {id}."
RESPONSES_DUPLICATE_ITEM = (
    "Duplicate item found with id {id}. Remove duplicate items from your input and try again."
)
# Ours: two call items sharing a call_id.
RESPONSES_DUPLICATE_CALL_ID = "Duplicate call_id found in input: {id}."

# Gemini generateContent (INVALID_ARGUMENT messages).
GEMINI_COUNT_MISMATCH = (
    "Please ensure that the number of function response parts is equal to the number of"
    " function call parts of the function call turn."
)
GEMINI_CALL_TURN_PLACEMENT = (
    "Please ensure that function call turn comes immediately after a user turn or after a"
    " function response turn."
)
GEMINI_RESPONSE_TURN_PLACEMENT = (
    "Please ensure that function response turn comes immediately after a function call turn."
)
# A turn with no parts (missing or an empty list), e.g. one whose only parts were another
# provider's reasoning. The API refuses it with 400 INVALID_ARGUMENT and names the turn by
# its proto path (reported verbatim in vercel/ai#3775, langchain-ai/langchain-google#691).
GEMINI_EMPTY_PARTS = (
    "* GenerateContentRequest.contents[{N}].parts: contents.parts must not be empty."
)

_ANTHROPIC_ID = re.compile(ANTHROPIC_ID_PATTERN)


@dataclass(frozen=True, slots=True)
class ProviderProblem:
    """One thing a provider would reject.

    ``index`` is the position in the provider's list (``messages``, ``input``
    or ``contents``); ``path`` names it the way the provider does; ``code``
    is a short stable id for the kind of problem; ``ids`` the call ids
    involved.
    """

    provider: str
    index: int
    path: str
    text: str
    code: str
    ids: tuple[str, ...] = ()


def validate(provider: str, wire: Any, start: int = 0) -> list[ProviderProblem]:
    """Check ``wire`` (that provider's request body or list) as ``provider`` would.

    ``start`` skips the items before it, for a caller that knows they pass and
    bear on nothing after them: the provider accepts the body cut there, its
    last item before the cut is an assistant's reply with no calls, and no id
    before the cut is used after it. Problems keep the body's own indices.
    """
    try:
        check = _VALIDATORS[provider]
    except KeyError:
        raise ValueError(
            f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}"
        ) from None
    return check(wire, start)


def validate_openai_chat(wire: Any, start: int = 0) -> list[ProviderProblem]:
    """Chat Completions: tool messages must follow their assistant message, one per call."""
    messages = _items(wire, "messages")
    problems: list[ProviderProblem] = []

    def add(index: int, text: str, code: str, ids: tuple[str, ...] = ()) -> None:
        problems.append(ProviderProblem("openai-chat", index, f"messages.{index}", text, code, ids))

    total = len(messages)
    i = start
    while i < total:
        message = messages[i]
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            add(i, OPENAI_ORPHAN_RESULT, "orphan_result", (_text(message.get("tool_call_id")),))
            i += 1
            continue
        calls = message.get("tool_calls") if role == "assistant" else None
        if not calls or not isinstance(calls, list):
            i += 1
            continue
        declared: list[str] = []
        for m, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            cid = _text(call.get("id"))
            if cid in declared:
                add(
                    i,
                    OPENAI_DUPLICATE_CALL_ID.format(M=m, id=cid, N=i),
                    "duplicate_call_id",
                    (cid,),
                )
            else:
                declared.append(cid)
            function = call.get("function")
            if isinstance(function, dict) and "arguments" in function:
                arguments = function["arguments"]
                if not isinstance(arguments, str):
                    text = OPENAI_ARGUMENTS_NOT_STRING.format(N=i, M=m, kind=_json_kind(arguments))
                    add(i, text, "arguments_not_string", (cid,))
        answered: dict[str, int] = {}
        j = i + 1
        while j < total and isinstance(messages[j], dict):
            if messages[j].get("role") != "tool":
                break
            rid = messages[j].get("tool_call_id")
            if rid.__class__ is not str:
                rid = _text(rid)
            if rid in answered:
                text = OPENAI_DUPLICATE_RESULT.format(id=rid, first=answered[rid], second=j)
                add(j, text, "duplicate_result", (rid,))
            elif rid in declared:
                answered[rid] = j
            else:
                add(j, OPENAI_ORPHAN_RESULT, "orphan_result", (rid,))
            j += 1
        missing = tuple(cid for cid in declared if cid not in answered)
        if missing:
            add(i, OPENAI_MISSING_RESULT.format(ids=", ".join(missing)), "missing_result", missing)
        i = j
    problems.sort(key=lambda p: p.index)
    return problems


def validate_anthropic(wire: Any, start: int = 0) -> list[ProviderProblem]:
    """Messages API: every tool_use answered in the very next message, valid ids and blocks."""
    messages = _items(wire, "messages")
    problems: list[ProviderProblem] = []
    seen: set[str] = set()
    last = len(messages) - 1
    valid_id = _ANTHROPIC_ID.fullmatch

    def add(index: int, block: int | None, text: str, code: str, ids: tuple[str, ...] = ()) -> None:
        path = f"messages.{index}" if block is None else f"messages.{index}.content.{block}"
        problems.append(ProviderProblem("anthropic", index, path, text, code, ids))

    # One pass over each message's blocks; the tool_use ids of the message
    # before are carried over for checking the results after them.
    before: list[str] = []
    for n, message in enumerate(messages[start:] if start else messages, start):
        if not isinstance(message, dict):
            before = []
            continue
        role = message.get("role")
        content = message.get("content")
        if content in ("", [], None) and not (n == last and role == "assistant"):
            add(n, None, ANTHROPIC_EMPTY_CONTENT.format(N=n), "empty_content")
        elif isinstance(content, str) and content.isspace():
            add(n, None, ANTHROPIC_WHITESPACE_TEXT, "empty_text")
        used: list[str] = []
        results: list[tuple[int, str]] = []
        if isinstance(content, list):
            for m, block in enumerate(content):
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    text = block.get("text")
                    if text == "":
                        add(n, m, ANTHROPIC_EMPTY_TEXT, "empty_text")
                    elif isinstance(text, str) and text.isspace():
                        add(n, m, ANTHROPIC_WHITESPACE_TEXT, "empty_text")
                elif kind == "tool_use":
                    tid = block.get("id")
                    if tid.__class__ is str or isinstance(tid, str):
                        if not valid_id(tid):
                            add(n, m, ANTHROPIC_BAD_ID.format(N=n, M=m), "bad_id", (tid,))
                        if tid in seen:
                            text = ANTHROPIC_DUPLICATE_ID.format(N=n, M=m)
                            add(n, m, text, "duplicate_id", (tid,))
                    else:
                        tid = _text(tid)
                        add(n, m, ANTHROPIC_BAD_ID.format(N=n, M=m), "bad_id", (tid,))
                    seen.add(tid)
                    if not isinstance(block.get("input"), dict):
                        add(n, m, ANTHROPIC_INPUT_NOT_OBJECT.format(N=n, M=m), "input_not_object")
                    used.append(tid)
                elif kind == "tool_result":
                    rid = block.get("tool_use_id")
                    if rid.__class__ is not str and not isinstance(rid, str):
                        rid = _text(rid)
                        add(n, m, ANTHROPIC_BAD_RESULT_ID.format(N=n, M=m), "bad_id", (rid,))
                    elif not valid_id(rid):
                        add(n, m, ANTHROPIC_BAD_RESULT_ID.format(N=n, M=m), "bad_id", (rid,))
                    results.append((m, rid))
        if role == "user":
            for m, rid in results:
                if rid not in before:
                    text = ANTHROPIC_UNEXPECTED_RESULT.format(N=n, M=m, id=rid)
                    add(n, m, text, "orphan_result", (rid,))
        elif role == "assistant" and used:
            after = messages[n + 1] if n < last else None
            answered = _tool_result_ids(after)
            missing = tuple(dict.fromkeys(u for u in used if u not in answered))
            if missing:
                text = ANTHROPIC_MISSING_RESULT.format(N=n, ids=", ".join(missing))
                add(n, None, text, "missing_result", missing)
        before = used if role == "assistant" else []
    return problems


def validate_responses(wire: Any, start: int = 0) -> list[ProviderProblem]:
    """Responses API: every call item has an output item after it, and the reverse.

    Unlike Chat Completions, an output does not have to follow its call
    directly; it only has to come after it somewhere in ``input``.
    """
    items = _items(wire, "input")
    problems: list[ProviderProblem] = []
    calls: dict[str, int] = {}
    answered: set[str] = set()
    item_ids: set[str] = set()

    def add(index: int, text: str, code: str, ids: tuple[str, ...] = ()) -> None:
        problems.append(ProviderProblem("responses", index, f"input.{index}", text, code, ids))

    for i, item in enumerate(items[start:] if start else items, start):
        if item.__class__ is not dict and not isinstance(item, dict):
            continue
        iid = item.get("id")
        if iid and isinstance(iid, str):
            if iid in item_ids:
                add(i, RESPONSES_DUPLICATE_ITEM.format(id=iid), "duplicate_item", (iid,))
            item_ids.add(iid)
        if "call_id" not in item:
            continue
        kind = item.get("type")
        if kind.__class__ is not str and not isinstance(kind, str):
            continue
        cid = item["call_id"]
        if cid.__class__ is not str:
            cid = _text(cid)
        if kind.endswith("_call_output"):
            if cid in calls:
                answered.add(cid)
            else:
                add(i, RESPONSES_ORPHAN_OUTPUT.format(id=cid), "orphan_result", (cid,))
        elif kind.endswith("_call"):
            if cid in calls:
                add(i, RESPONSES_DUPLICATE_CALL_ID.format(id=cid), "duplicate_call_id", (cid,))
            else:
                calls[cid] = i
    for cid, i in calls.items():
        if cid not in answered:
            add(i, RESPONSES_MISSING_OUTPUT.format(id=cid), "missing_result", (cid,))
    problems.sort(key=lambda p: p.index)
    return problems


def validate_gemini(wire: Any, start: int = 0) -> list[ProviderProblem]:
    """generateContent: no turn without parts; a call turn follows a user turn, answered in full.

    A function call turn at the very end of ``contents`` counts as answered
    by zero response parts: the history cannot be continued from there.
    """
    contents = _items(wire, "contents")
    problems: list[ProviderProblem] = []

    def add(index: int, text: str, code: str) -> None:
        problems.append(ProviderProblem("gemini", index, f"contents.{index}", text, code))

    # (call parts, response parts) of each turn, counted once: a turn is
    # looked at again from the turns on either side (the one before ``start`` too).
    first = max(start - 1, 0)
    counts = [(0, 0)] * first + [_count_calls(turn) for turn in contents[first:]]
    total = len(contents)
    for t, turn in enumerate(contents[start:] if start else contents, start):
        if not isinstance(turn, dict):
            continue
        if not turn.get("parts"):
            add(t, GEMINI_EMPTY_PARTS.format(N=t), "empty_parts")
        role = turn.get("role")
        calls, responses = counts[t]
        before = contents[t - 1] if t > 0 else None
        if role == "model" and calls:
            if not (isinstance(before, dict) and before.get("role") in ("user", "function")):
                add(t, GEMINI_CALL_TURN_PLACEMENT, "call_turn_placement")
            after = contents[t + 1] if t + 1 < total else None
            answered = 0
            if isinstance(after, dict) and after.get("role") in ("user", "function"):
                answered = counts[t + 1][1]
            if answered != calls:
                add(t + 1 if after is not None else t, GEMINI_COUNT_MISMATCH, "count_mismatch")
        elif role in ("user", "function") and responses:
            if not (
                isinstance(before, dict) and before.get("role") == "model" and counts[t - 1][0]
            ):
                add(t, GEMINI_RESPONSE_TURN_PLACEMENT, "response_turn_placement")
    problems.sort(key=lambda p: p.index)
    return problems


_VALIDATORS = {
    "openai-chat": validate_openai_chat,
    "anthropic": validate_anthropic,
    "responses": validate_responses,
    "gemini": validate_gemini,
}


def _items(wire: Any, key: str) -> list[Any]:
    """The list a validator walks: the body's ``key`` list, or ``wire`` itself."""
    if isinstance(wire, dict):
        wire = wire.get(key)
    return wire if isinstance(wire, list) else []


def _text(value: Any) -> str:
    """An id as the error text shows it; ids that are not strings still get named."""
    return value if isinstance(value, str) else "" if value is None else str(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else "an object"


def _tool_result_ids(message: Any) -> set[str]:
    if not isinstance(message, dict) or message.get("role") != "user":
        return set()
    content = message.get("content")
    if not isinstance(content, list):
        return set()
    return {
        _text(block.get("tool_use_id"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "tool_result"
    }


def _count_calls(turn: Any) -> tuple[int, int]:
    """How many function call parts and function response parts a turn holds."""
    parts = turn.get("parts") if isinstance(turn, dict) else None
    if not isinstance(parts, list):
        return 0, 0
    calls = responses = 0
    for part in parts:
        if isinstance(part, dict):
            if "functionCall" in part:
                calls += 1
            if "functionResponse" in part:
                responses += 1
    return calls, responses
