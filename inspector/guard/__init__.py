"""The guard: the repair engine behind a provider's own request body, for agent code.

>>> from transcript_inspector import guard
>>> guarded = guard(body, "anthropic")       # or "openai-chat", "responses", "gemini"
>>> send(guarded.body)                       # a new dict; ``body`` is never changed

``guard(body, provider)`` reads the history in ``body`` (``messages``,
``input`` or ``contents``, with ``system``, ``instructions`` or
``systemInstruction``) the way the inspector reads an uploaded request body
(``inspector.formats``), repairs it with ``engine.repair_history`` and writes
it back with the shape's own writer, so every other key of the body (model,
tools, generationConfig, ...) and every message the repair did not touch stay
as they were. What it promises (DESIGN §6, SPEC §4's properties):

- **An accepted body is left alone.** When the provider's check
  (``engine.providers.check``) accepts the body, it comes back unchanged,
  byte for byte once serialised, even where the inspector would tidy
  something up (a blank assistant message, an id used again in a later turn).
- **Prefix-stable.** Of a body the provider refuses, the longest start that it
  accepts, cut just before an assistant message that surely ends a span (the
  SPEC's cut), is kept as it is; only what follows is repaired, as the
  engine repairs the whole history (ids chosen knowing every earlier one).
  So guarding a conversation and later the same conversation with more turns
  sends the same first turns both times, and the provider's prompt cache holds.
  Where the two promises meet, this one wins: a Responses output sent after
  a later user message (which the provider takes) is repaired as the body
  one turn earlier was, where it was refused for the unanswered call
  (``_late_output``), so that what went out before goes out the same; what
  the model sent in one response (DeepSeek's interleaved calls) is no turn.
- **Deterministic and idempotent:** the same body gives the same bytes;
  guarding a guarded body changes nothing more.
- **Never raises on an odd body.** What it cannot read (not a dict, no history
  list, a record the reader cannot take, a repair that would lose content)
  comes back unchanged, with a finding saying why (rule ``UNREAD``). A body
  whose history is partly stored upstream (Responses ``previous_response_id``)
  is left alone too: the check cannot tell (a ``PROV-RESPONSES`` finding).

``findings`` are the inspector's own (``diagnosis.Finding``: rule id, text, the
call ids, ``message`` the canonical message's index and ``line`` its 1-based
place in the body's list), for what the guard changed, after one
``PROV-<PROVIDER>`` finding per problem the provider's check found in the body
(its own error text); those of a repair are worked out when first read.
Imports no Django and nothing of the web layer.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, NamedTuple

import orjson

from inspector import formats
from inspector.diagnosis import Finding, read_only_predicate, repair_parsed, repair_parsed_after
from inspector.diagnosis.rows import Timeline
from inspector.diagnosis.verdicts import export_findings
from inspector.engine import InvalidTranscript, Repair
from inspector.engine.providers import (
    ACCEPTED,
    CANNOT_TELL,
    GEMINI_SNAKE_PARTS,
    RESPONSES_CALLS,
    RESPONSES_OUTPUTS,
    RESPONSES_SERVER_ITEMS,
    ProviderProblem,
    Verdict,
    check,
    check_after,
    local_cut,
)
from inspector.formats.base import FormatError, Parsed
from inspector.guard import spans, tail
from inspector.guard.tail import surely_ends_a_span as _surely_ends_a_span

__all__ = ["HISTORY_KEYS", "PROVIDERS", "UNREAD", "Guarded", "guard"]

# The providers a body may be guarded for, and the key each one's history is under.
HISTORY_KEYS = {
    "openai-chat": "messages",
    "responses": "input",
    "anthropic": "messages",
    "gemini": "contents",
}
PROVIDERS = tuple(HISTORY_KEYS)

_EXPORTED = (
    "the history was written as the inspector exports it to {}: what that API does not "
    "take in a message was left out or moved"
)

# Not a rule of the catalogue: the guard could not read the body and left it as it was.
UNREAD = "UNREAD"


class Guarded:
    """What ``guard`` gives back.

    ``body`` is a new object (a copy of the input where nothing changed),
    ``changed`` whether it differs from the input once serialised, and
    ``findings`` what was wrong and what was done, each with its rule id.

    The findings of a repair are the inspector's timeline (``diagnosis.rows``),
    which costs more than the repair itself: they are worked out when first
    read, once, so an agent that only sends ``body`` does not pay for them.
    """

    __slots__ = ("_findings", "_make", "body", "changed")

    def __init__(
        self,
        body: Any,
        changed: bool,
        findings: list[Finding] | None = None,
        *,
        later: Callable[[], list[Finding]] | None = None,
    ) -> None:
        self.body = body
        self.changed = changed
        self._findings = findings if findings is not None or later else []
        self._make = later

    @property
    def findings(self) -> list[Finding]:
        if self._make is not None:
            self._findings = [*(self._findings or ()), *self._make()]
            self._make = None
        assert self._findings is not None
        return self._findings

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Guarded):
            return NotImplemented
        same = (self.body, self.changed, self.findings)
        return same == (other.body, other.changed, other.findings)

    __hash__ = None  # type: ignore[assignment]  # as a dataclass with eq: a body is a dict

    def __repr__(self) -> str:
        return f"Guarded(body={self.body!r}, changed={self.changed!r}, findings={self.findings!r})"


def guard(
    body: Any,
    provider: str,
    *,
    model: str | None = None,
    read_only: Iterable[str] = (),
) -> Guarded:
    """``body``, a request to ``provider``, as the provider will accept it (see the module).

    ``model`` names the model where the body does not (Gemini's is in the
    URL); ``read_only`` names tools that only read, whose synthetic results
    then say they are safe to call again. An unknown ``provider`` is the
    caller's mistake, not the body's: ``ValueError``.
    """
    if provider not in HISTORY_KEYS:
        raise ValueError(f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}")
    try:
        data = orjson.dumps(body)
    except TypeError as exc:  # orjson's error for what JSON cannot hold
        return _unread(_copy(body), f"the body is not JSON ({exc})")
    fresh = orjson.loads(data)
    if not isinstance(fresh, dict):
        return _unread(fresh, f"the body is a JSON {type(fresh).__name__}, not an object")
    key = HISTORY_KEYS[provider]
    if not isinstance(fresh.get(key), list):
        return _unread(fresh, f"the body has no {key!r} list")
    try:
        verdict = check(provider, fresh, model=model)
    except Exception as exc:  # a check's bug must not reach the agent's request
        return _unread(fresh, f"the {provider} check could not read it ({type(exc).__name__})")
    late = _late_output(fresh[key]) if provider == "responses" else None
    asked = _Asked(fresh, data, provider, verdict, model, read_only)
    if verdict.state == ACCEPTED:
        if not late:
            return Guarded(fresh, False)
        try:
            return _repaired(asked, late)
        except Exception:  # an accepted body the guard cannot repair goes out as it came
            return Guarded(fresh, False)
    if verdict.state == CANNOT_TELL:
        return Guarded(fresh, False, [_provider_finding(provider, verdict.reason, None)])
    camel = _camel_case(fresh) if provider == "gemini" else None
    if camel is not None:
        # Proto JSON's snake_case names (LiteLLM writes ``function_call``), which the
        # reader does not take: guarded as the camelCase body Gemini reads the same.
        done = guard(camel, provider, model=model, read_only=read_only)
        return done if done.changed else Guarded(fresh, False, done.findings)
    if not late:
        fast = _from_the_rest(asked) or _from_the_spans(asked)
        if fast is not None:
            return fast
    return _plain(asked, late)


class _Asked(NamedTuple):
    """A body ``guard`` read and checked, as each way of repairing it takes it:
    ``data`` is its bytes as read, ``verdict`` the provider's check of them."""

    body: dict[str, Any]
    data: bytes
    provider: str
    verdict: Verdict
    model: str | None
    read_only: Iterable[str]


