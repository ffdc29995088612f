"""Provider bodies cut down to what the provider checks read, for regular histories.

Checking a history the way each provider would (``inspector.engine.providers``)
needs each provider's body, and making four full bodies of a long session
costs more than reading it did. The checks read little of a body: roles,
where each message lands, the ids of calls and results, which blocks are text
and whether a call's input is an object. For a *regular* history, whose
every message is one the four ``to_wire`` functions turn out in a simple,
fixed way, this module writes a skeleton body with just that in the same
places, from one small digest per message shared by the four providers. A
check reads the skeleton exactly as it reads the real body: same problems,
same indices, same texts. It is never sent anywhere.

A message is regular when (after its private keys are stripped):

- it is a ``user`` or ``assistant`` message whose content is a string, or a
  non-empty list of ``text`` parts, with text that is not blank (a part may
  carry the ``phase`` of the Responses item it was read from, not its id); an
  assistant message may have thinking blocks among them (as Claude Code
  writes: Anthropic keeps them, the others leave them out), and with calls
  it may have no text at all (``""``, ``[]`` or thinking only);
- only an assistant message has calls; each is an object with a string id
  (``tool_call_id``, else ``id``; not a server tool's ``srvtoolu_`` id, which
  Anthropic's check treats apart) and arguments that are an object, or
  text that decodes to one (``json_object``: OpenAI Chat's and Codex's
  calls carry their arguments as JSON text);
- it is a ``tool`` message with a non-empty string ``tool_call_id`` and
  string content or a list of typed parts (each provider writes it as one
  result, whatever it holds);
- or it is a ``system`` message with such content before every other
  message.

Anything else (images, another provider's parts, a blank text, a later
system message, arguments that are text but no JSON object: cut, empty,
a list, a number; Codex's reasoning items beside an assistant message)
makes the history irregular,
and the caller makes the real body. ``tests/diagnosis/test_skeleton.py``
holds the skeletons to the real bodies over generated histories and the
corpus.

Most of a long session is quiet: turns whose calls are all answered right
after them, with ids used nowhere else. No check can fault such a stretch,
and nothing in it changes what a check finds after it. The skeleton writes
the longest quiet prefix (``quiet_prefix``) as stand-in items every check
accepts, as many as the body has there, so only the rest is looked at
closely, with the same indices as in the real body.
"""

from __future__ import annotations

import re
from itertools import islice
from typing import Any, Literal, NamedTuple

from inspector.engine.canonical import json_object
from inspector.engine.providers import (
    ANTHROPIC_ID_PATTERN,
    ANTHROPIC_SERVER_ID_PREFIX,
    ANTHROPIC_THINKING,
    CALL_ID_MAX,
)
from inspector.formats.anthropic import sendable_block

# A message's digest: (role, the blocks Anthropic gets of its content, the text parts
# the others get, the runs of text parts (Responses writes a message item for each),
# its call ids, its result id).
Digest = tuple[str, int, int, int, tuple[str, ...], str]
# Digests kept by message id; ``False``: the message is not regular.
Memo = dict[int, Digest | Literal[False]]

# Assistant parts that Anthropic keeps as blocks and the other providers leave
# out (Responses ends a message item at one).

# Shared stand-ins: a check reads them, nothing writes them.
_TEXT = {"type": "text", "text": "text"}
_NO_INPUT: dict[str, Any] = {}
_GEMINI_TEXT = {"text": "text"}
_GEMINI_RESPONSE: dict[str, dict[str, Any]] = {"functionResponse": {}}
_GEMINI_CALL: dict[str, dict[str, Any]] = {"functionCall": {}}
_NO_METADATA: dict[str, Any] = {}


