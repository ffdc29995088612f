"""Consecutive assistant messages read as the one turn a provider makes of them.

The Messages API combines consecutive turns of one role into a single turn,
and Gemini takes consecutive ``model`` contents the same way: a body whose
assistant asks for one tool in a message, for a second in the next message,
and whose one user message after them answers both is accepted (pydantic-ai's
cross-provider replays are answered 200). Read as two assistant messages, the
repair's spans (SPEC §4: a span ends at the next assistant message) would call
the first call unanswered and its real result an orphan. So the readers of
those two documents join such a run into one canonical assistant message, as
the provider does, and their writers split it back into the records it was
read from before writing, so an untouched record is still written as it was.

Only runs whose every message says something (a call or non-blank content)
and carries nothing but its content, its calls and the private record keys are
joined: a blank placeholder stays the message SPEC's MSG-1 drops, and a
message with metadata of its own keeps it. The members are kept under a
private key (``RUN``), which ``private.public`` strips like every other.
"""

from __future__ import annotations

from typing import Any

from inspector.formats.private import PART, REC, calls_of

Message = dict[str, Any]

RUN = "_run"  # the messages a joined assistant message was read as, in order

_JOINABLE = frozenset({"tool_calls", REC, PART})


def join_runs(
    messages: list[Message], sources: list[list[int]], causes: dict[int, str] | None = None
) -> tuple[list[Message], list[list[int]], dict[int, str]]:
    """``messages`` with each run of consecutive assistant messages that holds a call
    before its last message joined into one; ``sources`` and ``causes`` (keyed by
    message index) follow the messages they belong to."""
    causes = causes or {}
    out: list[Message] = []
    out_sources: list[list[int]] = []
    out_causes: dict[int, str] = {}
    # A message is asked once where the loop asked it twice (as a run's end, then as
    # the next one's start): every reader of the two documents runs this over every
    # message. ``known`` is the last message asked, ``known_flag`` its answer.
    known, known_flag = -1, False
    total = len(messages)
    index = 0
    while index < total:
        end = index + 1
        if end < total and (known_flag if known == index else _joinable(messages[index])):
            while end < total:
                known, known_flag = end, _joinable(messages[end])
                if not known_flag:
                    break
                end += 1
        if end - index > 1 and any(calls_of(m) for m in messages[index : end - 1]):
            out.append(_joined(messages[index:end]))
            out_sources.append([s for i in range(index, end) for s in sources[i]])
        else:
            end = index + 1
            out.append(messages[index])
            out_sources.append(sources[index])
        if causes:
            for at in range(index, end):
                if at in causes:
                    out_causes[len(out) - 1] = causes[at]
        index = end
    return out, out_sources, out_causes


def split_runs(messages: list[Message]) -> list[Message]:
    """Each message ``join_runs`` made as the messages of its records again: the
    read messages where the repair left it whole, else its parts and calls dealt
    back by count (ids renamed, say); one message if the counts no longer fit."""
    if not _any_members(messages):
        return messages
    out: list[Message] = []
    for message in messages:
        members = _members(message)
        if not members:
            out.append(message)
            continue
        if message == _joined(members):
            out.extend(members)
            continue
        dealt = _dealt(message, members)
        if dealt is None:
            md = {k: v for k, v in message["metadata"].items() if k != RUN}
            out.append({**message, "metadata": md})
        else:
            out.extend(dealt)
    return out


def _any_members(messages: list[Message]) -> bool:
    """``any(map(_members, messages))`` in a plain loop: every write asks it of every message."""
    for message in messages:
        md = message.get("metadata") if isinstance(message, dict) else None
        if isinstance(md, dict) and RUN in md and _members(message):
            return True
    return False


def _members(message: Any) -> list[Message] | None:
    md = message.get("metadata") if isinstance(message, dict) else None
    members = md.get(RUN) if isinstance(md, dict) else None
    return members if isinstance(members, list) and members else None


def _joinable(message: Message) -> bool:
    if message.get("role") != "assistant":
        return False
    md = message.get("metadata")
    if not isinstance(md, dict) or not _JOINABLE.issuperset(md) or not isinstance(md.get(REC), int):
        return False
    # ``bool(calls_of(message)) or bool(_parts(...))``, without making either list.
    calls = md.get("tool_calls")
    if isinstance(calls, list) and any(isinstance(c, dict) for c in calls):
        return True
    content = message["content"]
    if isinstance(content, str):
        return bool(content.strip())
    return isinstance(content, list) and bool(content)


def _parts(content: Any) -> list[Any]:
    """An assistant message's content as parts: a text is one text part."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    return list(content) if isinstance(content, list) else []


def _joined(members: list[Message]) -> Message:
    parts = [part for m in members for part in _parts(m["content"])]
    calls = [call for m in members for call in calls_of(m)]
    md: dict[str, Any] = {"tool_calls": calls} if calls else {}
    md |= {REC: members[0]["metadata"][REC], PART: 0, RUN: members}
    return {"role": "assistant", "content": parts if parts or not calls else "", "metadata": md}


def _dealt(message: Message, members: list[Message]) -> list[Message] | None:
    parts = _parts(message["content"])
    calls = calls_of(message)
    sizes = [(len(_parts(m["content"])), len(calls_of(m))) for m in members]
    if len(parts) != sum(p for p, _ in sizes) or len(calls) != sum(c for _, c in sizes):
        return None
    out: list[Message] = []
    for member, (n_parts, n_calls) in zip(members, sizes, strict=True):
        own, parts = parts[:n_parts], parts[n_parts:]
        own_calls, calls = calls[:n_calls], calls[n_calls:]
        content: Any = own
        if own == _parts(member["content"]):
            content = member["content"]  # a text stays a text
        elif not own and own_calls:
            content = ""
        md = {k: v for k, v in member["metadata"].items() if k != "tool_calls"}
        out.append(
            {
                "role": "assistant",
                "content": content,
                "metadata": ({"tool_calls": own_calls} if own_calls else {}) | md,
            }
        )
    return out