def _plain(asked: _Asked, late: list[tuple[int, int, str]] | None) -> Guarded:
    """A refused body guarded the plain way: read whole, as the inspector reads it."""
    try:
        return _repaired(asked, late)
    except (FormatError, InvalidTranscript) as exc:
        why = str(exc)
    except Exception as exc:  # a reader's or writer's bug must not reach the agent's request
        why = f"the body could not be repaired ({type(exc).__name__}: {exc})"
    return _unread(asked.body, why, _problem_findings(asked.provider, asked.verdict, None))


def _from_the_rest(asked: _Asked) -> Guarded | None:
    """What ``_plain`` gives, made from the items after the kept start alone
    (``tail``), or ``None`` where that is not sure to be the same.

    Only the body is made here; the findings are ``_plain``'s, worked out
    when first read.
    """
    body, data, provider, verdict, model, read_only = asked
    if not verdict.problems:
        return None
    key = HISTORY_KEYS[provider]
    try:
        rest = tail.read_rest(body, key, provider, verdict.problems[0].index, model)
        if rest is None:
            return None
        lead = rest.parsed.messages[: rest.lead]
        repaired = repair_parsed(
            rest.parsed, read_only_predicate(read_only), assigned=rest.assigned
        )
        if not all(map(operator.is_, repaired.messages[: rest.lead], lead)):
            return None
        if rest.assigned and not tail.sendable_ids(repaired.messages, provider):
            return None  # a renamed id the export would rename again (ID-3) reads the whole
        out = tail.written(rest, repaired, body, key, provider)
        if not tail.accepted(rest, out, provider, model):
            return None  # the plain path tries its other writings
    except Exception:  # lost content, say, or an odd rest: the plain path says what
        return None

    def findings() -> list[Finding]:
        # From the bytes read, not ``body``: the body sent shares the start's items with
        # it, and the agent may have changed them by the time the findings are read.
        return _plain(asked._replace(body=orjson.loads(data)), None).findings

    if orjson.dumps(out) == data:
        return Guarded(body, False, later=findings)  # refused for what no repair changes
    return Guarded(out, True, later=findings)