def digest(message: dict[str, Any]) -> Digest | None:
    """What the checks need of one message, or ``None`` when it is not regular."""
    # The cases in the order a long session holds them, most first: results,
    # then assistant replies with calls. Each key is read once.
    role = message.get("role")
    metadata = message.get("metadata")
    if metadata is None:
        metadata = _NO_METADATA
    elif metadata.__class__ is not dict:
        return None
    if role == "tool":
        # Every provider writes one result for a tool message, whatever it holds.
        rid = metadata.get("tool_call_id")
        if rid.__class__ is not str or not rid or metadata.get("tool_calls"):
            return None
        if "item" in metadata and not _kind(metadata["item"], "function_call_output"):
            return None  # a Responses output of its own kind (the checks' texts name it)
        content = message.get("content")
        if content.__class__ is not str and not _parts(content):
            return None
        return ("tool", 0, 0, 0, (), rid)
    if role == "assistant" and metadata.get("reasoning"):
        # Codex's reasoning items, which Responses sends before the turn's items (with
        # ids and checks of their own): the skeleton has no place for them.
        return None
    calls = metadata.get("tool_calls")
    if calls:
        if role != "assistant" or calls.__class__ is not list:
            return None
        found: list[str] = []
        for call in calls:
            if call.__class__ is not dict:
                return None
            arguments = call.get("arguments")
            if arguments.__class__ is not dict and not _object_text(arguments):
                return None
            if "item" in call and not _kind(call["item"], "function_call"):
                return None  # a Responses call of its own kind (the checks' texts name it)
            if "after_parts" in call:
                return None  # Responses places it among its message's parts
            value = call.get("tool_call_id") or call.get("id") or ""
            if value.__class__ is not str or value.startswith(ANTHROPIC_SERVER_ID_PREFIX):
                # A tool the server runs: Anthropic wants its result in the same turn,
                # never a client result (the checks' rule for it reads the real body).
                return None
            # The engine's ``call_id_text(call)``, inlined: this reads every call of a session.
            found.append(value)
        ids: tuple[str, ...] = tuple(found)
    elif role == "assistant" or role == "user":
        ids = ()
    elif role == "system":
        if metadata.get("instructions") is True:
            return None  # Responses sends it as ``instructions``, not as an item
        ids = ()
    else:
        return None
    content = message.get("content")
    if content.__class__ is str:
        if content and not content.isspace():  # not blank (``strip`` would copy it)
            return (role, 1, 1, 1, ids, "")
        return (role, 0, 0, 0, ids, "") if ids and not content else None
    if content.__class__ is not list:
        return None
    if not content:
        return (role, 0, 0, 0, ids, "") if ids else None
    texts = runs = 0
    in_run = False
    run_item = None
    for part in content:
        kind = part.get("type") if part.__class__ is dict else None
        if kind == "text":
            text = part.get("text")
            if text.__class__ is not str or not text or text.isspace():
                return None
            kept = part.get("item")  # the Responses message item it was read from
            if kept is not None and not _no_item_id(kept):
                return None  # a message item id: the checks read ids
            texts += 1
            runs += not in_run or kept != run_item  # each item is written as it was
            run_item = kept
            in_run = True
        elif role == "assistant" and kind.__class__ is str and kind in ANTHROPIC_THINKING:
            if not sendable_block(part):
                return None  # Anthropic's export leaves it out: it cannot be sent back
            in_run = False
        else:
            return None
    if not (texts or ids):
        return None  # thinking alone: some providers leave the whole message out
    return (role, len(content), texts, runs, ids, "")


def _object_text(arguments: Any) -> bool:
    """Whether ``arguments`` is text that decodes to a JSON object (OpenAI Chat, Codex).

    Each body then holds what it holds for the object: OpenAI's shapes keep
    the text as it is (a string, as their checks want), Anthropic's ``input``
    and Gemini's ``args`` are the decoded object (``arguments_dict``). Text
    that decodes to anything else, or to nothing (cut mid-stream, empty),
    is not regular: the caller makes the real body.
    """
    return arguments.__class__ is str and json_object(arguments) is not None


def _no_item_id(item: Any) -> bool:
    """Whether what a text part carries of its Responses message item holds no item id
    (a ``phase`` alone, as Codex writes it, changes nothing a check reads)."""
    return item.__class__ is dict and "id" not in item


def _kind(item: Any, kind: str) -> bool:
    """Whether what a call or result carries of its Responses item is of ``kind``."""
    return item.__class__ is dict and item.get("type") == kind


def _parts(content: Any) -> bool:
    """Whether ``content`` is a list of typed parts."""
    return content.__class__ is list and all(
        part.__class__ is dict and part.get("type").__class__ is str for part in content
    )


