"""The timeline's rows: the original and the repaired history side by side.

``timeline(parsed, repair)`` walks both histories once (repair hands back
untouched messages as the very objects it was given, so a kept stretch is
found in one C pass, ``private.same_start``) and makes one ``Row`` per
message with the findings of the rules that fired on it; ``line_findings``
adds the readers' LINE-1; ``message_facts`` reads when, which model and how
many tokens, where the shape records it.

No Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence, Set
from typing import Any, cast

import orjson

from inspector.diagnosis.model import REPAIR_RULES, TEXT_LIMIT, Call, Finding, Result, Row
from inspector.engine import Action, Repair
from inspector.engine.canonical import call_id_text
from inspector.engine.causes import finding_words
from inspector.formats import FORMATS
from inspector.formats.base import NO_FACTS, Facts, Parsed, TimelineShape
from inspector.formats.private import same_start

# The start of any JSON text: JSON's whitespace, then what a value can begin with.
_JSON_START = re.compile(r'[ \t\n\r]*[{\["\-0-9tfn]')

_REPAIR_RULE_SET = frozenset(REPAIR_RULES)

# Containers whose whole history is read from one line of the file.
_ONE_LINE_CONTAINERS = frozenset({"claude-trace", "jsonl-conversations"})

# The shortcuts for the common case (a kept message's short branch, a short text
# shown as itself, a kept message's calls listed without pairing, the run of kept
# messages found in one C pass) give what the general code below each gives.
# tests/diagnosis/test_rows_shortcuts.py holds them to it: it turns them off and
# compares the rows over generated histories and the corpus.
_SHORTCUTS = True

# Shared stand-ins for what most messages lack; read, never written.
_EMPTY: dict[str, Any] = {}
_NO_RULES: frozenset[Any] = frozenset()
_NO_RENAMES: Mapping[int, str | None] = {}


def line_findings(parsed: Parsed, rows: list[Row], findings: list[Finding]) -> bool:
    """Add a LINE-1 finding for each line that held two or more records.

    It is marked on the row of the message read from that line (the first
    one, when both were messages), or, when neither record was a message,
    on the row of the next message in the file (the last row when none
    follows); in a container whose whole history is one line (see
    ``_ONE_LINE_CONTAINERS``), on the first row. The repaired file writes
    each record on a line of its own. Returns whether there was any.
    """
    glued = [p for p in parsed.problems if p.kind == "glued"]
    if not glued:
        return False
    # Where the whole history is one line of the file (a claude-trace exchange, a
    # conversation of a JSONL file of them), sources number messages, not lines:
    # the line is marked on the first row.
    whole = parsed.meta.get("container") in _ONE_LINE_CONTAINERS
    where: dict[int, int] = {}  # source line -> the first row read from it
    for number, each in enumerate(rows):
        if each["in_original"]:
            for line in each["lines"]:
                where.setdefault(line, number)
    added: list[tuple[int, Finding]] = []
    for problem in glued:
        position: int | None = (0 if rows else None) if whole else where.get(problem.line)
        if position is None and rows:
            later = [(line, p) for line, p in where.items() if line > problem.line]
            position = min(later)[1] if later else len(rows) - 1
        row = rows[position] if position is not None else None
        if row is not None and "LINE-1" not in row["findings"]:
            row["findings"] = [*row["findings"], "LINE-1"]
        text = (
            f"Line {problem.line}: {problem.reason}. A newline was lost there; the repaired"
            " file writes each record on a line of its own, byte for byte as it was."
        )
        finding: Finding = {
            "rule": "LINE-1",
            "row": row["key"] if row is not None else None,
            "text": text,
            "ids": [],
            "message": row["input_index"] if row is not None else None,
            "line": problem.line,
        }
        added.append((len(rows) if position is None else position, finding))
    # Findings are in row order: each goes after the findings of rows up to its own.
    merged: list[Finding] = []
    rank = {row["key"]: position for position, row in enumerate(rows)}
    pending = iter(sorted(added, key=lambda item: item[0]))
    upcoming = next(pending, None)
    for finding in findings:
        row_key = finding["row"]
        at = len(rows) if row_key is None else rank.get(row_key, len(rows))
        while upcoming is not None and upcoming[0] < at:
            merged.append(upcoming[1])
            upcoming = next(pending, None)
        merged.append(finding)
    while upcoming is not None:
        merged.append(upcoming[1])
        upcoming = next(pending, None)
    findings[:] = merged
    return True


# --- what happened when -----------------------------------------------------


def message_facts(parsed: Parsed) -> list[Facts | None]:
    """Per message, what the file records of it: when, which model, tokens in and out.

    The shape's ``timeline_facts`` hook says (``formats.base``); ``[]`` for a
    shape without one, which records none of it.
    """
    module = FORMATS.get(parsed.format)
    if module is None or not hasattr(module, "timeline_facts"):
        return []
    return cast(TimelineShape, module).timeline_facts(parsed)


def totals(facts: list[Facts | None]) -> dict[str, Any]:
    """The header's sums: first and last timestamp, tokens in and out (and of those in,
    the cache's reads and writes), models by use."""
    stamps = [f["at"] for f in facts if f and f["at"]]
    models: dict[str, int] = {}
    for f in facts:
        if f and f["model"]:
            models[f["model"]] = models.get(f["model"], 0) + 1
    return {
        "first": min(stamps) if stamps else None,
        "last": max(stamps) if stamps else None,
        "tokens_in": sum(f["tokens_in"] or 0 for f in facts if f),
        "tokens_out": sum(f["tokens_out"] or 0 for f in facts if f),
        # Of ``tokens_in``: read from the prompt cache, and written into it.
        "cache_read": sum(f.get("cache_read") or 0 for f in facts if f),
        "cache_write": sum(f.get("cache_write") or 0 for f in facts if f),
        "models": models,
    }


