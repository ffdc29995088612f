"""Vercel AI SDK message lists: ``UIMessage`` (what ``useChat`` keeps and apps save)
and ``ModelMessage`` (what ``convertToModelMessages`` makes and ``generateText``
takes), as a JSON list or an object's ``"messages"`` list.

- ``UIMessage``: ``{"id", "role", "parts": [...]}``. Parts: ``text``,
  ``reasoning``, ``step-start`` (a new model step), ``file``, ``source-*``,
  ``data-*``, ``tool-<name>`` and ``dynamic-tool`` (``toolCallId``, ``state``:
  ``input-streaming``, ``input-available``, ``approval-requested``,
  ``approval-responded``, ``output-available``, ``output-error``,
  ``output-denied``; ``input``, ``output``, ``errorText``), and the AI SDK 4
  ``tool-invocation`` part (``toolInvocation``: ``state`` ``partial-call``,
  ``call`` or ``result``, ``args``, ``result``).
- ``ModelMessage``: ``{"role", "content"}``; assistant parts ``text``,
  ``reasoning``, ``file``, ``tool-call`` (``toolCallId``, ``toolName``,
  ``input``, AI SDK 4: ``args``), provider-run ``tool-result``; ``tool``
  messages hold ``tool-result`` parts (``output: {"type", "value"}``, AI SDK 4:
  ``result``, ``isError``).

Reading (``parse``)
-------------------
- A UI assistant message is one canonical assistant message per step (parts
  between ``step-start`` parts): its text, its reasoning (as
  ``{"type": "thinking"}``), its tool parts as calls; each tool part that has
  an output (or an error, or a denial) is the result after its step, in call
  order. A part still ``input-streaming`` marks its step ``"stream_ended"``;
  one awaiting or given approval, or denied, never ran (``not_started``).
- A model message is one canonical message, except a ``tool`` message: one
  result per ``tool-result`` part. ``error-text`` / ``error-json`` outputs,
  ``isError`` and denials are ``is_error``.
- ``sources`` are 1-based positions of the messages in the list.

Writing (``serialise``)
-----------------------
Unchanged lists come back byte for byte; otherwise the list is dumped again,
untouched messages as they were. UI messages: a call that never got a
result has its part set to ``output-error`` with the repair's words as
``errorText`` (AI SDK 4: ``state: "result"``), so ``convertToModelMessages``
sends the call and that error; renamed ids are renamed in their part. Model
messages: a result the repair made is a ``tool-result`` part
(``output: {"type": "error-text"}``; AI SDK 4: ``result`` and ``isError``) in
the ``tool`` message after its call; renamed ids are renamed in the
``tool-call`` and its result. Notes become user messages.
"""

from __future__ import annotations

from typing import Any

from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.detect import Alternatives, opens_json
from inspector.formats.jsondoc import dump_list, message_list, part_text, typed_parts, written_state
from inspector.formats.jsondoc import text_of as _joined
from inspector.formats.jsondoc import text_or_json as _text
from inspector.formats.private import PART, REC, Message, call_id, kept_calls, public
from inspector.formats.private import metadata as _md

NAME = "ai-sdk"
# A UIMessage text part's own fields besides its text (what ``part_text`` may ignore).
_UI_TEXT_KEYS = frozenset({"state"})
PROVIDER = "openai-chat"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Vercel AI SDK messages"
EXTENSION = "json"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 130

STEP = "_step"

_DONE = frozenset({"output-available", "output-error", "output-denied"})
_UNRUN = frozenset({"approval-requested", "approval-responded", "output-denied"})
_MODEL_PARTS = frozenset(
    {"tool-call", "tool-result", "tool-approval-request", "tool-approval-response"}
)
_STRONG = Alternatives(
    rb'"type"\s*:\s*"(tool-call|tool-result|tool-invocation|dynamic-tool|step-start)"',
    rb'"state"\s*:\s*"(output-available|output-error|input-available|input-streaming)"',
)

_CAMEL = Alternatives(rb'"toolCallId"\s*:')
_UI_TEXT = Alternatives(rb'"parts"\s*:\s*\[\s*\{\s*"type"\s*:\s*"text"')


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    if not opens_json(head):
        return 0.0
    if _STRONG.search(head) and (_CAMEL.search(head) or b'"step-start"' in head):
        return 0.9
    if _UI_TEXT.search(head) and b'"role"' in head and b'"info"' not in head:
        return 0.6
    return 0.0