def digests(
    messages: list[dict[str, Any]], memo: Memo | None = None, leading: bool = True
) -> list[Digest] | None:
    """The digest of every message, or ``None`` when the history is not regular.

    ``memo`` keeps digests by message id, to be taken again rather than made:
    the caller holds the messages, so their ids stay theirs while it is used.
    ``leading``: no message but a system message comes before these (they
    may open with system messages).
    """
    out: list[Digest] = []
    append = out.append
    if memo is None:
        # Nothing to look up (a first history): lookups would add a fifth to
        # the time here.
        for message in messages:
            found = digest(message)
            if found is None:
                return None
            if found[0] == "system":
                if not leading:
                    return None  # a later system message is written as user text
            else:
                leading = False
            append(found)
        return out
    for message in messages:
        key = id(message)
        known = memo.get(key)
        if known is None:
            known = memo[key] = digest(message) or False
        if known is False:
            return None
        if known[0] == "system":
            if not leading:
                return None  # a later system message is written as user text: not regular
        else:
            leading = False
        append(known)
    return out


def regular_start(messages: list[dict[str, Any]]) -> list[Digest]:
    """The digests of the longest run of regular messages that opens ``messages``."""
    out: list[Digest] = []
    leading = True
    for message in messages:
        found = digest(message)
        if found is None or (found[0] == "system" and not leading):
            break
        leading = leading and found[0] == "system"
        out.append(found)
    return out


def turn_cut(start: list[Digest]) -> int:
    """Where the last user's message after an assistant's reply stands among the regular
    messages ``start`` holds, past the first (0 for none): no body merges it with what
    comes before it, so a body is that of the messages before it followed by that of
    the rest. One after ``start`` (a message that is not regular) does not count: a
    provider might write nothing for it."""
    for at in range(len(start) - 1, 0, -1):
        if start[at][0] == "user" and start[at - 1][0] == "assistant":
            return at
    return 0


def head_items(provider: str, head: list[Digest]) -> list[dict[str, Any]]:
    """The skeleton of ``provider``'s items for regular messages ``head`` that more
    messages follow, starting with a user's after the last of them (``turn_cut``): the
    items of the body a regular history that goes on so would have for them."""
    if provider == "anthropic":
        items: list[dict[str, Any]] = _anthropic(head, ends=False)["messages"]
        return items
    items = BUILDERS[provider](head)[_KEYS[provider]]
    return items


def quiet_start(
    provider: str, start: list[Digest], later_ids: set[str], found: Walk
) -> tuple[int, int]:
    """``quiet_prefix`` for a history that is regular only in its ``start`` (whose walk
    is ``found``): the messages its quiet prefix holds and the items of ``provider``'s
    body for them, ``(0, 0)`` for none. ``later_ids`` are the ids of the messages after
    ``start``; a quiet turn whose id comes again there is not quiet.

    The walk's cut at the end of ``start`` is no cut here: a message that is not
    regular follows it, which may join the turn before it.
    """
    cuts = [cut for cut in found.cuts if cut.at < len(start)]
    tail: list[Digest] = [("", 0, 0, 0, tuple(later_ids), "")]
    return quiet_prefix(provider, [*start, *tail], Walk(cuts, found.calls, found.stop))


def renamed_digests(history: list[Digest], renamed: dict[str, str]) -> list[Digest]:
    """``history`` with the ids ``renamed`` maps renamed, as the export sends them."""
    get = renamed.get
    return [
        (role, blocks, texts, runs, tuple(get(cid, cid) for cid in ids), get(rid, rid))
        for role, blocks, texts, runs, ids, rid in history
    ]


def ids(history: list[Digest], found: Walk | None = None) -> list[str]:
    """Every call and result id in history order, each once, as ``formats._ids`` lists them.

    ``found`` is ``walk(history)``, when the caller has it. Before where it
    stopped, the ids are its quiet calls', in order (each result comes after
    its call, and no id comes twice), so only the rest is read here.
    """
    if found is None:
        found = walk(history)
    quiet = found.calls
    later: dict[str, None] = {}
    for _, _, _, _, calls, rid in history[found.stop :]:
        if rid and rid not in quiet:
            later[rid] = None
        for cid in calls:
            if cid not in quiet:
                later[cid] = None
    return [*quiet, *later]