# --- the timeline ----------------------------------------------------------


class Timeline:
    """Lays original and repaired messages out as annotated rows."""

    def __init__(
        self, parsed: Parsed, repair: Repair, facts: list[Facts | None] | None = None
    ) -> None:
        self.parsed = parsed
        self.facts = facts or []
        self.inputs = parsed.messages
        self.outputs = repair.messages
        self.actions = repair.actions
        self.sources = parsed.sources
        self.causes = parsed.causes

    def build(self) -> tuple[list[Row], list[Finding]]:
        kept, out_to_in = self._map_outputs()
        by_out: dict[int, list[Action]] = {}
        by_in_dropped: dict[int, list[Action]] = {}
        for action in self.actions:
            if action.output_index is not None:
                by_out.setdefault(action.output_index, []).append(action)
            elif action.input_index is not None:
                by_in_dropped.setdefault(action.input_index, []).append(action)
        emitted_inputs = set(out_to_in.values())
        # The first ``kept`` inputs are all in the output, in their places.
        dropped = [i for i in range(kept, len(self.inputs)) if i not in emitted_inputs]

        rows: list[Row] = []
        findings: list[Finding] = []
        next_drop = 0
        drops = len(dropped)
        # Spans bracket each call turn of the repaired history, from the assistant
        # message to its last result: the open one's first and last rows so far.
        span_number = 0
        span_first: Row | None = None
        span_last: Row | None = None
        for out_index, message in enumerate(self.outputs):
            in_index = out_index if out_index < kept else out_to_in.get(out_index)
            actions = by_out.get(out_index, ())
            # A dropped message is drawn where it stood: before the first row
            # that came after it, and before what was inserted for its turn.
            if in_index is not None:
                limit = in_index
            else:
                turns = [a.turn_index for a in actions if a.turn_index is not None]
                limit = max(turns) + 1 if turns else -1
            while next_drop < drops and dropped[next_drop] < limit:
                self._dropped_row(dropped[next_drop], by_in_dropped, rows, findings)
                next_drop += 1
            row = self._row(len(rows), message, in_index, out_index, actions)
            role = row["role"]
            if role == "tool" and span_first is not None:
                if span_last is span_first:
                    span_first["span_pos"] = "start"
                else:
                    assert span_last is not None  # set with span_first
                    span_last["span_pos"] = "inside"
                row["span"], row["span_pos"] = span_first["span"], "end"
                span_last = row
            elif role == "assistant" and (message.get("metadata") or _EMPTY).get("tool_calls"):
                row["span"], row["span_pos"] = span_number, "single"
                span_first = span_last = row
                span_number += 1
            else:
                span_first = span_last = None
            rows.append(row)
            if actions:
                findings.extend(self._findings(row, actions))
        while next_drop < len(dropped):
            self._dropped_row(dropped[next_drop], by_in_dropped, rows, findings)
            next_drop += 1
        return rows, findings

    def _map_outputs(self) -> tuple[int, dict[int, int]]:
        """Which input each output came from, where one did.

        The first ``kept`` outputs are the inputs at the same places; the dict
        maps the rest that came from an input.
        """
        inputs = self.inputs
        outputs = self.outputs
        total = len(inputs)
        # Repair keeps order, and most messages as the very dicts they were: the
        # outputs start with a run of their inputs.
        kept = same_start(inputs, outputs) if _SHORTCUTS else 0
        # What the repair inserted (synthetic results, notes) is a new dict: no
        # input to look for.
        inserted = {a.output_index for a in self.actions if a.rule in ("PAIR-1", "INT-2")}
        identity: dict[int, int] | None = None
        mapping: dict[int, int] = {}
        expected = kept  # repair keeps order: the input after the last one found, most often
        for out_index in range(kept, len(outputs)):
            if out_index in inserted:
                continue
            message = outputs[out_index]
            if _SHORTCUTS and expected < total and inputs[expected] is message:
                in_index: int | None = expected
            else:
                if identity is None:
                    identity = {id(m): index for index, m in enumerate(inputs)}
                in_index = identity.get(id(message))
            if in_index is not None:
                mapping[out_index] = in_index
                expected = in_index + 1
        for action in self.actions:
            # Changed messages are new dicts; the engine's actions say where
            # they came from. Inserted ones (synthetic results, notes) have no
            # input and stay unmapped.
            if (
                action.output_index is not None
                and action.input_index is not None
                and action.rule not in ("PAIR-1", "INT-2")
                and not 0 <= action.output_index < kept  # those are mapped already
            ):
                mapping.setdefault(action.output_index, action.input_index)
        return kept, mapping

    def _dropped_row(
        self,
        in_index: int,
        by_in: dict[int, list[Action]],
        rows: list[Row],
        findings: list[Finding],
    ) -> None:
        actions = by_in.get(in_index, ())
        row = self._row(len(rows), self.inputs[in_index], in_index, None, actions)
        row["state"] = "dropped"
        row["in_repaired"] = False
        for call in row["calls"]:
            call["removed"] = call["removed"] or any(
                a.rule == "INT-1" and a.call_id == call["id"] for a in actions
            )
        rows.append(row)
        findings.extend(self._findings(row, actions))

    def _row(
        self,
        key_number: int,
        message: dict[str, Any],
        in_index: int | None,
        out_index: int | None,
        actions: Sequence[Action],
    ) -> Row:
        # Runs once per message: most are kept as they were with no actions, and
        # take the short branch; the rest work out what the repair did to them.
        role = message.get("role", "")
        metadata = message.get("metadata") or _EMPTY
        original = None if in_index is None else self.inputs[in_index]
        if _SHORTCUTS and original is message and not actions:
            # The message is its own source: its calls and result are as they were.
            state = "kept"
            original_role = role
            moved_from = None
            found: list[str] = []
            calls = self._calls(message, message, ()) if metadata.get("tool_calls") else []
            result = _result(message, metadata, message) if role == "tool" else None
        else:
            if original is None:
                source, source_meta, source_role = message, metadata, role
            else:
                source = original
                source_meta = original.get("metadata") or _EMPTY
                source_role = original.get("role", "")
            if actions:
                rules: Set[str] = {a.rule for a in actions}
                moved_from = next(
                    (
                        a.from_index
                        for a in actions
                        if a.rule == "PAIR-2" and a.from_index is not None
                    ),
                    None,
                )
                found = sorted(rules & _REPAIR_RULE_SET, key=REPAIR_RULES.index)
            else:
                rules = _NO_RULES
                moved_from = None
                found = []
            if in_index is None:
                state = "inserted"
            elif "PAIR-3" in rules:
                state = "note"
            elif "PAIR-2" in rules:
                state = "moved"
            elif original is not message:
                state = "changed"
            else:
                state = "kept"
            # The row shows the message as repaired; the original view reads
            # ``original_role`` (a result that became a note keeps its tool role there).
            original_role = source_role if original is not None else None
            calls = self._calls(source, message, actions) if source_meta.get("tool_calls") else []
            result = _result(source, source_meta, message) if source_role == "tool" else None
        content = message.get("content")
        parts: list[dict[str, Any]]
        if _SHORTCUTS and content.__class__ is str and len(content) <= TEXT_LIMIT:
            text, parts = content, []  # ``_render_content``'s answer for most messages
        else:
            text, parts = _render_content(content)
        reasoning = metadata.get("reasoning")
        if reasoning:
            parts = [*parts, *_reasoning_parts(reasoning)]
        facts = None
        if in_index is None:
            lines = []
            cause = None
        else:
            sources = self.sources
            lines = list(sources[in_index]) if in_index < len(sources) else []
            cause = self.causes.get(in_index)
            if in_index < len(self.facts):
                facts = self.facts[in_index]
        if facts is None:
            facts = NO_FACTS
        return {
            "key": f"r{key_number}",
            "input_index": in_index,
            "output_index": out_index,
            "role": role,
            "original_role": original_role,
            "state": state,
            "text": text,
            "parts": parts,
            "calls": calls,
            "result": result,
            "healed": bool(metadata.get("healed")),
            "outcome": metadata.get("outcome"),
            "note": metadata.get("note"),
            "moved_from": moved_from,
            "span": None,
            "span_pos": None,
            "findings": found,
            "lines": lines,
            "cause": cause,
            "in_original": in_index is not None,
            "in_repaired": out_index is not None,
            "at": facts["at"],
            "model": facts["model"],
            "tokens_in": facts["tokens_in"],
            "tokens_out": facts["tokens_out"],
            "cache_read": facts.get("cache_read"),
            "cache_write": facts.get("cache_write"),
        }

    def _calls(
        self, original: dict[str, Any], repaired: dict[str, Any], actions: Sequence[Action]
    ) -> list[Call]:
        before = (original.get("metadata") or _EMPTY).get("tool_calls") or []
        if not before:
            return []
        after = (repaired.get("metadata") or _EMPTY).get("tool_calls") or []
        if not isinstance(before, list):
            return []
        if _SHORTCUTS and not actions and after is before:
            # Kept as they were (no renames, none removed): each call is its own
            # repaired call, so there is nothing to pair up.
            calls = []
            for call in before:
                if call.__class__ is not dict:
                    break  # the pairing below decides what a stray item does
                calls.append(_call_row(call, call_id_text(call), None, False))
            else:
                return calls
        if actions:
            removed: Set[int | None] = {a.call_index for a in actions if a.rule == "INT-1"}
            renames: Mapping[int, str | None] = {
                a.call_index: a.new_id
                for a in actions
                if a.rule in ("ID-1", "ID-2") and a.call_index is not None
            }
        else:
            removed = _NO_RULES
            renames = _NO_RENAMES
        calls = []
        kept = iter(after if isinstance(after, list) else [])
        for index, call in enumerate(before):
            if not isinstance(call, dict):
                continue
            is_removed = index in removed
            new_call = None if is_removed else next(kept, None)
            old_id = call_id_text(call)
            if new_call is call:  # the message's calls as they were
                new_id: str | None = old_id
            else:
                new_id = call_id_text(new_call) if new_call is not None else None
            if index in renames:
                new_id = renames[index]
            if new_id is not None and new_id == old_id:
                new_id = None
            calls.append(_call_row(call, old_id, new_id, is_removed))
        return calls

    def _findings(self, row: Row, actions: Sequence[Action]) -> list[Finding]:
        found: list[Finding] = []
        line = row["lines"][0] if row["lines"] else None
        if line is None:
            line = self._line_of_call(actions)
        seen: set[tuple[str, str | None]] = set()
        for action in actions:
            if action.rule not in REPAIR_RULES:
                continue
            ident = (action.rule, _action_ids(action)[0] if _action_ids(action) else None)
            if ident in seen:
                continue
            seen.add(ident)
            found.append(
                {
                    "rule": action.rule,
                    "row": row["key"],
                    "text": _finding_text(action, row, self.parsed.causes),
                    "ids": _action_ids(action),
                    "message": row["input_index"],
                    "line": line,
                }
            )
        return found

    def _line_of_call(self, actions: Sequence[Action]) -> int | None:
        # An inserted row has no source line of its own; point at the turn
        # whose call it answers (or whose cut it records).
        for action in actions:
            origin = action.turn_index
            if origin is None:
                origin = action.input_index
            if origin is not None and origin < len(self.sources) and self.sources[origin]:
                return self.sources[origin][0]
        return None


