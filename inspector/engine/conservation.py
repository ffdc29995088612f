"""Conservation: what a repair may not lose (SPEC §4 "Conservative", DESIGN §5).

``losses(messages, repair)`` lists every piece of the input that is neither
in the repaired history nor accounted for by one of the repair's actions.
A piece is a non-blank text (a string content or a text part), any other
part (thinking, an image, a document, ...), a tool call (its name, its
arguments and every other field but its id, which ID-1/ID-2 may rename) and
a tool result (its content, under whichever id).

What SPEC §4 lets a repair do to them, and how each is found again:

- a message it leaves alone reaches the output as the same object, so it
  is matched by identity without being read (the cheap common case);
- a renamed call or result (ID-1, ID-2) and a moved result (PAIR-2) keep
  everything but their id, so they match as pieces;
- an orphan result (PAIR-3) becomes a user note whose content is the
  original's after the note's first line (``repair.orphan_line``): it is
  read back as the result it was;
- a partial call (INT-1) is removed: the INT-1 action naming its message
  and its position accounts for it;
- a blank placeholder (MSG-1) holds no piece, so dropping it loses none.

Anything else missing from the output is a loss. The check is independent
of how ``repair_history`` works inside: it compares the two histories as
multisets of pieces, so a duplicate elsewhere cannot hide a loss and no
order is assumed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import is_
from typing import Any

import orjson

from inspector.engine.canonical import is_blank
from inspector.engine.errors import InvalidTranscript
from inspector.engine.repair import Repair, orphan_line

Message = dict[str, Any]

# Part types that hold a model's thinking, named as one kind in a loss.
_THINKING = frozenset({"thinking", "redacted_thinking", "reasoning"})
# The keys a call's id is read under (MEM-11); a rename changes only them.
_ID_KEYS = frozenset({"tool_call_id", "id"})


@dataclass(frozen=True, slots=True)
class Loss:
    """One piece of the input that the repaired history lacks.

    ``kind`` is ``"text"``, ``"thinking"``, ``"image"``, ``"tool call"``,
    ``"tool result"`` or another part's type; ``input_index`` the message it
    was in; ``detail`` a short excerpt (a call's name, a result's id, text).
    """

    kind: str
    input_index: int
    detail: str

    def __str__(self) -> str:
        return f"{self.kind} of message {self.input_index} ({self.detail})"


class ContentLost(InvalidTranscript):
    """A repair would drop content of the transcript: it is refused, never written.

    An ``InvalidTranscript``, so every caller that refuses a transcript the
    engine cannot handle (the upload, ``fix``, the console commands) refuses
    this one the same way, with these words. ``index`` is the first message
    that would lose something; ``lost`` lists every piece.
    """

    def __init__(self, lost: Sequence[Loss]):
        self.lost = list(lost)
        shown = "; ".join(str(loss) for loss in self.lost[:5])
        more = f" and {len(self.lost) - 5} more" if len(self.lost) > 5 else ""
        super().__init__(
            f"the repair would lose {len(self.lost)} piece(s) of the transcript: {shown}{more}."
            " It was refused and nothing was written; please report this file",
        )
        self.index = self.lost[0].input_index if self.lost else None


def losses(messages: Sequence[Message], repair: Repair) -> list[Loss]:
    """Every piece of ``messages`` that ``repair`` neither kept nor accounted for."""
    out = repair.messages
    if len(out) == len(messages) and all(map(is_, out, messages)):
        return []  # nothing changed: most histories, checked in one pass
    # Messages the repair left alone are the same objects in both lists.
    in_ids = Counter(id(m) for m in messages)
    out_ids = Counter(id(m) for m in out)
    removed = {
        (a.input_index, a.call_index)
        for a in repair.actions
        if a.rule == "INT-1" and a.input_index is not None
    }
    kept: Counter[tuple[Any, ...]] = Counter()
    for m in out:
        if in_ids[id(m)]:
            in_ids[id(m)] -= 1
            continue
        kept.update(key for key, _, _, _ in _pieces(m))
    lost: list[Loss] = []
    for index, m in enumerate(messages):
        if out_ids[id(m)]:
            out_ids[id(m)] -= 1
            continue
        for key, kind, detail, call_index in _pieces(m):
            if call_index is not None and (index, call_index) in removed:
                continue
            if kept[key]:
                kept[key] -= 1
            else:
                lost.append(Loss(kind, index, detail))
    return lost


def check(messages: Sequence[Message], repair: Repair) -> None:
    """Raise ``ContentLost`` when ``repair`` loses a piece of ``messages``."""
    lost = losses(messages, repair)
    if lost:
        raise ContentLost(lost)


Piece = tuple[tuple[Any, ...], str, str, int | None]


def _pieces(m: Any) -> Iterator[Piece]:
    """(key, kind, detail, call index) for each piece of one message.

    Equal pieces have equal keys, wherever they stand; the call index (a
    call's position in its message) is only for matching INT-1's actions.
    """
    if not isinstance(m, dict):
        return
    role = m.get("role")
    md = m.get("metadata")
    md = md if isinstance(md, dict) else {}
    content = m.get("content")
    if role == "tool":
        rid = md.get("tool_call_id") or md.get("id") or ""
        yield ("result", _result_key(content)), "tool result", f"call {rid or '(no id)'}", None
        return
    if role == "user" and md.get("note") == "orphan_result":
        original = _orphan_content(content, md)
        if original is not _NOT_A_NOTE:
            yield ("result", _result_key(original)), "tool result", "a result kept as a note", None
            return
    yield from _content_pieces(role, content)
    if role == "assistant":
        calls = md.get("tool_calls")
        if isinstance(calls, list):
            for ci, call in enumerate(calls):
                if isinstance(call, dict):
                    fields = {k: v for k, v in call.items() if k not in _ID_KEYS}
                    name = call.get("name")
                    detail = f"call {ci}" + (f", {name}" if isinstance(name, str) else "")
                    yield ("call", _dump(fields)), "tool call", detail, ci
                else:
                    yield ("call", _dump(call)), "tool call", f"call {ci}", ci


def _content_pieces(role: Any, content: Any) -> Iterator[Piece]:
    if content is None:
        return
    if isinstance(content, str):
        if not is_blank(content):
            yield ("text", role, content), "text", _excerpt(content), None
        return
    if not isinstance(content, list):
        yield ("content", role, _dump(content)), "content", _excerpt(_dump(content)), None
        return
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            text = part.get("text")
            if is_blank([part]):
                continue
            yield ("part", role, _dump(part)), "text", _excerpt(str(text)), None
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        label = "thinking" if kind in _THINKING else kind if isinstance(kind, str) else "part"
        yield ("part", role, _dump(part)), label, _excerpt(_dump(part)), None


# The key of a tool result's content is the same whether it stands in a tool message
# or in the note an orphan became (SPEC §4 step 5 writes that note's content).
_NOT_A_NOTE = object()


def _result_key(content: Any) -> tuple[str, str]:
    if content is None or content == "":
        return ("str", "")
    if isinstance(content, str):
        return ("str", content)
    if isinstance(content, list):
        return ("list", _dump(content))
    # As the note writes it: the JSON of the value, keys in their order.
    try:
        return ("str", orjson.dumps(content).decode())
    except TypeError:
        return ("str", repr(content))


def _orphan_content(content: Any, md: dict[str, Any]) -> Any:
    """The content of the result an orphan note holds, or ``_NOT_A_NOTE``."""
    if isinstance(content, str):
        first, sep, rest = content.partition("\n")
        if _is_orphan_line(first):
            return rest if sep else None
    elif isinstance(content, list) and content:
        head = content[0]
        if isinstance(head, dict) and head.get("type") == "text":
            if _is_orphan_line(head.get("text")):
                return content[1:]
    return _NOT_A_NOTE


_ORPHAN_START, _ORPHAN_END = orphan_line("\x00").split("\x00")


def _is_orphan_line(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(_ORPHAN_START) and text.endswith(_ORPHAN_END)


def _dump(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return repr(value)


def _excerpt(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[: limit - 1]}…"