# --------------------------------------------------------------------------- parse


def parse(data: bytes) -> Parsed:
    records, wrapper = message_list(
        data, "not a list of AI SDK messages (nor an object with 'messages')"
    )
    kind = _list_kind(records)
    if kind is None:
        raise FormatError("no message is an AI SDK UIMessage (parts) or ModelMessage (tool parts)")
    reader = _Reader(kind)
    for rec, record in enumerate(records):
        reader.record(rec, record)
    if not reader.messages:
        raise FormatError("no AI SDK message could be read")
    for n, m in enumerate(reader.messages):
        m["metadata"].setdefault(STEP, n)
    meta = {"kind": kind, "version": reader.version()}
    state = {"data": data, "records": records, "wrapper": wrapper, "kind": kind}
    return Parsed(
        NAME,
        reader.messages,
        reader.sources,
        reader.problems,
        causes=reader.causes,
        not_started=reader.not_started,
        meta=meta,
        state=state,
    )


def _list_kind(records: list[Any]) -> str | None:
    ui = model = 0
    for record in records:
        if not isinstance(record, dict):
            continue
        parts = record.get("parts")
        if (
            isinstance(parts, list)
            and "content" not in record
            and any(isinstance(p, dict) and isinstance(p.get("type"), str) for p in parts)
        ):
            ui += 1
        content = record.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") in _MODEL_PARTS for p in content
        ):
            model += 1
    if ui > model:
        return "ui"
    return "model" if model else None


class _Reader:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.messages: list[Message] = []
        self.sources: list[list[int]] = []
        self.problems: list[Problem] = []
        self.causes: dict[int, str] = {}
        self.not_started: set[str] = set()
        self.legacy = 0  # AI SDK 4 spellings seen (tool-invocation, args, result)

    def version(self) -> int:
        return 4 if self.legacy else 5

    def add(self, message: Message, rec: int, part: int | None = None) -> None:
        message["metadata"][REC] = rec
        if part is not None:
            message["metadata"][PART] = part
        self.messages.append(message)
        self.sources.append([rec + 1])

    def record(self, rec: int, record: Any) -> None:
        number = rec + 1
        if not isinstance(record, dict):
            self.problems.append(Problem(number, "a message must be an object"))
            return
        role = record.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            self.problems.append(Problem(number, f"role {role!r} is not an AI SDK role"))
            return
        if self.kind == "ui":
            parts = record.get("parts")
            if not isinstance(parts, list):
                self.problems.append(Problem(number, "a UIMessage without a 'parts' list"))
                return
            self.ui(rec, role, parts)
        elif "content" not in record:
            # A ModelMessage keeps its words in 'content': read as empty, a repair would
            # drop what this one holds under fields this reader does not know.
            held = ", ".join(repr(k) for k in record if k != "role")
            raise FormatError(
                f"record {number}: a ModelMessage without 'content'"
                f" (it holds {held or 'nothing else'}), so the file was not read"
            )
        else:
            self.model(rec, role, record.get("content"))

    # --- UIMessage ---------------------------------------------------------------------

    def ui(self, rec: int, role: str, parts: list[Any]) -> None:
        if role != "assistant":
            content: Any = _content([p for p in parts if not _is_tool(p)])
            if role == "system":
                content = _joined(content)
            message = {"role": "user" if role == "tool" else role, "content": content}
            self.add({**message, "metadata": {}}, rec)
            return
        for step, items in enumerate(_steps(parts)):
            self.ui_step(rec, step, items)

    def ui_step(self, rec: int, step: int, items: list[tuple[int, Any]]) -> None:
        content: list[Any] = []
        calls: list[dict[str, Any]] = []
        results: list[Message] = []
        streaming = False
        for n, part in items:
            tool = _ui_tool(part)
            if tool is None:
                content.extend(_content([part]))
                continue
            state, call_id, name, args, outcome = tool
            if part.get("type") == "tool-invocation" or "args" in (
                part.get("toolInvocation") or {}
            ):
                self.legacy += 1
            calls.append({"tool_call_id": call_id, "name": name, "arguments": args})
            if state == "input-streaming" or state == "partial-call":
                streaming = True
            if state in _UNRUN:
                self.not_started.add(call_id)
            if outcome is not None:
                text, is_error = outcome
                md: dict[str, Any] = {"tool_call_id": call_id, "name": name, PART: n}
                if is_error:
                    md["is_error"] = True
                results.append({"role": "tool", "content": text, "metadata": md})
        if not content and not calls:
            return
        metadata: dict[str, Any] = {STEP: step}
        if calls:
            metadata["tool_calls"] = calls
        if streaming:
            self.causes[len(self.messages)] = "stream_ended"
        self.add({"role": "assistant", "content": content, "metadata": metadata}, rec)
        for result in results:
            result["metadata"][STEP] = step
            self.add(result, rec)

    # --- ModelMessage ------------------------------------------------------------------

    def model(self, rec: int, role: str, content: Any) -> None:
        if content is not None and not isinstance(content, str | list):
            self.problems.append(Problem(rec + 1, "content must be text or a list of parts"))
            return
        if role == "tool":
            for n, part in enumerate(content if isinstance(content, list) else []):
                result = _model_result(part)
                if result is None:
                    continue
                if "result" in part:
                    self.legacy += 1
                self.add(result, rec, n)
            return
        if role != "assistant":
            value: Any = content if isinstance(content, str) else _content(content or [])
            if role == "system":
                value = _joined(value)
            self.add({"role": role, "content": value, "metadata": {}}, rec)
            return
        parts = content if isinstance(content, list) else []
        calls: list[dict[str, Any]] = []
        text: list[Any] = []
        inner: list[tuple[int, Message]] = []
        for n, part in enumerate(parts):
            if isinstance(part, dict) and part.get("type") == "tool-call":
                if "args" in part and "input" not in part:
                    self.legacy += 1
                args = part.get("input", part.get("args"))
                calls.append(
                    {
                        "tool_call_id": _str(part.get("toolCallId")),
                        "name": _str(part.get("toolName")),
                        "arguments": {} if args is None else args,
                    }
                )
            elif isinstance(part, dict) and part.get("type") == "tool-result":
                result = _model_result(part)
                if result is not None:
                    inner.append((n, result))  # a tool the provider ran
            elif isinstance(part, dict) and part.get("type") in _MODEL_PARTS:
                continue  # approvals: not the conversation
            else:
                text.extend(_content([part]))
        metadata: dict[str, Any] = {"tool_calls": calls} if calls else {}
        value = content if isinstance(content, str) else text
        self.add({"role": "assistant", "content": value, "metadata": metadata}, rec)
        for n, result in inner:
            self.add(result, rec, n)