def _result(
    source: dict[str, Any], source_meta: dict[str, Any], repaired: dict[str, Any]
) -> Result:
    """A result row's ids: ``source`` is the original message (or the inserted one)."""
    old_id = call_id_text(source_meta)
    if source is repaired:  # kept as it was, or inserted: no other id
        new_id = None
    else:
        new_meta = repaired.get("metadata") or _EMPTY
        new_id = call_id_text(new_meta) if repaired.get("role") == "tool" else None
    return {
        "id": old_id,
        "new_id": new_id if new_id is not None and new_id != old_id else None,
        "name": source_meta.get("name"),
        "is_error": bool(source_meta.get("is_error")),
    }


def _call_row(call: dict[str, Any], old_id: str, new_id: str | None, removed: bool) -> Call:
    """A call as a row shows it; ``new_id`` is None unless the repair renamed it."""
    return {
        "id": old_id,
        "new_id": new_id,
        "name": str(call.get("name") or ""),
        "arguments": _render_arguments(call.get("arguments")),
        "removed": removed,
        "cause": None,
    }


def _action_ids(action: Action) -> list[str]:
    ids = []
    for name in ("call_id", "old_id", "new_id"):
        value = getattr(action, name, None)
        if value is not None and value not in ids:
            ids.append(str(value))
    return ids