def body(
    provider: str, history: list[Digest], renamed: dict[str, str], found: Walk | None = None
) -> dict[str, Any]:
    """The skeleton of ``provider``'s body for a regular history's digests.

    ``renamed`` maps the ids the body carries renamed, as ``export_wire`` does.
    ``found`` is ``walk(history)``, when the caller has it.
    """
    return quiet_body(provider, history, renamed, found)[0]


def quiet_body(
    provider: str, history: list[Digest], renamed: dict[str, str], found: Walk | None = None
) -> tuple[dict[str, Any], int]:
    """``body``, and how many items at its start stand in for its quiet prefix.

    ``providers._validate_from(provider, wire, that)`` may skip them: they
    pass and bear on nothing after them, which is its precondition.
    """
    if renamed:
        history = renamed_digests(history, renamed)
        found = walk(history)
    elif found is None:
        found = walk(history)
    length, items = quiet_prefix(provider, history, found)
    if not length:
        return BUILDERS[provider](history), 0
    wire = BUILDERS[provider](history[length:])
    key = _KEYS[provider]
    wire[key] = [_STAND_IN[provider]] * items + wire[key]
    return wire, items


# --- quiet prefixes ------------------------------------------------------------

_ANTHROPIC_ID = re.compile(ANTHROPIC_ID_PATTERN).fullmatch

_KEYS = {
    "openai-chat": "messages",
    "anthropic": "messages",
    "responses": "input",
    "gemini": "contents",
}

# What a check reads in place of each item of a quiet prefix: an item it accepts,
# and that the item after the prefix takes, as it would the prefix's last item
# (an assistant's reply with no calls), for nothing to answer or to be answered by.
_STAND_IN: dict[str, dict[str, Any]] = {
    "openai-chat": {"role": "assistant"},
    "anthropic": {"role": "assistant", "content": "text"},
    "responses": {"role": "assistant"},
    "gemini": {"role": "model", "parts": [_GEMINI_TEXT]},
}


class Cut(NamedTuple):
    """A place a quiet prefix may end: before a user's message that follows an
    assistant's reply (no body merges the two), or at the end of the history."""

    at: int  # the digests before it
    items: dict[str, int]  # the items each provider's body has for them
    strict: bool  # whether Anthropic accepts every id before it
    opens_with_call: bool  # whether Gemini's body opens with a user turn of its own


class Walk(NamedTuple):
    """One pass over a history: where a quiet prefix may end, and where each id is."""

    cuts: list[Cut]
    calls: dict[str, int]  # each quiet call's id -> the index of its assistant message
    stop: int  # the digests it walked: their ids are the quiet calls', in order


