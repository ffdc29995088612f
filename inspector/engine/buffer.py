"""``Buffer``: the append-time conversation buffer of FlowDrop GR-MEM (SPEC §5).

The live counterpart of ``repair_history``: an agent runtime appends each
message as it happens and the buffer keeps the history sendable. It keys
everything by call id (MEM-11); calls and results without an id pass
through untouched, since nothing can pair them safely at append time
(``repair_history`` names them, ID-2).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from inspector.engine.canonical import (
    INTERRUPTED,
    call_id,
    check_message,
    metadata_of,
    tool_calls_of,
)

Message = dict[str, Any]


class Buffer:
    """A message list that applies MEM-1, MEM-2, MEM-3, MEM-10 and MEM-11 on append.

    ``Buffer(messages)`` starts from an existing history as it is (no rule
    runs on it); ``append`` applies the rules; ``messages`` is a copy of the
    list, so changing it does not change the buffer. Message dicts are never
    mutated: a healed placeholder is a new dict, a replacement takes the
    placeholder's place.
    """

    def __init__(self, messages: Iterable[Message] | None = None) -> None:
        self._messages: list[Message] = []
        self._declared: set[str] = set()
        # call id -> True when only a healed placeholder answers it so far.
        self._answered: dict[str, bool] = {}
        # Declared ids with no result yet, in declaration order (a dict as an ordered set).
        self._unanswered: dict[str, None] = {}
        for index, message in enumerate(messages or ()):
            check_message(message, index)
            self._track(message)
            self._messages.append(message)

    @property
    def messages(self) -> list[Message]:
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def append(self, message: Message) -> None:
        check_message(message, None)
        role = message["role"]
        if role == "user":
            if self._unanswered:
                self._heal()
        elif role == "tool":
            rid = call_id(metadata_of(message, None))
            state = self._answered.get(rid) if rid else None
            if state is False:
                return  # MEM-1: this call already has its real result.
            if state is True:
                # MEM-10: a real result takes its placeholder's place; a second
                # placeholder is a repeat (MEM-1).
                if not _is_healed(message):
                    self._replace_placeholder(rid, message)
                return
        elif role == "assistant":
            ids = [call_id(call) for call in tool_calls_of(metadata_of(message, None), None)]
            if ids and all(cid and cid in self._declared for cid in ids):
                return  # MEM-2: a turn declaring nothing new is a repeat.
        self._track(message)
        self._messages.append(message)

    def _track(self, message: Message) -> None:
        role = message["role"]
        if role == "assistant":
            for call in tool_calls_of(metadata_of(message, None), None):
                cid = call_id(call)
                if cid and cid not in self._declared:
                    self._declared.add(cid)
                    if cid not in self._answered:
                        self._unanswered[cid] = None
        elif role == "tool":
            rid = call_id(metadata_of(message, None))
            if rid and rid not in self._answered:
                self._answered[rid] = _is_healed(message)
                self._unanswered.pop(rid, None)

    def _heal(self) -> None:
        """MEM-3: answer every unanswered call right after the turn that declared it."""
        pending = self._unanswered
        old = self._messages
        new: list[Message] = []
        i = 0
        while i < len(old):
            message = old[i]
            new.append(message)
            i += 1
            if message["role"] != "assistant":
                continue
            calls = tool_calls_of(metadata_of(message, None), None)
            order: dict[str, int] = {}
            for number, call in enumerate(calls):
                order.setdefault(call_id(call), number)
            due = [(number, cid) for cid, number in order.items() if cid in pending]
            if not due:
                continue
            # Results already standing right after the turn keep their place;
            # each placeholder goes after those answering earlier calls, so
            # the turn's results stay in call order.
            run_end = i
            while run_end < len(old) and old[run_end]["role"] == "tool":
                run_end += 1
            for number, cid in sorted(due):
                while (
                    i < run_end
                    and order.get(call_id(metadata_of(old[i], None)), len(calls)) < number
                ):
                    new.append(old[i])
                    i += 1
                new.append(_placeholder(cid))
                del pending[cid]
                self._answered[cid] = True
        self._messages = new

    def _replace_placeholder(self, rid: str, message: Message) -> None:
        for index, standing in enumerate(self._messages):
            if (
                standing["role"] == "tool"
                and _is_healed(standing)
                and call_id(metadata_of(standing, None)) == rid
            ):
                self._messages[index] = message
                self._answered[rid] = False
                return


def _is_healed(message: Message) -> bool:
    return metadata_of(message, None).get("healed") is True


def _placeholder(cid: str) -> Message:
    return {
        "role": "tool",
        "content": INTERRUPTED,
        "metadata": {"tool_call_id": cid, "healed": True},
    }