def _steps(parts: list[Any]) -> list[list[tuple[int, Any]]]:
    """A UI assistant message's parts, step by step (``step-start`` parts start one)."""
    steps: list[list[tuple[int, Any]]] = [[]]
    for n, part in enumerate(parts):
        if isinstance(part, dict) and part.get("type") == "step-start":
            if steps[-1]:
                steps.append([])
            continue
        steps[-1].append((n, part))
    return [step for step in steps if step]


def _is_tool(part: Any) -> bool:
    return _ui_tool(part) is not None


def _ui_tool(part: Any) -> tuple[str, str, str, Any, tuple[str, bool] | None] | None:
    """(state, call id, name, arguments, (result text, is_error) or None) of a tool part."""
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        return None
    kind = part["type"]
    if kind == "tool-invocation" and isinstance(part.get("toolInvocation"), dict):
        inv = part["toolInvocation"]
        state = _str(inv.get("state"))
        args = inv.get("args", inv.get("input"))
        result = (_text(inv.get("result")), False) if state == "result" else None
        return state, _str(inv.get("toolCallId")), _str(inv.get("toolName")), _args(args), result
    if not (kind.startswith("tool-") or kind == "dynamic-tool") or "toolCallId" not in part:
        return None
    name = _str(part.get("toolName")) if kind == "dynamic-tool" else kind[5:]
    state = _str(part.get("state"))
    outcome: tuple[str, bool] | None = None
    if state == "output-available":
        outcome = (_text(part.get("output")), False)
    elif state == "output-error":
        outcome = (_text(part.get("errorText")), True)
    elif state == "output-denied":
        approval = part.get("approval")
        reason = approval.get("reason") if isinstance(approval, dict) else None
        outcome = (reason if isinstance(reason, str) and reason else "denied", True)
    return state, _str(part.get("toolCallId")), name, _args(part.get("input")), outcome


