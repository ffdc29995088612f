"""``repair_history``: SPEC §4 in code.

The work is split in two. A fast loop walks the history once and recognises
healthy spans (an assistant message whose calls are answered in call order
by the tool messages right after it) without allocating anything per
message; healthy messages reach the output by identity, copied in slices.
A span that is whole but whose ids repeat or are empty (Kimi and Gemini
restart their ids every reply, so in such files that is every span) is
renamed on the spot by ``write_renamed``. Anything else hands the span it
belongs to to ``_Repairer.segment``, which applies steps 1-7 to it the plain
way and tells the loop where the next kept assistant message starts.

``segment`` alone is a complete implementation: the property tests run it
over whole histories and hold the fast loop's output to it byte for byte.

Words used below, all from SPEC §4:

- *head candidate*: an assistant message with calls or with non-blank
  content. Step 1 looks for a partial call's result up to the next one.
- *kept head*: a head candidate that still has calls or prose after step 1.
  A span (or, for prose-only heads, a stretch with no span) runs from a kept
  head to the next kept head.
- *segment*: what ``segment`` handles in one go, from where the loop met
  trouble up to the next kept head.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from inspector.engine.canonical import (
    EMPTY,
    INTERRUPTED,
    ROLES,
    call_id,
    call_id_key,
    explain,
    is_blank,
    is_partial,
    metadata_of,
    tool_calls_of,
)
from inspector.engine.causes import note_words
from inspector.engine.errors import InvalidTranscript

Message = dict[str, Any]

MAY_HAVE_RUN = (
    f"{INTERRUPTED} The tool may have partly run: check its effects before calling it again."
)
READ_ONLY = f"{INTERRUPTED} The tool only reads, so it is safe to call again."
NOT_STARTED = (
    f"{INTERRUPTED} The tool never started, so it had no effect;"
    " call it again only if it is still needed."
)

# Metadata keys that only make sense on a tool message; an orphan note drops them.
_RESULT_KEYS = frozenset({"tool_call_id", "id", "name", "healed", "outcome"})


@dataclass(frozen=True, slots=True)
class Action:
    """One thing the repair did, for the timeline and the findings list.

    - ``rule``: the rule id (``"PAIR-1"``, ...).
    - ``input_index``: the message in the input this is about; ``None`` for
      something inserted (PAIR-1 results, INT-2 notes).
    - ``output_index``: where it ended up in the output; ``None`` for
      something dropped (MSG-1, INT-1 on a dropped message).
    - ``call_id``: the call concerned, under the id the repaired request
      carries (PAIR-1, PAIR-2, ID-*); for PAIR-3 the orphan's own id; for
      INT-1 the removed call's id.
    - ``old_id`` / ``new_id``: a rename (ID-1, ID-2), on the call and on its
      result alike.
    - ``call_index``: the call's position in its assistant message's
      ``tool_calls`` in the input.
    - ``tool_name``: the tool's name where known.
    - ``from_index``: where a moved result stood in the input (PAIR-2).
    - ``turn_index``: the input index of the assistant message the call
      belongs to (PAIR-1, PAIR-2, ID-* on results, INT-2).
    """

    rule: str
    input_index: int | None
    output_index: int | None
    call_id: str | None = None
    old_id: str | None = None
    new_id: str | None = None
    call_index: int | None = None
    tool_name: str | None = None
    from_index: int | None = None
    turn_index: int | None = None


@dataclass(frozen=True, slots=True)
class Repair:
    """What ``repair_history`` returns.

    ``messages`` is a new list; messages the repair did not change are the
    input's own objects (``out is in`` means unchanged), changed ones are new
    dicts. ``interrupted`` holds the call dicts (as in ``messages``) that got
    synthetic results. ``actions`` is empty exactly when nothing changed.
    """

    messages: list[Message]
    interrupted: list[Message]
    actions: list[Action]

    @property
    def changed(self) -> bool:
        return bool(self.actions)


def repair_history(
    messages: list[Message],
    is_read_only: Callable[[str], bool] | None = None,
    *,
    not_started: Collection[str] | None = None,
    causes: Mapping[int, str] | None = None,
    offset: int = 0,
    assigned: Collection[str] = (),
) -> Repair:
    """Make a history valid to send, as SPEC §4 steps 1-7 say.

    ``is_read_only(name)`` picks the wording of synthetic results.
    ``not_started`` holds call ids (as in the input) that the source format
    proves never started: their synthetic results say so, with outcome
    ``"not_started"``. ``causes`` maps the input index of a cut assistant
    message, or of the user marker after it, to a cause id (``Parsed.causes``)
    that the interruption note names.

    ``offset`` and ``assigned`` repair the rest of a longer history after a
    cut (SPEC §4's prefix rule: just before an assistant message that surely
    ends a span) without its start: ``offset`` is the index the first message
    has in the whole input (ID-2's ``call_{m}_{c}`` names the whole's index
    ``m``; ``causes`` and the actions stay indexed from 0), and ``assigned``
    the call ids the repair of the start gave out (ID-1's ``{id}_{k}`` skips
    them). At such a cut, repairing the rest this way gives what follows the
    repair of the start in the repair of the whole. The defaults repair a
    whole history.

    The input is never mutated. Raises ``InvalidTranscript`` for input that is
    not a list of canonical messages.
    """
    if not isinstance(messages, list):
        raise explain(messages) or InvalidTranscript("the transcript is not a list")
    repairer = _Repairer(messages, is_read_only, not_started, causes, offset, assigned)
    try:
        repairer.run()
    except (TypeError, KeyError, AttributeError) as error:
        # The fast loop lets Python's own errors flag malformed messages;
        # explain() then finds the message and says what is wrong with it.
        problem = explain(messages)
        if problem is None:
            raise
        raise problem from error
    return Repair(repairer.out, repairer.interrupted, repairer.actions)


class _Head:
    """A head candidate after step 1: which calls stay and which go."""

    __slots__ = ("calls", "index", "kept", "region_end", "removed")

    def __init__(
        self,
        index: int,
        calls: list[tuple[int, Message, str]],
        removed: list[tuple[int, Message, str]],
        kept: bool,
        region_end: int,
    ) -> None:
        self.index = index
        self.calls = calls  # (index in tool_calls, call, original id), call order
        self.removed = removed  # same shape: partial calls that step 1 removed
        self.kept = kept
        # The next head candidate, or len(messages); only read when calls were removed.
        self.region_end = region_end


# What a segment holds besides its head.
_MSG = 0  # a user, system or tool message
_BLANK = 1  # an assistant message with no calls and nothing in it (MSG-1)
_DROPPED = 2  # a head candidate that step 1 left blank (MSG-1, its note stays)


class _Repairer:
    def __init__(
        self,
        messages: list[Message],
        is_read_only: Callable[[str], bool] | None,
        not_started: Collection[str] | None,
        causes: Mapping[int, str] | None,
        offset: int = 0,
        assigned: Collection[str] = (),
    ) -> None:
        self.msgs = messages
        self.offset = offset
        self.is_read_only = is_read_only
        self.not_started = frozenset(not_started or ())
        self.causes = causes or {}
        self.out: list[Message] = []
        self.interrupted: list[Message] = []
        self.actions: list[Action] = []
        # Every id assigned so far. It also holds "" so that the fast loop's
        # single membership test rejects empty ids along with repeated ones.
        self.assigned: set[str] = {"", *assigned}
        # For "{id}_{k}": the smallest k that may still be free, per base id.
        # Only grows, since `assigned` only grows; keeps renaming linear.
        self.next_k: dict[str, int] = {}

    # -- the fast loop ---------------------------------------------------------

    def run(self) -> None:
        msgs = self.msgs
        n = len(msgs)
        out_extend = self.out.extend
        assigned = self.assigned
        assign = assigned.add
        pos = 0  # where the loop (re)starts
        copied = 0  # msgs[copied:] has not reached the output yet
        while pos < n:
            head = -1  # the current span's assistant message
            head_calls: list[Message] = []
            expect: list[str] = []  # its original call ids, in call order
            n_expect = 0
            k = 0  # how many of them have been answered, in order, right after it
            # The head's ids need ID-1/ID-2: they are assigned, and the head and
            # its results rewritten, once all its results have come in order.
            rename = False
            trouble = -1  # where segment() must take over
            for i in range(pos, n):
                m = msgs[i]
                role = m["role"]
                if role == "tool":
                    if k < n_expect:
                        md = m.get("metadata", EMPTY)
                        if md.__class__ is dict:
                            # call_id(md), inlined: a non-string id never equals a wanted one.
                            rid = md.get("tool_call_id") or md.get("id")
                            want = expect[k]
                            if want:
                                answers = rid == want
                            else:
                                # Step 5's rule for empty ids: same name where both have one.
                                name = md.get("name")
                                own = head_calls[k].get("name")
                                answers = not rid and (not name or not own or name == own)
                            if answers:
                                k += 1
                                if rename and k == n_expect:
                                    out_extend(msgs[copied:head])
                                    self.write_renamed(head, head_calls, expect)
                                    copied = i + 1
                                continue
                        trouble = head
                    else:
                        trouble = i
                    break
                if role == "user" or role == "system":
                    if k < n_expect:
                        trouble = head
                        break
                    if m.get("metadata", EMPTY).__class__ is not dict:
                        trouble = i
                        break
                    continue
                if role != "assistant" or k < n_expect:
                    trouble = head if k < n_expect else i
                    break
                md = m.get("metadata", EMPTY)
                if md.__class__ is not dict:
                    trouble = i
                    break
                calls = md.get("tool_calls")
                if calls:
                    if calls.__class__ is not list:
                        trouble = i
                        break
                    ids: list[str] = []
                    rename = False
                    for c in calls:
                        # call_id(c), inlined.
                        cid = c.get("tool_call_id") or c.get("id")
                        if cid.__class__ is not str:
                            if cid is not None:
                                break  # not a string: segment() says so
                            cid = ""
                        if not rename:
                            # "" is in `assigned`, so empty ids (ID-2) land here
                            # along with repeated ones (ID-1).
                            if cid in assigned:
                                rename = True
                                assigned.difference_update(ids)
                            else:
                                assign(cid)
                        ids.append(cid)
                    else:
                        head = i
                        head_calls = calls
                        expect = ids
                        n_expect = len(ids)
                        k = 0
                        continue
                    if not rename:
                        assigned.difference_update(ids)
                    rename = False
                    trouble = i
                    break
                if calls is not None and calls.__class__ is not list:
                    trouble = i
                    break
                content = m.get("content")
                if content.__class__ is str:
                    if not content or content.isspace():
                        trouble = i
                        break
                elif is_blank(content):
                    trouble = i
                    break
                # A prose-only head: the span before it is complete and closed.
                head = -1
                n_expect = 0
                k = 0
                rename = False
            else:
                if k < n_expect:
                    trouble = head
            if trouble < 0:
                out_extend(msgs[copied:] if copied else msgs)
                return
            out_extend(msgs[copied:trouble])
            if trouble == head and n_expect and not rename:
                # segment() assigns this head's ids itself.
                assigned.difference_update(expect)
            pos = copied = self.segment(trouble)

    def write_renamed(self, h: int, calls: list[Message], ids: list[str]) -> None:
        """Write a span the fast loop found whole but for its ids (ID-1, ID-2).

        Its results follow the head in call order, so each is renamed with
        its call; what ``emit`` would do, without reading the span again.
        """
        msgs = self.msgs
        out = self.out
        entries = [(ci, call, orig) for ci, (call, orig) in enumerate(zip(calls, ids, strict=True))]
        new_ids = [self.assign(h, ci, orig) for ci, _, orig in entries]
        self.emit_head(_Head(h, entries, [], True, h + 1), new_ids)
        for ci, call, orig in entries:
            j = h + 1 + ci
            if new_ids[ci] == orig:
                out.append(msgs[j])
            else:
                out.append(self.renamed_result(j, orig, new_ids[ci], ci, call.get("name"), h))

    def renamed_result(self, j: int, orig: str, new_id: str, ci: int, name: Any, h: int) -> Message:
        """The result at ``j`` under its call's new id, with its ID action."""
        result = self.msgs[j]
        md = metadata_of(result, j)
        rid = self.id_of(md, j)
        self.actions.append(
            Action(
                "ID-2" if not orig else "ID-1",
                j,
                len(self.out),
                call_id=new_id,
                old_id=rid,
                new_id=new_id,
                call_index=ci,
                tool_name=name,
                turn_index=h,
            )
        )
        return _with_metadata(result, md, call_id_key(md), new_id)

    # -- the plain path ----------------------------------------------------------

    def role_of(self, index: int) -> str:
        role = self.msgs[index]["role"]
        if role.__class__ is not str or role not in ROLES:
            raise InvalidTranscript(f"role {role!r} is not one of {', '.join(ROLES)}", index)
        return role

    def id_of(self, obj: Mapping[str, Any], index: int) -> str:
        try:
            return call_id(obj)
        except InvalidTranscript as error:
            raise InvalidTranscript(error.problem, index) from None

    def is_candidate(self, index: int) -> bool:
        """An assistant message with calls or non-blank content (validates it)."""
        m = self.msgs[index]
        return bool(tool_calls_of(metadata_of(m, index), index)) or not is_blank(m.get("content"))

    def next_candidate(self, after: int) -> int:
        msgs = self.msgs
        for j in range(after + 1, len(msgs)):
            if self.role_of(j) == "assistant" and self.is_candidate(j):
                return j
        return len(msgs)

    def fate(self, h: int) -> _Head:
        """Step 1 for the head candidate at ``h``: remove its partial calls."""
        msgs = self.msgs
        calls = tool_calls_of(metadata_of(msgs[h], h), h)
        entries: list[tuple[int, Message, str]] = []
        for ci, call in enumerate(calls):
            if not isinstance(call, dict):
                raise InvalidTranscript(
                    f"tool call {ci} must be an object, not {type(call).__name__}", h
                )
            entries.append((ci, call, self.id_of(call, h)))
        if not any(is_partial(call.get("arguments")) for call in calls):
            # Nothing can be removed, so the region need not be read.
            return _Head(h, entries, [], True, h + 1)
        region_end = self.next_candidate(h)
        answered = [False] * len(entries)
        matcher = _Matcher(entries)
        for j in range(h + 1, region_end):
            if msgs[j]["role"] == "tool":
                md = metadata_of(msgs[j], j)
                found = matcher.take(self.id_of(md, j), md.get("name"))
                if found is not None:
                    answered[found] = True
        kept: list[tuple[int, Message, str]] = []
        removed: list[tuple[int, Message, str]] = []
        for entry, done in zip(entries, answered, strict=True):
            partial = not done and is_partial(entry[1].get("arguments"))
            (removed if partial else kept).append(entry)
        alive = bool(kept) or not is_blank(msgs[h].get("content"))
        return _Head(h, kept, removed, alive, region_end)

    def segment(self, start: int) -> int:
        """Repair ``messages[start:end]`` and return ``end``, the next kept head.

        ``start`` is either a kept head (its span is repaired) or a place with
        no open span: every call before it is answered, so any tool message
        from here to ``end`` answers nothing.
        """
        msgs = self.msgs
        n = len(msgs)
        head: _Head | None = None
        j = start
        if self.role_of(start) == "assistant" and self.is_candidate(start):
            info = self.fate(start)
            if info.kept:
                head = info
                j = start + 1
        entries: list[tuple[int, int, _Head | None]] = []
        while j < n:
            role = self.role_of(j)
            if role == "assistant":
                if self.is_candidate(j):
                    info = self.fate(j)
                    if info.kept:
                        break
                    entries.append((_DROPPED, j, info))
                else:
                    entries.append((_BLANK, j, None))
            else:
                metadata_of(msgs[j], j)
                entries.append((_MSG, j, None))
            j += 1
        self.emit(head, entries)
        return j

    def emit(self, head: _Head | None, entries: list[tuple[int, int, _Head | None]]) -> None:
        msgs = self.msgs
        out = self.out
        actions = self.actions
        calls = head.calls if head is not None else []

        # Step 4: ids, in call order, counting only what came before.
        new_ids = (
            [self.assign(head.index, ci, orig) for ci, _, orig in calls] if head is not None else []
        )

        # Step 5: pair tool messages with this span's calls.
        answer: list[int | None] = [None] * len(calls)
        paired: set[int] = set()
        matcher = _Matcher(calls)
        for pos, (kind, j, _) in enumerate(entries):
            if kind == _MSG and msgs[j]["role"] == "tool":
                md = metadata_of(msgs[j], j)
                found = matcher.take(self.id_of(md, j), md.get("name"))
                if found is not None:
                    answer[found] = pos
                    paired.add(pos)

        # Where each real result stood among the span's kept messages, to tell
        # a result that really moved (PAIR-2) from one merely shifted by an
        # insertion or a drop.
        kept_positions = [pos for pos, (kind, _, _) in enumerate(entries) if kind == _MSG]
        rank_of_real = 0
        note_from = self.notes_from(entries)

        if head is not None:
            h = head.index
            out_call_objs = self.emit_head(head, new_ids)
            for p, (ci, call, orig) in enumerate(calls):
                new_id = new_ids[p]
                name = call.get("name")
                at = answer[p]
                if at is None:
                    index = len(out)
                    out.append(self.synthetic(orig, new_id, name))
                    self.interrupted.append(out_call_objs[p])
                    actions.append(
                        Action(
                            "PAIR-1",
                            None,
                            index,
                            call_id=new_id,
                            call_index=ci,
                            tool_name=name,
                            turn_index=h,
                        )
                    )
                    continue
                j = entries[at][1]
                result = msgs[j]
                index = len(out)
                if self.id_of(metadata_of(result, j), j) != new_id:
                    result = self.renamed_result(j, orig, new_id, ci, name, h)
                if kept_positions[rank_of_real] != at:
                    actions.append(
                        Action(
                            "PAIR-2",
                            j,
                            index,
                            call_id=new_id,
                            call_index=ci,
                            tool_name=name,
                            from_index=j,
                            turn_index=h,
                        )
                    )
                rank_of_real += 1
                out.append(result)
            if head.removed and not note_from[0]:
                self.emit_note(head, entries, 0)

        for pos, (kind, j, info) in enumerate(entries):
            if kind == _MSG:
                if pos in paired:
                    continue
                m = msgs[j]
                if m["role"] == "tool":
                    md = metadata_of(m, j)
                    rid = self.id_of(md, j)
                    actions.append(Action("PAIR-3", j, len(out), call_id=rid))
                    out.append(_orphan_note(m, md, rid))
                else:
                    out.append(m)
            elif kind == _BLANK:
                actions.append(Action("MSG-1", j, None))
            else:
                assert info is not None
                actions.append(Action("MSG-1", j, None))
                for ci, call, orig in info.removed:
                    actions.append(
                        Action(
                            "INT-1",
                            j,
                            None,
                            call_id=orig,
                            call_index=ci,
                            tool_name=call.get("name"),
                        )
                    )
                if not note_from[pos + 1]:
                    self.emit_note(info, entries, pos + 1)

    def assign(self, h: int, ci: int, orig: str) -> str:
        """Step 4 for one call: ``call_{m}_{c}`` for an empty id, ``{id}_{k}`` for a taken one."""
        base = orig or f"call_{h + self.offset}_{ci}"
        new_id = base
        assigned = self.assigned
        if new_id in assigned:
            k = self.next_k.get(base, 1)
            while f"{base}_{k}" in assigned:
                k += 1
            self.next_k[base] = k + 1
            new_id = f"{base}_{k}"
        assigned.add(new_id)
        return new_id

    def emit_head(self, head: _Head, new_ids: list[str]) -> list[Message]:
        """Write the head (a new dict only if a call went or was renamed); return its calls."""
        h = head.index
        m = self.msgs[h]
        actions = self.actions
        index = len(self.out)
        out_calls: list[Message] = []
        renamed = False
        for (ci, call, orig), new_id in zip(head.calls, new_ids, strict=True):
            if new_id == orig:
                out_calls.append(call)
                continue
            renamed = True
            fresh = dict(call)
            fresh[call_id_key(call)] = new_id
            out_calls.append(fresh)
            actions.append(
                Action(
                    "ID-2" if not orig else "ID-1",
                    h,
                    index,
                    call_id=new_id,
                    old_id=orig,
                    new_id=new_id,
                    call_index=ci,
                    tool_name=call.get("name"),
                )
            )
        for ci, call, orig in head.removed:
            actions.append(
                Action("INT-1", h, index, call_id=orig, call_index=ci, tool_name=call.get("name"))
            )
        if not renamed and not head.removed:
            self.out.append(m)
            return out_calls
        metadata = dict(metadata_of(m, h))
        if out_calls:
            metadata["tool_calls"] = out_calls
        else:
            del metadata["tool_calls"]
        fresh_message = dict(m)
        fresh_message["metadata"] = metadata
        self.out.append(fresh_message)
        return out_calls

    def synthetic(self, orig: str, new_id: str, name: Any) -> Message:
        """Step 6: the result a call gets when its own never arrived (PAIR-1, OUT-1)."""
        if orig and orig in self.not_started:
            content, outcome = NOT_STARTED, "not_started"
        elif name and self.is_read_only is not None and self.is_read_only(name):
            content, outcome = READ_ONLY, "unknown"
        else:
            content, outcome = MAY_HAVE_RUN, "unknown"
        metadata: Message = {"tool_call_id": new_id, "healed": True, "outcome": outcome}
        if name:
            metadata["name"] = name
        return {"role": "tool", "content": content, "metadata": metadata}

    def notes_from(self, entries: list[tuple[int, int, _Head | None]]) -> list[bool]:
        """For each entry position p: does an interruption note stand at p or after it?

        "After it" ends at the next kept head, which is where a segment ends,
        so this answers "is a note already present" for every cut turn at once.
        """
        msgs = self.msgs
        present = [False] * (len(entries) + 1)
        seen = False
        for pos in range(len(entries) - 1, -1, -1):
            kind, j, _ = entries[pos]
            if kind == _MSG:
                m = msgs[j]
                if m["role"] == "user" and metadata_of(m, j).get("note") == "interruption":
                    seen = True
            present[pos] = seen
        return present

    def emit_note(
        self, head: _Head, entries: list[tuple[int, int, _Head | None]], start: int
    ) -> None:
        """Step 1's INT-2 note for a turn that lost its partial calls."""
        h = head.index
        cause = self.causes.get(h)
        if cause is None:
            # Or a marker the format saw after the cut (Claude Code's user stop).
            for _, j, _ in entries[start:]:
                if j >= head.region_end:
                    break
                cause = self.causes.get(j)
                if cause is not None:
                    break
        names: list[str] = []
        for _, call, _ in head.removed:
            name = call.get("name")
            label = name if isinstance(name, str) and name else "an unnamed tool"
            if label not in names:
                names.append(label)
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        if len(head.removed) == 1:
            what = f"its call to {listed} was complete; the tool was not run"
        else:
            what = f"its calls to {listed} were complete; the tools were not run"
        words = note_words(cause)
        text = f"[system note: the previous assistant turn was interrupted{words} before {what}.]"
        self.actions.append(Action("INT-2", None, len(self.out), turn_index=h))
        self.out.append({"role": "user", "content": text, "metadata": {"note": "interruption"}})


