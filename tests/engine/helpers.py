"""Small builders and checks the engine tests share."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from inspector.engine import Repair
from inspector.engine import repair_history as _repair_history
from inspector.engine.canonical import call_id, is_blank
from inspector.engine.conservation import losses

Message = dict[str, Any]


def repair_history(
    messages: list[Message],
    is_read_only: Callable[[str], bool] | None = None,
    *,
    not_started: Collection[str] | None = None,
    causes: Mapping[int, str] | None = None,
    offset: int = 0,
    assigned: Collection[str] = (),
) -> Repair:
    """``repair_history``, held to conservation: every repair the engine tests make loses nothing.

    The engine's tests import this one, so each repair they make is also
    checked to keep every text, thinking block, image, call and result of its
    input (or to say where it went) without each test saying so.
    """
    repaired = _repair_history(
        messages,
        is_read_only,
        not_started=not_started,
        causes=causes,
        offset=offset,
        assigned=assigned,
    )
    assert_conserved(messages, repaired)
    return repaired


def assert_conserved(messages: list[Message], repaired: Repair) -> None:
    lost = losses(messages, repaired)
    assert not lost, "the repair lost: " + "; ".join(map(str, lost))


def user(content: Any = "hi", **metadata: Any) -> Message:
    return {"role": "user", "content": content, "metadata": dict(metadata)}


def system(content: str = "be brief") -> Message:
    return {"role": "system", "content": content, "metadata": {}}


def assistant(content: Any = "", calls: list[Message] | None = None, **metadata: Any) -> Message:
    meta = dict(metadata)
    if calls is not None:
        meta["tool_calls"] = calls
    return {"role": "assistant", "content": content, "metadata": meta}


def call(cid: str = "c1", name: str | None = "search", arguments: Any = None) -> Message:
    made: Message = {"tool_call_id": cid}
    if name is not None:
        made["name"] = name
    made["arguments"] = {"q": "x"} if arguments is None else arguments
    return made


def result(cid: str = "c1", content: Any = "found", **metadata: Any) -> Message:
    return {"role": "tool", "content": content, "metadata": {"tool_call_id": cid, **metadata}}


def assert_valid(messages: list[Message]) -> None:
    """What every provider needs: SPEC §4 'valid', checked on canonical messages.

    Every call is answered exactly once, right after its assistant message,
    in call order; call ids are unique and non-empty across the history; no
    assistant message without calls is blank; no tool message stands
    anywhere else.
    """
    seen: set[str] = set()
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m["role"] != "tool", f"tool message at {i} answers no call right before it"
        if m["role"] != "assistant":
            i += 1
            continue
        calls = m.get("metadata", {}).get("tool_calls") or []
        if not calls:
            assert not is_blank(m.get("content")), f"blank assistant message at {i}"
        for k, c in enumerate(calls):
            cid = call_id(c)
            assert cid, f"empty call id at {i}"
            assert cid not in seen, f"call id {cid!r} repeated at {i}"
            seen.add(cid)
            j = i + 1 + k
            assert j < len(messages), f"call {cid!r} at {i} has no result"
            answer = messages[j]
            assert answer["role"] == "tool", f"call {cid!r} at {i} not answered at {j}"
            assert call_id(answer["metadata"]) == cid, f"result at {j} is not for {cid!r}"
        i += 1 + len(calls)