def _args(value: Any) -> Any:
    return {} if value is None else value


def _model_result(part: Any) -> Message | None:
    if not isinstance(part, dict) or part.get("type") != "tool-result":
        return None
    md: dict[str, Any] = {"tool_call_id": _str(part.get("toolCallId"))}
    if isinstance(part.get("toolName"), str):
        md["name"] = part["toolName"]
    output = part.get("output")
    if isinstance(output, dict) and "type" in output:
        kind = output.get("type")
        value = output.get("value", output.get("reason"))
        text = _text(value)
        if kind in ("error-text", "error-json", "execution-denied"):
            md["is_error"] = True
    else:
        text = _text(part.get("result", output))
        if part.get("isError"):
            md["is_error"] = True
    return {"role": "tool", "content": text, "metadata": md}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _content(parts: list[Any]) -> list[Any]:
    return typed_parts(parts, _part)


def _part(part: dict[str, Any]) -> Any:
    kind = part["type"]
    if kind == "text":
        return {"type": "text", "text": _text(part_text(part, known=_UI_TEXT_KEYS))}
    if kind == "reasoning":
        return {"type": "thinking", "thinking": _text(part.get("text"))}
    if kind == "image" and isinstance(part.get("image"), str):
        return {"type": "image", "url": part["image"]}
    if kind == "file" and str(part.get("mediaType", "")).startswith("image/"):
        url = part.get("url", part.get("data"))
        return {"type": "image", "url": url} if isinstance(url, str) else part
    return part


# --------------------------------------------------------------------------- serialise


def serialise(messages: list[Message], original: Parsed) -> bytes:
    state = written_state(original, "records")
    if messages == original.messages:
        return bytes(state["data"])
    legacy = original.meta.get("version") == 4
    if state["kind"] == "ui":
        out = _UiWriter(state["records"], original.messages, legacy).write(messages)
    else:
        out = _ModelWriter(state["records"], original.messages, legacy).write(messages)
    return dump_list(out, state)


def _origin(m: Message) -> int | None:
    rec = _md(m).get(REC)
    return rec if isinstance(rec, int) and not isinstance(rec, bool) else None


def _call_plan(old: Message, new: Message) -> list[str | None]:
    """For each old call, in order: its id as repaired, or None when removed."""
    calls = old["metadata"].get("tool_calls") or []
    step = kept_calls(calls, _md(new).get("tool_calls") or [])
    return [None if (kept := step()) is None else kept[1] for _ in calls]


