"""Transcript shapes: detect, parse to canonical messages, write back. No Django.

>>> from inspector.formats import load, export_wire
>>> parsed = load(data)                      # any shape; FormatError if none fits
>>> wire, renamed = export_wire(parsed.messages, "anthropic")

- ``load(data, format="auto") -> Parsed``: with ``"auto"`` every shape sniffs
  the first 64 KiB, then shapes are tried in order of confidence and the
  first that parses wins. If none does, ``FormatError`` says why each one
  refused (``.attempts``). Empty, binary or non-UTF-8 input and JSON that is
  no transcript are ``FormatError`` too, never another exception.
- ``FORMATS``: format name -> module, each with ``NAME``, ``PROVIDER``,
  ``sniff``, ``parse`` and ``serialise`` (see ``base``).
- ``to_wire(messages, provider)``: canonical messages in a provider's request
  shape, ids as they are (what the provider would be sent today).
- ``export_wire(messages, provider) -> (wire, renamed)``: the same with every
  id that provider refuses replaced by one it accepts (deterministic, no
  collisions); ``renamed`` maps old id -> new id. ``export`` gives the JSON.
- ``strip_private(messages)``: messages without the ``_``-prefixed metadata
  keys the shape modules use for writing back (for canonical downloads).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

import orjson

from inspector.engine.providers import ProviderProblem, validate
from inspector.formats import (
    ai_sdk,
    anthropic,
    canonical,
    claude_code,
    codex,
    codex_exec,
    gemini,
    langchain,
    openai_chat,
    pi,
    pydantic_ai,
    responses,
    skeleton,
)
from inspector.formats.base import FormatError, Parsed, Problem
from inspector.formats.canonical import public, same_start, strip_private
from inspector.formats.jsonl import collector_paused

__all__ = [
    "FORMATS",
    "HEAD_BYTES",
    "WIRE_FORMATS",
    "FormatError",
    "Parsed",
    "Problem",
    "Wires",
    "export",
    "export_wire",
    "load",
    "strip_private",
    "to_wire",
]

HEAD_BYTES = 64 * 1024


# Detection order breaks ties between equally confident sniffs.
FORMATS: dict[str, ModuleType] = {
    "canonical": canonical,
    "openai-chat": openai_chat,
    "anthropic": anthropic,
    "responses": responses,
    "gemini": gemini,
    "claude-code": claude_code,
    "codex": codex,
    "pi": pi,
    "codex-exec": codex_exec,
    "pydantic-ai": pydantic_ai,
    "langchain": langchain,
    "ai-sdk": ai_sdk,
}

# The provider request shapes a canonical history can be exported to.
WIRE_FORMATS: dict[str, ModuleType] = {
    "openai-chat": openai_chat,
    "anthropic": anthropic,
    "responses": responses,
    "gemini": gemini,
}

# The characters ids may hold, for each provider that restricts them; an id that holds
# another is renamed on export. Every provider refuses an empty id.
_ID_CHARS: dict[str, re.Pattern[str]] = {"anthropic": re.compile(r"[a-zA-Z0-9_-]*")}

_EMPTY: dict[str, Any] = {}


def load(data: bytes, format: str = "auto") -> Parsed:
    """Read a transcript in any known shape (or the one ``format`` names)."""
    # Sniffing and the JSON (not JSONL) shapes build as many objects as the
    # JSONL readers, which pause the collector themselves.
    with collector_paused():
        return _load(data, format)


def _load(data: bytes, format: str) -> Parsed:
    if isinstance(data, str):
        data = data.encode("utf-8")
    elif not isinstance(data, bytes):
        try:
            data = bytes(data)
        except TypeError:
            raise FormatError(f"expected bytes, got {type(data).__name__}") from None
    if not data or data.isspace():  # ``not data.strip()`` without copying the data
        raise FormatError("the file is empty")
    head = data[:HEAD_BYTES]
    if b"\x00" in head:
        raise FormatError("this is binary data, not a transcript (it contains NUL bytes)")
    if format != "auto":
        module = FORMATS.get(format)
        if module is None:
            known = ", ".join(["auto", *FORMATS])
            raise FormatError(f"unknown format {format!r}; use one of {known}")
        try:
            return _parse(module, data)
        except FormatError as exc:
            raise FormatError(f"not {format}: {exc}", [(format, str(exc))]) from None
    attempts: list[tuple[str, str]] = []
    for name, module in _ranked(head):
        try:
            return _parse(module, data)
        except FormatError as exc:
            attempts.append((name, str(exc)))
    lead = "this is not a transcript in any shape this tool reads"
    bad = _utf8_error(data)
    if bad is not None:
        lead = f"this is not UTF-8 text (invalid byte at offset {bad}), so not a transcript"
    tried = "; ".join(f"{name}: {reason}" for name, reason in attempts)
    raise FormatError(f"{lead}. Tried {tried}", attempts)


def to_wire(messages: list[dict[str, Any]], provider: str) -> Any:
    """``messages`` as ``provider``'s request body, ids unchanged."""
    return _wire_module(provider).to_wire(strip_private(messages))