def walk(history: list[Digest], resume: tuple[Walk, int] | None = None) -> Walk:
    """The cuts of ``history``'s longest run of quiet turns from its start.

    Quiet: every message is a user's or an assistant's, or one of the results
    right after an assistant message with calls, one for each of its calls
    in any order; no call id is used twice. Stops at the first message that
    is not so: a result anywhere else, a call left unanswered or answered
    twice.

    ``resume``: the walk of a history whose first ``shared`` digests are this
    one's (a repaired history and its original): this walk starts from its
    last cut among them.
    """
    cut = Cut(0, dict.fromkeys(_KEYS, 0), True, False)
    cuts = [cut]
    calls: dict[str, int] = {}
    if resume is not None:
        earlier, shared = resume
        # Its first cut is this one; a later cut reads the digest at it, which
        # must be shared too. The walk below makes the last one kept again.
        later = [c for c in earlier.cuts[1:] if c.at < shared]
        if later:
            cut = later[-1]
            cuts += later[:-1]
            # Its calls, in the order of their messages, up to the cut.
            calls = earlier.calls.copy()
            while calls and next(reversed(calls.values())) >= cut.at:
                calls.popitem()
    resumed = len(calls)
    total = len(history)
    # The items each body has so far (Chat Completions: one a message), and
    # what Anthropic and Gemini need to know of the message or turn being made:
    # a run of one side is one Gemini turn, and one Anthropic message unless a
    # user's text comes with no result before it in the run.
    opens_with_call = cut.opens_with_call  # Gemini's body then opens with a user turn of its own
    responses = cut.items["responses"]
    anthropic = cut.items["anthropic"]
    gemini = cut.items["gemini"] - opens_with_call
    side = "assistant" if cut.at else ""  # what comes before a cut
    has_result = False
    # The cuts found here: whether Anthropic accepts every id before them is found last.
    ends: list[tuple[int, int, int, int, bool]] = []
    index = cut.at
    while index < total:
        role, _, _, runs, ids, _ = history[index]
        if ids:  # an assistant message with calls, the most common turn: are they answered?
            count = len(ids)
            end = index + 1 + count
            if count == 1:  # by the next message
                if end > total:
                    break
                answer = history[index + 1]
                cid = ids[0]
                if answer[0] != "tool" or answer[5] != cid or cid in calls:
                    break
                calls[cid] = index
            else:  # by the next ``count`` messages, results with as many different ids, its ids
                answered = {answer[5] for answer in history[index + 1 : end] if answer[0] == "tool"}
                if (
                    len(answered) != count
                    or answered != set(ids)
                    or not calls.keys().isdisjoint(answered)
                ):
                    break
                for cid in ids:
                    calls[cid] = index
            if side != "assistant":
                gemini += 1
                anthropic += 1
            if gemini == 1:
                opens_with_call = True
            # Its message items and calls, then its results: one item each,
            # and one user run of their own.
            responses += runs + 2 * count
            gemini += 1
            anthropic += 1
            has_result = True
            side = "user"
            index = end
            continue
        if role == "user":
            if side == "assistant":
                ends.append((index, anthropic, responses, gemini, opens_with_call))
            responses += 1
            if side != "user":
                gemini += 1
                anthropic += 1
                has_result = False
                side = "user"
            elif not has_result:
                anthropic += 1
        elif role == "assistant":
            responses += runs
            if side != "assistant":
                gemini += 1
                anthropic += 1
                side = "assistant"
        elif role == "system":
            responses += 1
        else:
            break  # a result outside a quiet turn
        index += 1
    else:
        ends.append((total, anthropic, responses, gemini, opens_with_call))
    # Anthropic accepts every id before a cut unless the first call it refuses
    # comes before it. One match for all the calls walked here (none is empty:
    # each has its result) rather than one a call; the calls one by one only
    # when it fails.
    refused = total if cut.strict else -1
    if cut.strict:
        walked = "".join(islice(calls, resumed, None))
        if walked and not _ANTHROPIC_ID(walked):
            walked_calls = islice(calls.items(), resumed, None)
            refused = next(at for cid, at in walked_calls if not _ANTHROPIC_ID(cid))
    cuts += [_cut(at, a, r, g, at <= refused, o) for at, a, r, g, o in ends]
    return Walk(cuts, calls, index)


def _cut(
    at: int, anthropic: int, responses: int, gemini: int, strict: bool, opens_with_call: bool
) -> Cut:
    # Chat Completions has an item a message; Gemini's body may open with a turn of its own.
    items = {
        "openai-chat": at,
        "anthropic": anthropic,
        "responses": responses,
        "gemini": gemini + opens_with_call,
    }
    return Cut(at, items, strict, opens_with_call)


def quiet_prefix(provider: str, history: list[Digest], found: Walk) -> tuple[int, int]:
    """The digests in the quiet prefix ``provider``'s checks may skip, and its items there.

    Anthropic also refuses ids outside its pattern, and OpenAI Chat and
    Responses ids over their length limits, so their prefixes end before the
    first such id. A quiet
    turn's id used again after the prefix (a reused id, or a late result for
    it) would tie the two: the prefix then ends before that turn.
    """
    cuts = found.cuts
    if provider == "anthropic":
        cuts = [cut for cut in cuts if cut.strict]
    cut = cuts[-1]
    calls = found.calls
    earliest = cut.at
    limit = CALL_ID_MAX.get(provider)
    if limit is not None:
        # OpenAI Chat and Responses refuse an id over their length limit: the prefix
        # ends before it.
        for cid, at in calls.items():
            if len(cid) > limit and at < earliest:
                earliest = at
    for _, _, _, _, ids, rid in history[cut.at :]:
        for cid in ids:
            earliest = min(earliest, calls.get(cid, earliest))
        if rid:
            earliest = min(earliest, calls.get(rid, earliest))
    if earliest < cut.at:
        cut = next(cut for cut in reversed(cuts) if cut.at <= earliest)
    return cut.at, cut.items[provider]