def _from_the_spans(asked: _Asked) -> Guarded | None:
    """What ``_plain`` gives, made from the stretches of the body the repair changes
    alone (``spans``: a body whose breaks are early, so the kept start is short), or
    ``None`` where that is not sure to be the same. The findings are ``_plain``'s,
    worked out when first read."""
    body, data, provider, verdict, model, read_only = asked
    if not verdict.problems:
        return None
    key = HISTORY_KEYS[provider]
    try:
        made = spans.body(
            body, key, provider, verdict.problems[0].index, read_only_predicate(read_only), model
        )
        if made is None or not _windows_accepted(made, verdict, provider, key, model):
            return None  # the plain path tries its other writings
        out = made.body
    except Exception:  # lost content, say: the plain path says what
        return None

    def findings() -> list[Finding]:
        return _plain(asked._replace(body=orjson.loads(data)), None).findings

    if orjson.dumps(out) == data:
        return Guarded(body, False, later=findings)
    return Guarded(out, True, later=findings)


def _windows_accepted(
    made: spans.Made, verdict: Verdict, provider: str, key: str, model: str | None
) -> bool:
    """Whether ``provider`` accepts the body ``spans`` made, its windows checked alone.

    Between windows it has the body's own items, and each window starts and ends at a
    cut no check looks across (``local_cut``): so its problems are the body's between
    windows, of which there must be none, and each window's, which the check from the
    window's start of the list up to its end gives (``check_after``), where the body
    made is accepted up to it (each one before is). Else the whole is checked."""
    if not all(any(a <= p.index < b for a, b, _, _ in made.windows) for p in verdict.problems):
        return False  # a problem no window touches stays in the body made
    out = made.body
    items = out[key]
    for _, _, start, end in made.windows:
        part = {**out, key: items[:end]}
        if end < len(items) and not local_cut(provider, out, end, model=model):
            return check(provider, out, model=model).accepted
        if start and not local_cut(provider, part, start, model=model):
            return check(provider, out, model=model).accepted
        found = (
            check_after(provider, part, start, model=model)
            if start
            else check(provider, part, model=model)
        )
        if not found.accepted:
            return False
    return True