class _UiWriter:
    """UI messages: each record is copied once it is edited; tool parts are edited in place."""

    def __init__(self, records: list[Any], before: list[Message], legacy: bool) -> None:
        self.records = records
        self.before = before
        self.legacy = legacy
        self.edited: dict[int, dict[str, Any]] = {}
        self.removed: set[tuple[int, int]] = set()  # (record, part) the repair dropped
        self.calls: dict[str, tuple[int, int]] = {}  # repaired call id -> (record, part)
        self.after: dict[int, list[dict[str, Any]]] = {}  # new records after a record
        self.dropped: set[int] = set()

    def _step(self, rec: int, m: Message) -> list[tuple[int, Any]]:
        step = _md(m).get(STEP)
        steps = _steps(self.records[rec]["parts"])
        return steps[step] if isinstance(step, int) and 0 <= step < len(steps) else []

    def _part_indices(self, rec: int, m: Message) -> list[int]:
        """The tool parts of an assistant step, in call order."""
        return [n for n, part in self._step(rec, m) if _is_tool(part)]

    def _edit(self, rec: int) -> dict[str, Any]:
        if rec not in self.edited:
            record = self.records[rec]
            self.edited[rec] = {**record, "parts": list(record["parts"])}
        return self.edited[rec]

    def write(self, messages: list[Message]) -> list[Any]:
        by_key = {
            (_origin(m), _md(m).get(STEP), m["role"], _md(m).get(PART)): m for m in self.before
        }
        used: set[int] = set()
        last_rec: int | None = None
        for m in messages:
            rec = _origin(m)
            key = (rec, _md(m).get(STEP), m.get("role"), _md(m).get(PART))
            old = by_key.get(key) if rec is not None else None
            if old is None or id(old) in used:
                self._new(m, last_rec)
                continue
            used.add(id(old))
            assert rec is not None
            last_rec = rec
            if old["role"] == "assistant":
                indices = self._part_indices(rec, old)
                plan = _call_plan(old, m)
                for n, new_id in zip(indices, plan, strict=False):
                    if new_id is None:
                        self.removed.add((rec, n))
                        continue
                    self.calls[new_id] = (rec, n)
                    part = self.records[rec]["parts"][n]
                    if new_id != _tool_id(part):
                        self._edit(rec)["parts"][n] = _with_id(part, new_id)
            elif old["role"] == "tool" and m.get("role") == "tool":
                new_id = call_id(_md(m))
                n = old["metadata"][PART]
                part = (
                    self._edit(rec)["parts"][n]
                    if rec in self.edited
                    else self.records[rec]["parts"][n]
                )
                if new_id != _tool_id(part):
                    self._edit(rec)["parts"][n] = _with_id(part, new_id)
            elif m.get("role") != old.get("role"):
                self._new(m, last_rec)
        for m in self.before:
            if (
                id(m) not in used
                and m["role"] == "assistant"
                and not m["metadata"].get("tool_calls")
            ):
                self._drop_text(m)
        out: list[Any] = []
        for rec, record in enumerate(self.records):
            value = self.edited.get(rec, record)
            if isinstance(value, dict) and isinstance(value.get("parts"), list):
                parts = [p for n, p in enumerate(value["parts"]) if (rec, n) not in self.removed]
                if len(parts) != len(value["parts"]):
                    value = {**value, "parts": parts}
            if rec not in self.dropped:
                out.append(value)
            out.extend(self.after.get(rec, []))
        out[:0] = self.after.get(-1, [])
        return out

    def _drop_text(self, m: Message) -> None:
        """A blank step the repair dropped: its text parts go (the record, if nothing is left)."""
        rec = _origin(m)
        if rec is None:
            return
        for n, part in self._step(rec, m):
            if isinstance(part, dict) and part.get("type") == "text":
                self.removed.add((rec, n))
        parts = self.records[rec]["parts"]
        if not any(
            (rec, n) not in self.removed for _, items in enumerate(_steps(parts)) for n, _p in items
        ):
            self.dropped.add(rec)

    def _new(self, m: Message, last_rec: int | None) -> None:
        md = _md(m)
        if m.get("role") == "tool":
            call = call_id(md)
            found = self.calls.get(call)
            if found is not None:
                rec, n = found
                record = self._edit(rec)
                record["parts"][n] = _completed(record["parts"][n], _joined_text(m), self.legacy)
                return
        text = _joined_text(m)
        count = sum(len(v) for v in self.after.values())
        new = {
            "id": f"repair-note-{count + 1}",
            "role": "user",
            "parts": [{"type": "text", "text": text}],
        }
        self.after.setdefault(-1 if last_rec is None else last_rec, []).append(new)


def _tool_id(part: Any) -> str:
    if isinstance(part, dict) and isinstance(part.get("toolInvocation"), dict):
        return _str(part["toolInvocation"].get("toolCallId"))
    return _str(part.get("toolCallId")) if isinstance(part, dict) else ""


def _with_id(part: dict[str, Any], new_id: str) -> dict[str, Any]:
    if isinstance(part.get("toolInvocation"), dict):
        return {**part, "toolInvocation": {**part["toolInvocation"], "toolCallId": new_id}}
    return {**part, "toolCallId": new_id}


def _completed(part: dict[str, Any], text: str, legacy: bool) -> dict[str, Any]:
    """A tool part that never got its output, as the repair completes it."""
    if isinstance(part.get("toolInvocation"), dict):
        return {
            **part,
            "toolInvocation": {**part["toolInvocation"], "state": "result", "result": text},
        }
    out = {k: v for k, v in part.items() if k not in ("output", "approval")}
    out["state"] = "output-error"
    out["errorText"] = text
    return out


def _joined_text(m: Message) -> str:
    return _joined(m.get("content") if isinstance(m.get("content"), str | list) else "")