def _finding_text(action: Action, row: Row, causes: dict[int, str]) -> str:
    name = getattr(action, "tool_name", None) or "a tool"
    call_id = getattr(action, "call_id", None) or ""
    old_id = getattr(action, "old_id", None) or ""
    new_id = getattr(action, "new_id", None) or ""
    rule = action.rule
    if rule == "PAIR-1":
        if row.get("outcome") == "not_started":
            return (
                f"Call {call_id} to {name} never got a result, and the transcript shows it never "
                "started. A synthetic result now says so."
            )
        return (
            f"Call {call_id} to {name} never got a result. A synthetic result now says the call "
            "was interrupted and the tool may have run, so check before calling it again."
        )
    if rule == "PAIR-2":
        where = getattr(action, "from_index", None)
        place = f" (it stood at message {where + 1})" if isinstance(where, int) else ""
        return (
            f"The result for call {call_id} was out of place{place}; "
            "it now sits right after its call."
        )
    if rule == "PAIR-3":
        return (
            f"A result for call {call_id} had no matching call in its turn (or the call "
            "was already answered). It is kept, as a user note, so nothing is lost."
        )
    if rule == "ID-1":
        return (
            f"Call id {old_id} was already used by an earlier call; "
            f"renamed to {new_id} on the call and its result."
        )
    if rule == "ID-2":
        return f"A call had an empty id; it is now {new_id} on the call and its result."
    if rule == "MSG-1":
        return "A blank assistant message (a placeholder saved before the tools ran) was dropped."
    if rule == "INT-1":
        cause = _cause_words(row, causes)
        return (
            f"The call to {name} was cut off mid-arguments{cause}; the partial call was removed "
            "and the prose kept. The tool was not run."
        )
    if rule == "INT-2":
        return (
            "A note now records that the previous turn was interrupted, "
            "so the model does not take it for finished."
        )
    return rule