def _repaired(asked: _Asked, late: list[tuple[int, int, str]] | None = None) -> Guarded:
    """The refused body repaired after its longest accepted start (``_kept_start``).

    ``late`` is a Responses output sent after a later turn (``_late_output``):
    where the history cut before that turn is refused, the repair starts there
    too, though the provider accepts the whole, so the body sent is the one
    the shorter history was sent as, with more turns (SPEC §4's prefix rule).
    """
    body, data, provider, verdict, model, read_only = asked
    parsed = formats.load(data, provider)
    before = _problem_findings(provider, verdict, parsed)
    if parsed.problems:
        if verdict.accepted:
            return Guarded(body, False)
        # The writer leaves out what the reader could not take: sending that would drop it.
        unread = [_finding(UNREAD, f"record {p.line}: {p.reason}", p.line) for p in parsed.problems]
        return Guarded(body, False, before + unread)
    first = verdict.problems[0].index if verdict.problems else len(body[HISTORY_KEYS[provider]])
    refused = _refused_cut(body, provider, parsed, late, first, model) if late else None
    if refused is not None:
        first = refused[0]
        before.append(_late_finding(provider, parsed, refused[1]))
    elif verdict.accepted:
        return Guarded(body, False)
    is_read_only = read_only_predicate(read_only)
    made: list[Repair] = []

    def whole() -> Repair:
        """The repair of the whole history, made once where it is needed."""
        if not made:
            made.append(repair_parsed(parsed, is_read_only))
        return made[0]

    kept, done, rest = _kept_start(body, provider, parsed, first, model, is_read_only)
    if rest is None:
        whole()  # what the repair of the whole refuses (lost content), the guard does too
        kept, done = _checked_start(parsed, whole(), kept, is_read_only)
        rest = whole().messages[done:]
    # The source shape's own writer first: every message the repair left alone goes out
    # as it came. Then the export (``formats.export_wire``), which also leaves out or
    # moves what the provider does not take in a message (text after a tool_use block,
    # empty text): first after the kept start, then whole.
    tries = [(kept, done, False), (0, 0, False), (kept, done, True), (0, 0, True)]
    chosen: tuple[dict[str, Any], dict[str, str], int, int, bool, Verdict] | None = None
    for cut, at, exported in dict.fromkeys(tries):
        after_cut = rest if cut else whole().messages
        written = _write(body, parsed, after_cut, cut, provider, exported=exported)
        if written is None:
            continue
        after = _check_sent(body, written[0], provider, _list_start(parsed, cut), model)
        if after.accepted:
            chosen = (*written, cut, at, exported, after)
            break
        chosen = chosen or (*written, cut, at, exported, after)
    assert chosen is not None  # the whole history, written by its own writer, always is
    out, renamed, cut, at, exported, after = chosen
    if orjson.dumps(out) == data:
        return Guarded(body, False, before)  # refused for what no repair changes

    def findings() -> list[Finding]:
        found = _done(parsed, whole(), cut, at, {provider: renamed} if renamed else {})
        if exported:
            found.append(_finding(f"PROV-{provider.upper()}", _EXPORTED.format(provider), None))
        return found + [
            _provider_finding(provider, f"after repair: {p.text}", p) for p in after.problems
        ]

    return Guarded(out, True, before, later=findings)