class _ModelWriter:
    """Model messages: records regrouped as pydantic-ai's are, tool messages holding results."""

    def __init__(self, records: list[Any], before: list[Message], legacy: bool) -> None:
        self.records = records
        self.legacy = legacy
        self.parsed: dict[tuple[int, int | None], Message] = {}
        for m in before:
            md = m["metadata"]
            self.parsed[(md[REC], md.get(PART))] = m

    def write(self, messages: list[Message]) -> list[Any]:
        out: list[Any] = []
        group: list[Message] = []
        group_rec: int | None = None

        def flush() -> None:
            nonlocal group, group_rec
            if group:
                out.append(self._tool_record(group, group_rec))
            group, group_rec = [], None

        for m in messages:
            rec = _origin(m)
            role = m.get("role")
            if role == "tool" and rec is not None and self._is_assistant(rec):
                continue  # a provider-run result: written with its assistant message
            if role == "tool":
                if rec is not None and group_rec is not None and rec != group_rec:
                    flush()
                group.append(m)
                if group_rec is None and rec is not None:
                    group_rec = rec
                continue
            flush()
            old = self.parsed.get((rec, None)) if rec is not None else None
            if rec is not None and old is not None and public(old) == public(m):
                out.append(self.records[rec])
            elif rec is not None and old is not None and role == "assistant":
                out.append(self._assistant(self.records[rec], old, m))
            else:
                out.append(self._new_message(m))
        flush()
        return out

    def _is_assistant(self, rec: int) -> bool:
        record = self.records[rec]
        return isinstance(record, dict) and record.get("role") == "assistant"

    def _tool_record(self, group: list[Message], rec: int | None) -> Any:
        template = self.records[rec] if rec is not None else None
        parts = [self._result_part(m) for m in group]
        if isinstance(template, dict) and isinstance(template.get("content"), list):
            others = [
                p
                for p in template["content"]
                if not (isinstance(p, dict) and p.get("type") == "tool-result")
            ]
            parts += others
            if parts == template["content"]:
                return template
            return {**template, "content": parts}
        return {"role": "tool", "content": parts}

    def _result_part(self, m: Message) -> Any:
        rec, part = _origin(m), _md(m).get(PART)
        md = _md(m)
        if rec is not None and isinstance(part, int):
            old = self.parsed.get((rec, part))
            source = self.records[rec]["content"][part]
            if old is not None and public(old) == public(m):
                return source
            if (
                old is not None
                and old.get("content") == m.get("content")
                and m.get("role") == "tool"
            ):
                return {**source, "toolCallId": call_id(md)}
        text = _joined_text(m)
        new: dict[str, Any] = {
            "type": "tool-result",
            "toolCallId": call_id(md),
            "toolName": _str(md.get("name")),
        }
        if self.legacy:
            new |= {"result": text, "isError": True}
        else:
            new["output"] = {"type": "error-text", "value": text}
        return new

    def _assistant(self, record: dict[str, Any], old: Message, m: Message) -> Any:
        plan = _call_plan(old, m)
        content = record.get("content")
        if not isinstance(content, list):
            return {**record, "content": _model_content(m.get("content"))}
        out: list[Any] = []
        n = 0
        for part in content:
            if isinstance(part, dict) and part.get("type") == "tool-call":
                new_id = plan[n] if n < len(plan) else _str(part.get("toolCallId"))
                n += 1
                if new_id is None:
                    continue
                out.append(
                    part if new_id == part.get("toolCallId") else {**part, "toolCallId": new_id}
                )
            else:
                out.append(part)
        return {**record, "content": out}

    def _new_message(self, m: Message) -> dict[str, Any]:
        role = m.get("role")
        if role == "assistant":
            parts = _model_content(m.get("content"))
            for call in _md(m).get("tool_calls") or []:
                if isinstance(call, dict):
                    key = "args" if self.legacy else "input"
                    parts.append(
                        {
                            "type": "tool-call",
                            "toolCallId": call_id(call),
                            "toolName": _str(call.get("name")),
                            key: call.get("arguments"),
                        }
                    )
            return {"role": "assistant", "content": parts}
        if role == "system":
            return {"role": "system", "content": _joined_text(m)}
        return {"role": "user", "content": _model_content(m.get("content"))}


def _model_content(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[Any] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "text":
            out.append({"type": "text", "text": part.get("text", "")})
        elif isinstance(part, dict) and part.get("type") == "thinking":
            out.append({"type": "reasoning", "text": part.get("thinking", "")})
        elif isinstance(part, dict) and part.get("type") == "image":
            out.append({"type": "image", "image": part.get("url") or part.get("data")})
        elif part is not None:
            out.append(part)
    return out