def _openai_chat(history: list[Digest]) -> dict[str, Any]:
    # One message each; an assistant message with calls and no text keeps its calls.
    out: list[dict[str, Any]] = []
    for role, _, _, _, ids, rid in history:
        if role == "tool":
            out.append({"role": "tool", "tool_call_id": rid})
        elif ids:
            out.append({"role": role, "tool_calls": [{"id": cid} for cid in ids]})
        else:
            out.append({"role": role})
    return {"messages": out}


def _anthropic(history: list[Digest], *, ends: bool = True) -> dict[str, Any]:
    # ``formats.anthropic._groups`` on digests (no record keys: a request body):
    # leading system messages go to ``system``; a run of assistant messages is
    # one message; results and the messages of their side after them are one
    # user message, and a user's text starts a new one unless results lead it.
    # The last message, an assistant's, goes without its thinking blocks (``_final_reply``):
    # the digests from ``final`` on are its, and only their text blocks are written.
    # ``ends``: the body ends with them (else a user's message follows, as ``head_items``).
    final = len(history)
    while ends and final and history[final - 1][0] == "assistant":
        final -= 1
    out: list[dict[str, Any]] = []
    side = ""
    blocks: list[Any] = []
    has_result = False
    for index, (role, content_blocks, texts, _, ids, rid) in enumerate(history):
        if role == "system":
            continue
        if index >= final:
            content_blocks = texts
        here = "assistant" if role == "assistant" else "user"
        if blocks and not (here == side and (role != "user" or has_result)):
            out.append({"role": side, "content": blocks})
            blocks = []
            has_result = False
        side = here
        if role == "tool":
            blocks.append({"type": "tool_result", "tool_use_id": rid})
            has_result = True
            continue
        # Thinking blocks stand as text blocks: the check reads neither kind as wrong.
        if content_blocks == 1:
            blocks.append(_TEXT)
        elif content_blocks:
            blocks.extend([_TEXT] * content_blocks)
        for cid in ids:
            blocks.append({"type": "tool_use", "id": cid, "input": _NO_INPUT})
    if blocks:
        out.append({"role": side, "content": blocks})
    return {"messages": out}


def _responses(history: list[Digest]) -> dict[str, Any]:
    # A message item each (an assistant's text in one item a run), then one item
    # per call; a result is a call output item.
    out: list[dict[str, Any]] = []
    for role, _, _, runs, ids, rid in history:
        if role == "tool":
            out.append({"type": "function_call_output", "call_id": rid})
            continue
        if role != "assistant" or runs == 1:
            out.append({"role": role})
        elif runs:
            out.extend([{"role": role}] * runs)
        for cid in ids:
            out.append({"type": "function_call", "call_id": cid})
    return {"input": out}


def _gemini(history: list[Digest]) -> dict[str, Any]:
    # ``formats.gemini._groups`` on digests (a request body): leading system
    # messages go to ``systemInstruction``; turns alternate by side, and a
    # history opening with a call turn gets a user turn first.
    contents: list[dict[str, Any]] = []
    side = ""
    parts: list[Any] = []
    for role, _, texts, _, ids, _ in history:
        if role == "system":
            continue
        here = "model" if role == "assistant" else "user"
        if parts and here != side:
            contents.append({"role": side, "parts": parts})
            parts = []
        side = here
        if role == "tool":
            parts.append(_GEMINI_RESPONSE)
            continue
        parts.extend([_GEMINI_TEXT] * texts)
        parts.extend([_GEMINI_CALL] * len(ids))
    if parts:
        contents.append({"role": side, "parts": parts})
    if contents and contents[0]["role"] == "model" and _GEMINI_CALL in contents[0]["parts"]:
        contents.insert(0, {"role": "user", "parts": [_GEMINI_TEXT]})
    return {"contents": contents}


BUILDERS = {
    "openai-chat": _openai_chat,
    "anthropic": _anthropic,
    "responses": _responses,
    "gemini": _gemini,
}