def export_wire(messages: list[dict[str, Any]], provider: str) -> tuple[Any, dict[str, str]]:
    """``messages`` as ``provider``'s request body, with ids it refuses renamed.

    Returns the body and ``{old id: new id}`` for every renamed id. A new id
    is the old one with each character the provider refuses replaced by
    ``_`` (``call`` for an empty id), then ``_1``, ``_2``... until it is used
    by no other id in the history.
    """
    module = _wire_module(provider)
    clean = strip_private(messages)
    renamed = _renames(_ids(clean), _ID_CHARS.get(provider))
    if renamed:
        clean = [_rename(message, renamed) for message in clean]
    return module.to_wire(clean), renamed


class Wires:
    """Each provider's body for a history as it is and as repaired, made with shared work.

    ``before(provider)`` is ``to_wire(before, provider)``, ``after(provider)``
    is ``export_wire(after, provider)[0]`` and ``renamed(provider)`` its
    second value. Repair hands back untouched messages as the same objects,
    so each message is stripped of private keys once and converted once per
    provider (the repaired body reuses the original's pieces), and the ids
    are collected once. The pieces, and the maps ``renamed`` gives, are shared
    between the bodies: read them, do not change them.

    With ``for_checks=True`` a regular history (``inspector.formats.skeleton``)
    gets the skeleton of the body instead: a provider check finds in it what
    it finds in the body, at a fraction of the cost. Never send a skeleton.
    ``problems_before`` and ``problems_after`` check the bodies so, starting
    after a regular history's quiet prefix.
    """

    def __init__(self, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
        # Both histories are held, so their messages' ids stay unique while they
        # key the memos. Checks on skeletons read no private key, and never strip.
        self._originals = before
        self._repaired = after
        self._stripped: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._ids: list[str] | None = None
        self._renamed: dict[re.Pattern[str] | None, dict[str, str]] = {}
        self._histories: dict[int, list[skeleton.Digest] | None] = {}
        self._walks: dict[int, skeleton.Walk] = {}
        self._shared_count: int | None = None
        # The pieces of one provider at a time: a 100,000-message history's pieces
        # for every provider at once would hold millions of objects.
        self._memo: tuple[str, dict[Any, Any]] = ("", {})

    def before(self, provider: str, *, for_checks: bool = False) -> Any:
        """The body of the history as it is; ``for_checks``: maybe only its skeleton."""
        if for_checks:
            history = self._digests(0, self._originals)
            if history is not None:
                _wire_module(provider)  # an unknown provider is an error here too
                return skeleton.body(provider, history, {}, self._walk(0))
        clean, _ = self._clean()
        return _wire_module(provider).to_wire(clean, memo=self._memo_for(provider))

    def after(self, provider: str, *, for_checks: bool = False) -> Any:
        """The body of the repaired history; ``for_checks``: maybe only its skeleton."""
        renamed = self.renamed(provider)
        if for_checks:
            history = self._digests(1, self._repaired)
            if history is not None:
                return skeleton.body(provider, history, renamed, self._walk(1))
        _, clean = self._clean()
        messages = [_rename(m, renamed) for m in clean] if renamed else clean
        return _wire_module(provider).to_wire(messages, memo=self._memo_for(provider))

    def problems_before(self, provider: str) -> list[ProviderProblem]:
        """``validate(provider, self.before(provider))``, as cheaply as it can be found."""
        return self._problems(provider, 0, self._originals, {})

    def problems_after(self, provider: str) -> list[ProviderProblem]:
        """``validate(provider, self.after(provider))``, as cheaply as it can be found."""
        return self._problems(provider, 1, self._repaired, self.renamed(provider))

    def _problems(
        self, provider: str, which: int, messages: list[dict[str, Any]], renamed: dict[str, str]
    ) -> list[ProviderProblem]:
        history = self._digests(which, messages)
        if history is None:
            wire = self.after(provider) if which else self.before(provider)
            return validate(provider, wire)
        _wire_module(provider)  # an unknown provider is an error here too
        wire, start = skeleton.quiet_body(provider, history, renamed, self._walk(which))
        return validate(provider, wire, start)

    def renamed(self, provider: str) -> dict[str, str]:
        if self._ids is None:
            # Private keys hold no ids; a regular history's digests hold them all.
            history = self._digests(1, self._repaired)
            if history is None:
                self._ids = _ids(self._repaired)
            else:  # its walk has the ids of its quiet prefix
                self._ids = skeleton.ids(history, self._walk(1))
        _wire_module(provider)  # an unknown provider is an error here too
        # Found once for the providers that accept the same ids (all but Anthropic).
        chars = _ID_CHARS.get(provider)
        if chars not in self._renamed:
            self._renamed[chars] = _renames(self._ids, chars)
        return self._renamed[chars]

    def _clean(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Both histories stripped of private keys, once for every provider.

        The repaired history reuses the stripped copies of the messages it
        shares, so the pieces made of them are shared too.
        """
        if self._stripped is None:
            before = strip_private(self._originals)
            clean = {id(m): c for m, c in zip(self._originals, before, strict=True)}
            after = [
                c if (c := clean.get(id(m))) is not None else public(m) for m in self._repaired
            ]
            self._stripped = (before, after)
        return self._stripped

    def _digests(self, which: int, messages: list[dict[str, Any]]) -> list[skeleton.Digest] | None:
        # Made once per history for the four providers.
        if which not in self._histories:
            original = self._histories.get(0) if which else None
            if original is None:
                self._histories[which] = skeleton.digests(messages)  # none made yet to reuse
            else:
                # The repaired history starts with the original's messages, up
                # to the first repair: their digests are the original's. Most
                # of the rest are the original's later messages, kept.
                shared = self.shared()
                leading = not shared or original[shared - 1][0] == "system"
                later = self._originals[shared:]
                memo = dict(zip(map(id, later), original[shared:], strict=True))
                rest = skeleton.digests(messages[shared:], memo, leading)
                self._histories[which] = None if rest is None else original[:shared] + rest
        return self._histories[which]

    def shared(self) -> int:
        """How many messages the repaired history starts with that are the original's."""
        if self._shared_count is None:
            self._shared_count = same_start(self._originals, self._repaired)
        return self._shared_count

    def _walk(self, which: int) -> skeleton.Walk | None:
        """The walk of a regular history, made once for the four providers."""
        history = self._histories.get(which)
        if history is None:
            return None
        if which not in self._walks:
            resume = None
            if which and self._histories.get(0) is not None:
                # The repaired history shares the original's messages up to the
                # first repair, and so their digests: walk on from there.
                resume = (self._walk(0), self.shared())
            self._walks[which] = skeleton.walk(history, resume)
        return self._walks[which]

    def _memo_for(self, provider: str) -> dict[Any, Any]:
        if self._memo[0] != provider:
            self._memo = (provider, {})
        return self._memo[1]


def export(messages: list[dict[str, Any]], provider: str) -> bytes:
    """``export_wire``'s body as JSON bytes."""
    wire, _ = export_wire(messages, provider)
    return orjson.dumps(wire)


def _parse(module: ModuleType, data: bytes) -> Parsed:
    """``module.parse``, with any failure that is not ``FormatError`` turned into one."""
    try:
        parsed = module.parse(data)
    except FormatError:
        raise
    except Exception as exc:  # a shape module's bug must not escape as another type
        raise FormatError(f"could not be read ({type(exc).__name__}: {exc})") from exc
    parsed.format = module.NAME
    return parsed


def _ranked(head: bytes) -> list[tuple[str, ModuleType]]:
    scores = []
    for order, (name, module) in enumerate(FORMATS.items()):
        try:
            score = float(module.sniff(head))
        except Exception:  # a sniffer that trips over odd bytes just has no opinion
            score = 0.0
        scores.append((-score, order, name, module))
    scores.sort(key=lambda entry: entry[:2])
    return [(name, module) for _, _, name, module in scores]


def _utf8_error(data: bytes) -> int | None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def _wire_module(provider: str) -> ModuleType:
    try:
        return WIRE_FORMATS[provider]
    except KeyError:
        known = ", ".join(WIRE_FORMATS)
        raise ValueError(f"unknown provider {provider!r}; expected one of {known}") from None


def _ids(messages: list[dict[str, Any]]) -> list[str]:
    """Every call and result id in history order, each once."""
    # ``canonical.metadata``, ``calls_of`` and ``call_id`` inlined: this reads every message.
    seen: dict[str, None] = {}
    for message in messages:
        md = message.get("metadata")
        if md.__class__ is not dict and not isinstance(md, dict):
            md = _EMPTY
        if message.get("role") == "tool":
            value = md.get("tool_call_id") or md.get("id") or ""
            seen[value if value.__class__ is str else canonical.call_id(md)] = None
        calls = md.get("tool_calls")
        if not calls or (calls.__class__ is not list and not isinstance(calls, list)):
            continue
        for call in calls:
            if call.__class__ is dict or isinstance(call, dict):
                value = call.get("tool_call_id") or call.get("id") or ""
                seen[value if value.__class__ is str else canonical.call_id(call)] = None
    return list(seen)


def _renames(ids: list[str], chars: re.Pattern[str] | None) -> dict[str, str]:
    """``{old: new}`` for the ids a provider refuses: empty ones, or with ``chars``, any
    holding a character outside it."""
    # The healthy case in one pass: no id is empty and, together, they use only ``chars``.
    if "" not in ids and (chars is None or chars.fullmatch("".join(ids))):
        return {}
    accepted: Callable[[str], Any] = bool if chars is None else chars.fullmatch
    taken = {i for i in ids if i and accepted(i)}
    renamed: dict[str, str] = {}
    for old in ids:
        if old and accepted(old):
            continue
        base = re.sub(r"[^a-zA-Z0-9_-]", "_", old) or "call"
        new, k = base, 1
        while new in taken:
            new, k = f"{base}_{k}", k + 1
        renamed[old] = new
        taken.add(new)
    return renamed


def _rename(message: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    md = canonical.metadata(message)
    if message.get("role") == "tool":
        old = canonical.call_id(md)
        if old in renamed:
            return {**message, "metadata": {**md, "tool_call_id": renamed[old]}}
        return message
    calls = canonical.calls_of(message)
    if not any(canonical.call_id(c) in renamed for c in calls):
        return message
    fresh = []
    for call in calls:
        old = canonical.call_id(call)
        fresh.append({**call, "tool_call_id": renamed.get(old, old)} if old in renamed else call)
    return {**message, "metadata": {**md, "tool_calls": fresh}}