class _Matcher:
    """Step 5's pairing rule over one assistant message's calls.

    A result takes the first call, in call order, with the same original id
    and no answer yet; an empty result id takes the first unanswered call
    whose id was empty too, with the same name where both have one.
    """

    __slots__ = ("by_id", "empty", "names")

    def __init__(self, calls: list[tuple[int, Message, str]]) -> None:
        self.by_id: dict[str, deque[int]] = {}
        self.empty: list[int] = []
        self.names: list[Any] = []
        for p, (_, call, orig) in enumerate(calls):
            self.names.append(call.get("name"))
            if orig:
                self.by_id.setdefault(orig, deque()).append(p)
            else:
                self.empty.append(p)

    def take(self, rid: str, name: Any) -> int | None:
        if rid:
            waiting = self.by_id.get(rid)
            return waiting.popleft() if waiting else None
        for n, p in enumerate(self.empty):
            own = self.names[p]
            if not name or not own or name == own:
                del self.empty[n]
                return p
        return None


def _with_metadata(m: Message, md: Mapping[str, Any], key: str, value: Any) -> Message:
    """A copy of ``m`` with one metadata key set; key order kept."""
    metadata = dict(md)
    metadata[key] = value
    fresh = dict(m)
    fresh["metadata"] = metadata
    return fresh


def orphan_line(rid: str) -> str:
    shown = rid or "(no id)"
    return (
        f"[note: a tool result for call {shown} arrived with no matching call; its content follows]"
    )


def _orphan_note(m: Message, md: Mapping[str, Any], rid: str) -> Message:
    """Step 5's user note for a tool message that answers nothing (PAIR-3)."""
    line = orphan_line(rid)
    content = m.get("content")
    note_content: Any
    if isinstance(content, list):
        note_content = [{"type": "text", "text": line}, *content]
    elif isinstance(content, str):
        note_content = f"{line}\n{content}"
    elif content is None:
        note_content = line
    else:
        note_content = f"{line}\n{orjson.dumps(content).decode()}"
    metadata: Message = {"note": "orphan_result"}
    for key, value in md.items():
        if key not in _RESULT_KEYS:
            metadata[key] = value
    fresh = dict(m)
    fresh["role"] = "user"
    fresh["content"] = note_content
    fresh["metadata"] = metadata
    return fresh