def _kept_start(
    body: dict[str, Any],
    provider: str,
    parsed: Parsed,
    first: int,
    model: str | None,
    is_read_only: Any,
) -> tuple[int, int, list[dict[str, Any]] | None]:
    """How many canonical messages to keep as sent, how many repaired ones they stand
    for, and the repair of the rest (``None`` where it needs the whole's: see below).

    The candidates are the SPEC's cuts (just before an assistant message that
    surely ends a span) at or before the list position of the first problem
    the provider found; the latest one whose start the provider accepts wins.
    The engine is prefix-stable, so the repair of those messages is the start
    of the repair of them all (its length says where the repaired rest
    begins), and the rest is repaired alone, told its offset and the ids
    the start gave out (``diagnosis.repair_parsed_after``): the repair of the
    whole, which costs as much as the body is long, is not made. Where that
    does not apply (a history partly stored upstream) or fails, the rest is
    ``None`` and the caller repairs the whole and checks it starts so.
    """
    key = HISTORY_KEYS[provider]
    items = body[key]
    for cut in reversed(range(1, len(parsed.messages))):
        start = _list_start(parsed, cut)
        if start is None or start > first or not _surely_ends_a_span(parsed.messages[cut]):
            continue
        # Where no check looks across the cut, the start has the body's problems before
        # ``first``, the first of them: none, so it is accepted without walking it again.
        if not (
            local_cut(provider, body, start, model=model)
            or check(provider, {**body, key: items[:start]}, model=model).accepted
        ):
            continue
        head = replace(
            parsed,
            messages=parsed.messages[:cut],
            causes={i: c for i, c in parsed.causes.items() if i < cut},
        )
        try:
            repaired_head = repair_parsed(head, is_read_only)
            # The start goes out as sent: where its repair left a call out (cut
            # mid-stream, say), the provider still took that call's id.
            sent = formats.history_ids(parsed.messages[:cut])
            rest = repair_parsed_after(parsed, cut, repaired_head, is_read_only, taken=sent)
        except Exception:  # lost content, say: the repair of the whole says what
            return cut, 0, None
        if rest is None:
            return cut, 0, None
        return cut, len(repaired_head.messages), rest
    return 0, 0, None


def _check_sent(
    body: dict[str, Any], out: dict[str, Any], provider: str, start: int | None, model: str | None
) -> Verdict:
    """``check(provider, out)``, for ``out`` written after the first ``start`` items of
    ``body``, which the provider accepts: from the cut on alone (``check_after``) where
    ``out`` starts with those items and has the body's other keys, byte for byte, and
    no check looks across the cut (``local_cut``): then the start has no problem, and
    the whole's problems are those after it. The check of a long kept start is a walk
    of it in Python; the comparison is ``orjson``'s."""
    key = HISTORY_KEYS[provider]
    if not start or not local_cut(provider, out, start, model=model):
        return check(provider, out, model=model)
    sent, items = out[key], body[key]
    if (
        len(out) != len(body)
        or any(k not in body for k in out)
        or orjson.dumps({k: v for k, v in out.items() if k != key})
        != orjson.dumps({k: body[k] for k in out if k != key})
        or orjson.dumps(sent[:start]) != orjson.dumps(items[:start])
    ):
        return check(provider, out, model=model)
    return check_after(provider, out, start, model=model)


def _checked_start(parsed: Parsed, whole: Repair, cut: int, is_read_only: Any) -> tuple[int, int]:
    """``(cut, done)`` where the repair of ``parsed.messages[:cut]`` (``done`` messages)
    is the start of ``whole``, else ``(0, 0)`` (never expected: the engine's prefix
    rule); repair it all then."""
    if not cut:
        return 0, 0
    head = replace(
        parsed,
        messages=parsed.messages[:cut],
        causes={i: c for i, c in parsed.causes.items() if i < cut},
    )
    repaired_head = repair_parsed(head, is_read_only).messages
    done = len(repaired_head)
    return (cut, done) if _same_messages(repaired_head, whole.messages[:done]) else (0, 0)


# Gemini reads proto JSON, which takes snake_case field names too: the part keys, and the
# ones inside inline and file data. Everything else in a part is spelt the same both ways.
_CAMEL = {
    **GEMINI_SNAKE_PARTS,
    "mime_type": "mimeType",
    "file_uri": "fileUri",
}


def _snake_case(contents: list[Any]) -> bool:
    """Whether a part of ``contents`` has a snake_case name (one walk, in plain loops:
    every Gemini body the provider refuses pays it)."""
    names = _CAMEL.keys()
    for content in contents:
        if isinstance(content, dict):
            parts = content.get("parts")
            if isinstance(parts, list):
                for part in parts:
                    if isinstance(part, dict) and not names.isdisjoint(part):
                        return True
    return False


