"""What the tests of the agent-framework shapes share: findings, repair round trips."""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import orjson
from hypothesis import strategies as st

from inspector.formats.base import Parsed
from inspector.formats.jsondoc import text_of
from inspector.formats.private import call_id, calls_of
from tests.engine.helpers import repair_history


def repair(parsed: Parsed) -> Any:
    return repair_history(parsed.messages, not_started=parsed.not_started, causes=parsed.causes)


def findings(parsed: Parsed) -> list[tuple[str, list[int] | None, str | None]]:
    """Each repair action: its rule, the source lines it is about, the call it names."""
    out = []
    for action in repair(parsed).actions:
        index = action.input_index if action.input_index is not None else action.turn_index
        lines = parsed.sources[index] if index is not None else None
        out.append((action.rule, lines, action.call_id))
    return out


def pairing(parsed: Parsed) -> set[str]:
    return {a.rule for a in repair(parsed).actions if a.rule.startswith(("PAIR-", "ID-"))}


def outline(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a history says, without the keys a shape cannot write back (healed, outcome)."""
    out: list[tuple[Any, ...]] = []
    for m in messages:
        md = m.get("metadata") or {}
        if m["role"] == "tool":
            out.append(("tool", call_id(md), text_of(m.get("content"))))
        elif m["role"] == "assistant":
            calls = tuple((call_id(c), c.get("name")) for c in calls_of(m))
            out.append(("assistant", text_of(m.get("content")), calls))
        else:
            out.append((m["role"], text_of(m.get("content"))))
    return out


def repaired_round_trip(module: ModuleType, parsed: Parsed) -> tuple[bytes, Parsed]:
    """Repair, write in the shape, read back: the bytes and what they read as.

    What is read back says what the repair said, and needs no more repair.
    """
    repaired = repair(parsed)
    data = module.serialise(repaired.messages, parsed)
    again = module.parse(data)
    assert outline(again.messages) == outline(repaired.messages)
    assert repair(again).actions == []
    return data, again


def check_written_back(data: bytes) -> None:
    """Whatever ``data`` loads as, its repair written in that shape reads back repaired."""
    from inspector import formats

    try:
        parsed = formats.load(data)
    except formats.FormatError:
        return
    module = formats.FORMATS[parsed.format]
    repaired = repair(parsed)
    written = module.serialise(repaired.messages, parsed)
    if not repaired.actions:
        return
    again = module.parse(written)
    assert repair(again).actions == []
    assert outline(again.messages) == outline(repaired.messages)


def examples(ci: int) -> int:
    """How many examples a damaged-sessions property runs under ``HYPOTHESIS_PROFILE``: its
    own count in CI, a quarter while editing (``dev``), many more for ``make fuzz``."""
    profile = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    return {"dev": max(ci // 4, 10), "fuzz": max(ci * 50, 2000)}.get(profile, ci)


@st.composite
def damaged(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    """A seed with lines dropped, doubled, swapped or cut, or one JSON value replaced."""
    data = draw(st.sampled_from(seeds))
    lines = data.split(b"\n")
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["delete", "duplicate", "swap", "cut", "value"]))
        if kind == "delete" and len(lines) > 1:
            del lines[at]
        elif kind == "duplicate":
            lines.insert(at, lines[at])
        elif kind == "swap" and at + 1 < len(lines):
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
        elif kind == "cut":
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
        elif kind == "value":
            try:
                value = orjson.loads(lines[at])
            except orjson.JSONDecodeError:
                continue
            weird = draw(st.sampled_from([None, 0, "", [], {}, "x", True, {"type": []}]))
            lines[at] = orjson.dumps(replace_somewhere(draw, value, weird))
    return b"\n".join(lines)


def replace_somewhere(
    draw: st.DrawFn, node: Any, value: Any, depth: int = 0, deepest: int = 10
) -> Any:
    """``node`` with ``value`` put in place of one of its values, at any depth up to ``deepest``."""
    children = (
        list(node.items())
        if isinstance(node, dict)
        else list(enumerate(node))
        if isinstance(node, list)
        else []
    )
    if not children or depth > deepest or draw(st.integers(0, 3)) == 0:
        return value
    key, child = children[draw(st.integers(0, len(children) - 1))]
    node = dict(node) if isinstance(node, dict) else list(node)
    node[key] = replace_somewhere(draw, child, value, depth + 1, deepest)
    return node