def _cause_words(row: Row, causes: dict[int, str]) -> str:
    cause = row.get("cause")
    index = row.get("input_index")
    if cause is None and index is not None:
        cause = causes.get(index)
    return finding_words(cause)


def _render_arguments(arguments: Any) -> str:
    if isinstance(arguments, str):
        if not _JSON_START.match(arguments):
            return arguments  # no JSON value starts so: skip the parse and its exception
        try:
            parsed = orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
        return orjson.dumps(parsed, option=orjson.OPT_INDENT_2).decode()
    if arguments is None:
        return ""
    try:
        return orjson.dumps(arguments, option=orjson.OPT_INDENT_2).decode()
    except TypeError:
        return repr(arguments)


def _reasoning_parts(items: Any) -> list[dict[str, Any]]:
    """Reasoning a reader kept beside the content (Codex's ``reasoning`` items, in
    ``metadata["reasoning"]``), as the thinking parts a row shows: its summary and
    its text where the file holds them, else only that it was there (encrypted)."""
    parts: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        texts = [
            piece["text"]
            for field in ("summary", "content")
            for piece in item.get(field) or ()
            if isinstance(piece, dict) and isinstance(piece.get("text"), str) and piece["text"]
        ]
        encrypted = not texts and bool(item.get("encrypted_content"))
        label = "reasoning (encrypted)" if encrypted else "reasoning"
        parts.append({"type": "thinking", "text": _clip("\n\n".join(texts)), "label": label})
    return parts


