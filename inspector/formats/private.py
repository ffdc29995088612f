"""What the shape modules note on canonical messages, and the few ways they read them.

*Private metadata.* A shape module notes where each canonical message came
from under metadata keys starting with ``_`` (``REC``: the index of the
source record, ``SYSTEM_REC`` (-1) for a system prompt kept outside the list
and ``RESPONSE_REC`` (-2) for a recorded response; ``PART``: the block or
part inside it; ``END``: one past the last item of a group). The engine
carries such keys through, so ``serialise`` can write untouched records back
exactly and regroup messages that one source record was split into.
``strip_private`` removes them for canonical downloads and wire bodies.

The rest reads a canonical message as every writer does: its metadata, its
calls, a call's id (the engine's reading), whether a history is the one read
(``unchanged``), how providers that merge a side's messages group them
(``turns``), and how a record's calls stand against the repaired ones
(``kept_calls``). No Django.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import compress, count
from operator import is_not
from typing import Any

from inspector.engine.canonical import call_id_text

REC = "_rec"
PART = "_part"
END = "_end"
SYSTEM_REC = -1
RESPONSE_REC = -2

Message = dict[str, Any]


def strip_private(messages: Iterable[Message]) -> list[Message]:
    """Copies of ``messages`` without metadata keys starting with ``_``.

    Messages that have none are returned as they are (not copied).
    """
    return [public(m) for m in messages]


def public(message: Message) -> Message:
    metadata = message.get("metadata")
    if metadata.__class__ is not dict and not isinstance(metadata, dict):
        return message
    # A plain loop: this runs once per message per export, and most have no private key.
    for key in metadata:
        if key.startswith("_"):
            break
    else:
        return message
    clean = dict(message)
    clean["metadata"] = {k: v for k, v in metadata.items() if not k.startswith("_")}
    return clean


def origin(message: Message) -> int | None:
    """The source record a message came from (``_rec``), or None for a new one."""
    metadata = message.get("metadata")
    rec = metadata.get(REC) if isinstance(metadata, dict) else None
    return rec if isinstance(rec, int) else None


def metadata(message: Message) -> dict[str, Any]:
    value = message.get("metadata")
    return value if value.__class__ is dict or isinstance(value, dict) else {}


def calls_of(message: Message) -> list[dict[str, Any]]:
    value = message.get("metadata")
    if value.__class__ is not dict and not isinstance(value, dict):
        return []
    calls = value.get("tool_calls")
    if calls.__class__ is not list and not isinstance(calls, list):
        return []
    return [c for c in calls if c.__class__ is dict or isinstance(c, dict)]


def same_start(before: list[Message], after: list[Message]) -> int:
    """How many messages ``after`` starts with that are ``before``'s very objects.

    Repair returns the messages it leaves alone as the same dicts, so a
    repaired history starts with its original up to the first repair. Found
    in C (the first place the two lists hold different objects), not a
    message at a time: a long session is mostly that run.
    """
    return next(compress(count(), map(is_not, before, after)), min(len(before), len(after)))


def turns(
    messages: list[Message],
    side: Callable[[Message], str],
    *,
    by_record: bool,
    user_text: Callable[[Message], bool] | None = None,
) -> list[tuple[str, int | None, list[Message]]]:
    """Messages grouped as a provider that merges a side's consecutive messages sends them.

    Each group is ``(side, source record, members)``: consecutive messages of
    one ``side`` share a group. With ``by_record`` (writing a file back),
    messages read from one record stay that record's and messages of two
    records stay apart; a message no record holds (the repair's) joins the
    group before it, except that a message ``user_text`` says is a user's own
    text joins only a group holding results (a note the repair added goes with
    the results before it, never with a user's words). Without ``by_record``
    (a request body) records are not looked at.
    """
    groups: list[tuple[str, int | None, list[Message]]] = []
    # The open group in locals, put in ``groups`` when the next one starts: every writer
    # of the two documents runs this over every message.
    members: list[Message] | None = None
    last_role = ""
    last_rec: int | None = None
    for message in messages:
        role = side(message)
        rec = None
        if by_record:
            md = message.get("metadata")
            rec = md.get(REC) if md.__class__ is dict or isinstance(md, dict) else None
            if rec.__class__ is not int and not isinstance(rec, int):
                rec = None
        if members is not None:
            if last_role == role:
                if rec is not None and last_rec is not None:
                    joins = rec == last_rec
                elif rec is None and user_text is not None and user_text(message):
                    joins = any(m["role"] == "tool" for m in members)
                else:
                    joins = True
                if joins:
                    members.append(message)
                    if rec is not None:
                        last_rec = rec
                    continue
            groups.append((last_role, last_rec, members))
        members, last_role, last_rec = [message], role, rec
    if members is not None:
        groups.append((last_role, last_rec, members))
    return groups


def unchanged(messages: list[Message], before: list[Message]) -> bool:
    """Whether a writer was handed back the history it read: then it gives the file's bytes."""
    if len(messages) != len(before):
        return False
    return all(m is b or m == b for m, b in zip(messages, before, strict=True))


def call_id(obj: dict[str, Any]) -> str:
    """A call's or result's id under either spelling (SPEC MEM-11): the engine's reading."""
    return call_id_text(obj)


def kept_calls(old: list[Any], new: list[Any]) -> Callable[[], tuple[str, str] | None]:
    """Walk an assistant record's original call blocks against the repaired message's calls.

    The record writers of pi, Cline and pydantic-ai call the returned function once
    per original call block, in order: it gives the call's id as read and the id
    it goes out with (the same unless renamed), or ``None`` if the repair removed
    the call. A call is kept when the next repaired call has its name and arguments.
    """
    calls = [c for c in new if isinstance(c, dict)]
    n = k = 0

    def next_call() -> tuple[str, str] | None:
        nonlocal n, k
        call = old[n] if n < len(old) else None
        n += 1
        candidate = calls[k] if k < len(calls) else None
        if (
            call is None
            or candidate is None
            or candidate.get("name") != call["name"]
            or candidate.get("arguments") != call["arguments"]
        ):
            return None
        k += 1
        return call["tool_call_id"], call_id(candidate)

    return next_call


def by_origin(messages: list[Message]) -> dict[int, list[Message]]:
    """The parsed messages of each source record, for spotting untouched groups."""
    groups: dict[int, list[Message]] = {}
    for message in messages:
        # ``origin`` inlined: every reader of a record shape runs this over every message.
        md = message.get("metadata")
        rec = md.get(REC) if md.__class__ is dict or isinstance(md, dict) else None
        if rec.__class__ is int or (rec is not None and isinstance(rec, int)):
            found = groups.get(rec)
            if found is None:
                groups[rec] = [message]
            else:
                found.append(message)
    return groups