def _camel_case(body: dict[str, Any]) -> dict[str, Any] | None:
    """``body`` with its ``contents`` parts' snake_case names in camelCase, or ``None``
    when it has none (the usual body)."""
    contents = body["contents"]
    if not _snake_case(contents):
        return None

    def renamed(part: Any) -> Any:
        if not isinstance(part, dict):
            return part
        out = {}
        for name, value in part.items():
            if name in ("inline_data", "file_data") and isinstance(value, dict):
                value = {_CAMEL.get(k, k): v for k, v in value.items()}
            out[_CAMEL.get(name, name)] = value
        return out

    fixed = [
        {**content, "parts": [renamed(part) for part in content["parts"]]}
        if isinstance(content, dict) and isinstance(content.get("parts"), list)
        else content
        for content in contents
    ]
    return {**body, "contents": fixed}


def _late_output(items: list[Any]) -> list[tuple[int, int, str]]:
    """The Responses calls whose output comes after a later user message: (the call's
    list position, the output's, the call id), none in the usual body (one pass).

    The provider takes such an output, but the history cut before the model's next
    turn (the body the agent sent one turn earlier) leaves the call unanswered: the
    guard had to answer it then. What the model sent in one response (its messages,
    reasoning and calls, interleaved as DeepSeek's are) is not such a turn: no request
    ends inside a response, so its outputs after it are not late.
    """
    open_calls: dict[str, int] = {}
    crossed: dict[str, int] = {}
    found: list[tuple[int, int, str]] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind is not None and not isinstance(kind, str):
            kind = ""  # any JSON value: an item of no kind the check knows, between turns
        cid = item.get("call_id")
        if kind in RESPONSES_CALLS:
            if isinstance(cid, str):
                open_calls.setdefault(cid, n)
        elif kind in RESPONSES_OUTPUTS:
            if isinstance(cid, str):
                at = crossed.pop(cid, None)
                if at is not None:
                    found.append((at, n, cid))
                open_calls.pop(cid, None)
        elif open_calls and not _from_the_model(item, kind):
            crossed.update(open_calls)
            open_calls.clear()
    return found


def _from_the_model(item: dict[str, Any], kind: Any) -> bool:
    """Whether a Responses item is one the model sends in a response (not a turn's end)."""
    if kind is None or kind == "message":
        return item.get("role") == "assistant"
    return kind in RESPONSES_CALLS or kind in RESPONSES_SERVER_ITEMS or kind == "reasoning"


def _refused_cut(
    body: dict[str, Any],
    provider: str,
    parsed: Parsed,
    late: list[tuple[int, int, str]],
    first: int,
    model: str | None,
) -> tuple[int, tuple[int, int, str]] | None:
    """The list position of the first SPEC cut, up to ``first``, between a ``late``
    call and its output, whose start the provider refuses (where the shorter history
    was repaired), with that call."""
    key = HISTORY_KEYS[provider]
    items = body[key]
    for cut in range(1, len(parsed.messages)):
        start = _list_start(parsed, cut)
        if start is None or not _surely_ends_a_span(parsed.messages[cut]):
            continue
        if start > first:
            return None
        across = [one for one in late if one[0] < start <= one[1]]
        if across and not check(provider, {**body, key: items[:start]}, model=model).accepted:
            return start, across[0]
    return None


def _late_finding(provider: str, parsed: Parsed, late: tuple[int, int, str]) -> Finding:
    text = (
        f"the output for call {late[2]} comes after a later turn; the history before that "
        "turn is refused without it, so the body sent then was repaired there (the call "
        "answered as interrupted, or left out if it was cut mid-stream): it is repaired "
        "the same way again and this output follows as a note, so what was sent before "
        "goes out the same (prefix stability)"
    )
    found = _finding(f"PROV-{provider.upper()}", text, late[1] + 1)
    found["ids"] = [late[2]]
    found["message"] = next((i for i, s in enumerate(parsed.sources) if late[1] + 1 in s), None)
    return found