def _render_content(content: Any) -> tuple[str, list[dict[str, Any]]]:
    """Plain text plus a list of parts; images and unknown parts get a label."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return _clip(content), []
    if not isinstance(content, list):
        return _clip(_render_arguments(content)), []
    if _SHORTCUTS and len(content) == 1:
        part = content[0]
        if part.__class__ is dict and part.get("type") == "text":
            text = part.get("text")
            if text.__class__ is str and len(text) <= TEXT_LIMIT:
                # A reply's one short text, the usual list: it is its own render.
                return text, [{"type": "text", "text": text, "label": ""}]
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, dict):
            texts.append(str(part))
            continue
        kind = part.get("type")
        if kind == "text":
            text = str(part.get("text") or "")
            texts.append(text)
            parts.append({"type": "text", "text": _clip(text), "label": ""})
        elif kind == "image":
            size = len(part.get("data") or "") * 3 // 4
            where = part.get("url") or f"{part.get('media_type', 'image')}, {size:,} bytes"
            parts.append({"type": "image", "text": "", "label": f"image ({where})"})
        elif kind in ("thinking", "reasoning", "redacted_thinking"):
            text = str(part.get("thinking") or part.get("text") or "")
            parts.append({"type": "thinking", "text": _clip(text), "label": kind})
        else:
            parts.append({"type": "other", "text": "", "label": str(kind or "part")})
    return _clip("\n".join(texts)), parts


def _clip(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    rest = len(text) - TEXT_LIMIT
    return (
        f"{text[:TEXT_LIMIT]}\n… ({rest:,} more characters: download the transcript to read them)"
    )


def public_call(call: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in call.items() if not (isinstance(k, str) and k.startswith("_"))}


def plain(value: Any) -> Any:
    """Meta as JSON-safe plain data (sets become sorted lists)."""
    return orjson.loads(orjson.dumps(value, default=_default))


def _default(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)