def _same_messages(ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> bool:
    """Whether two repaired lists serialise to the same bytes; the engine hands back the
    input's own objects where it changed nothing, so most pairs are one object."""
    if len(ours) != len(theirs):
        return False
    return all(
        a is b or orjson.dumps(a) == orjson.dumps(b) for a, b in zip(ours, theirs, strict=True)
    )


def _write(
    body: dict[str, Any],
    parsed: Parsed,
    rest: list[dict[str, Any]],
    kept: int,
    provider: str,
    *,
    exported: bool,
) -> tuple[dict[str, Any], dict[str, str]] | None:
    """The body with ``kept`` messages as read and then ``rest`` (the repair's messages
    after those ``kept`` stand for), and the ids it renamed (ID-3).

    Written by the source shape's writer, or (``exported``) as ``formats.export_wire``
    writes them after the ``kept`` messages' items as sent; ``None`` when the export of
    those messages is not the start of the export of them all (one turn across the cut).
    """
    key = HISTORY_KEYS[provider]
    messages = parsed.messages[:kept] + rest
    renamed = _renames(messages, provider)
    if kept and renamed:
        # The kept start goes out as it is: its ids too, which the provider took.
        taken = set(formats.history_ids(parsed.messages[:kept]))
        renamed = {old: new for old, new in renamed.items() if old not in taken}
    if renamed:
        messages = [formats.renamed_message(message, renamed) for message in messages]
    if not exported:
        out: dict[str, Any] = orjson.loads(formats.FORMATS[provider].serialise(messages, parsed))
        return out, renamed
    wire = orjson.loads(orjson.dumps(formats.export_wire(messages, provider)[0]))
    if not kept:
        return {**body, **wire}, renamed
    head = orjson.loads(orjson.dumps(formats.export_wire(messages[:kept], provider)[0][key]))
    start = _list_start(parsed, kept)
    if start is None or wire[key][: len(head)] != head:
        return None
    return {**body, key: body[key][:start] + wire[key][len(head) :]}, renamed


def _done(
    parsed: Parsed, whole: Repair, kept: int, done: int, renames: dict[str, dict[str, str]]
) -> list[Finding]:
    """The inspector's findings (``diagnosis.rows.Timeline``) for what the guard changed.

    The rows of the start kept as sent say what the inspector would do there; the
    guard did not do it, so their findings are left out.
    """
    rows, found = Timeline(parsed, whole).build()
    shown = {
        row["key"]
        for row in rows
        if (row["output_index"] is not None and row["output_index"] >= done)
        or (row["output_index"] is None and (row["input_index"] or 0) >= kept)
    }
    findings = [f for f in found if f["row"] in shown]
    return findings + [f for f in export_findings(rows, renames) if f["row"] in shown]


def _renames(messages: list[dict[str, Any]], provider: str) -> dict[str, str]:
    """``{old: new}`` for each id ``provider`` refuses (ID-3), as ``formats.export_wire`` does."""
    return formats.rename_map(formats.history_ids(messages), *formats.id_rules(provider))


def _list_start(parsed: Parsed, index: int) -> int | None:
    """Where canonical message ``index`` starts in the body's list (0-based), if it is in it."""
    lines = parsed.sources[index] if index < len(parsed.sources) else []
    if not lines:
        return None
    low = min(lines)  # once: the kept start's search asks it of every message
    return low - 1 if low > 0 else None


def _problem_findings(provider: str, verdict: Verdict, parsed: Parsed | None) -> list[Finding]:
    return [_provider_finding(provider, p.text, p, parsed) for p in verdict.problems]


def _provider_finding(
    provider: str, text: str, problem: ProviderProblem | None, parsed: Parsed | None = None
) -> Finding:
    """A ``PROV-<PROVIDER>`` finding: what the provider's check says of the body."""
    line = problem.index + 1 if problem is not None else None
    found = _finding(f"PROV-{provider.upper()}", text, line)
    if problem is not None:
        found["ids"] = list(problem.ids)
    if parsed is not None and line is not None:
        found["message"] = next((i for i, s in enumerate(parsed.sources) if line in s), None)
    return found


def _finding(rule: str, text: str, line: int | None) -> Finding:
    return {"rule": rule, "row": None, "text": text, "ids": [], "message": None, "line": line}


def _unread(body: Any, why: str, before: list[Finding] | None = None) -> Guarded:
    return Guarded(body, False, [*(before or []), _finding(UNREAD, why, None)])


def _copy(body: Any) -> Any:
    """A deep copy of what JSON cannot hold, or the object itself when even that fails."""
    try:
        return copy.deepcopy(body)
    except Exception:  # an object that refuses copying is handed back as it is
        return body
