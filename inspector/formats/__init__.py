"""Transcript shapes: detect, parse to canonical messages, write back. No Django.

>>> from inspector.formats import load, export_wire
>>> parsed = load(data)                      # any shape; FormatError if none fits
>>> wire, renamed = export_wire(parsed.messages, "anthropic")

- ``load(data, format="auto") -> Parsed``: with ``"auto"`` every shape sniffs
  the first 64 KiB, then shapes are tried in order of confidence and the
  first that parses wins. If none does, ``FormatError`` says why each one
  refused (``.attempts``). A shape that finds its own marks and a record it
  cannot read refuses the file for all of them (``FormatError.unread``).
  Empty, binary or non-UTF-8 input and JSON that is no transcript are
  ``FormatError`` too, never another exception.
- ``FORMATS``: format name -> module: every shape module of this package
  (one with ``NAME``, ``sniff``, ``parse`` and ``serialise``; ``base`` states
  the whole contract), found when the package is imported, not listed
  anywhere, in detection order (each module's ``ORDER``). ``WIRE_FORMATS``:
  those that also write a provider's request body (``to_wire``).
- ``extension_of(format)``: the extension a download of that format takes.
- ``to_wire(messages, provider)``: canonical messages in a provider's request
  shape, ids as they are (what the provider would be sent today).
- ``export_wire(messages, provider) -> (wire, renamed)``: the same with every
  id that provider refuses replaced by one it accepts (deterministic, no
  collisions); ``renamed`` maps old id -> new id. ``export`` gives the JSON.
- ``strip_private(messages)``: messages without the ``_``-prefixed metadata
  keys the shape modules use for writing back (for canonical downloads).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from typing import Any, cast

import orjson

from inspector.engine.canonical import is_blank
from inspector.engine.providers import CALL_ID_MAX
from inspector.formats import detect, jsonl, private
from inspector.formats.base import (
    AllShape,
    BranchShape,
    ConversationShape,
    FormatError,
    Parsed,
    Problem,
    Shape,
    WireShape,
)
from inspector.formats.jsondoc import unread_text_fields
from inspector.formats.private import strip_private

__all__ = [
    "FORMATS",
    "HEAD_BYTES",
    "WIRE_FORMATS",
    "FormatError",
    "Parsed",
    "Problem",
    "chosen_key",
    "conversation_keys",
    "export",
    "export_wire",
    "extension_of",
    "load",
    "load_all",
    "load_part",
    "serialise_all",
    "strip_private",
    "to_wire",
]

HEAD_BYTES = 64 * 1024
# The ``ORDER`` of a shape module that states none: after every one that does.
_LAST = 10**6


def _shape_modules() -> dict[str, Shape]:
    """Every shape module of this package (one with ``NAME``, ``sniff``, ``parse`` and
    ``serialise``; see ``base``), keyed by its ``NAME``, in detection order: by its
    ``ORDER`` (a shape without one after those with one), then by name."""
    found: list[tuple[int, str, Shape]] = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if all(hasattr(module, name) for name in ("NAME", "sniff", "parse", "serialise")):
            shape = cast(Shape, module)
            found.append((getattr(module, "ORDER", _LAST), shape.NAME, shape))
    found.sort(key=lambda entry: entry[:2])
    shapes = {name: shape for _, name, shape in found}
    if len(shapes) != len(found):
        raise ImportError(f"two shape modules have one NAME: {sorted(n for _, n, _ in found)}")
    return shapes


# Format name -> shape module: every shape module in this package, found, not listed.
# Detection order (``ORDER``) breaks ties between equally confident sniffs.
FORMATS: dict[str, Shape] = _shape_modules()

# The provider request shapes a canonical history can be exported to: those with ``to_wire``.
WIRE_FORMATS: dict[str, WireShape] = {
    name: cast(WireShape, module)
    for name, module in FORMATS.items()
    if callable(getattr(module, "to_wire", None))
}

# The characters ids may hold, for each provider that restricts them; an id that holds
# another is renamed on export. Every provider refuses an empty id.
_ID_CHARS: dict[str, re.Pattern[str]] = {"anthropic": re.compile(r"[a-zA-Z0-9_-]*")}
# The longest id each provider that limits them takes; a longer one is renamed on export.
# OpenAI Chat's 40 and Responses' 64 are what their checks refuse (engine.providers);
# Anthropic's 64 is only a claim (pi and LibreChat cut ids to 64 for it; no recorded
# answer or quoted error text shows it), so its check does not refuse a longer id, but
# the export, which must fit, keeps to it: a renamed id costs nothing.
_ID_LIMITS: dict[str, int] = {**CALL_ID_MAX, "anthropic": 64}

_EMPTY: dict[str, Any] = {}


def extension_of(format: str) -> str:
    """The extension (no dot) a download of a ``format`` file takes when its name has none:
    the shape's ``EXTENSION``; ``json`` for a format this version no longer reads."""
    module = FORMATS.get(format)
    return module.EXTENSION if module is not None else "json"


def id_rules(provider: str) -> tuple[re.Pattern[str] | None, int | None]:
    """The characters ``provider``'s ids may hold and how long they may be (None: any)."""
    return _ID_CHARS.get(provider), _ID_LIMITS.get(provider)


def load(data: bytes, format: str = "auto") -> Parsed:
    """Read a transcript in any known shape (or the one ``format`` names)."""
    try:
        return _load(data, format)
    finally:
        # What the sniffers shared of this file's sample, done with.
        jsonl.forget_head()
        detect.forget_sample()


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
            if exc.unread:  # its shape, with a record its reader cannot read: no other guess
                lead = f"this file could not be read as {module.LABEL}: {exc}"
                raise FormatError(f"{lead}. Nothing was diagnosed", attempts, unread=True) from None
    lead = "this is not a transcript in any shape this tool reads"
    bad = _utf8_error(data)
    if bad is not None:
        lead = f"this is not UTF-8 text (invalid byte at offset {bad}), so not a transcript"
    tried = "; ".join(f"{name}: {reason}" for name, reason in attempts)
    raise FormatError(f"{lead}. Tried {tried}", attempts)


def conversation_keys(parsed: Parsed) -> list[int]:
    """What ``parse(data, conversation=...)`` takes for each conversation the file holds.

    A file of several separate conversations (tau-bench trajectories, one
    conversation per JSON line, a claude-trace capture of a main loop and its
    side conversations) names them in ``meta``: ``conversation_keys``, or a
    count in ``conversations`` (then the keys are 0, 1, ...). A file of one
    conversation gives ``[]``.
    """
    keys = parsed.meta.get("conversation_keys")
    if isinstance(keys, list):
        return [int(key) for key in keys]
    count = parsed.meta.get("conversations")
    return list(range(count)) if isinstance(count, int) and count > 1 else []


def chosen_key(parsed: Parsed) -> int | None:
    """The key of the conversation ``parsed`` holds, when the file holds several."""
    for name in ("conversation", "exchange"):
        value = parsed.meta.get(name)
        if isinstance(value, int) and value in conversation_keys(parsed):
            return value
    return None


def has_hook(module: Shape, hook: str) -> bool:
    """Whether a shape module has one of the optional hooks ``base.HOOKS`` names:
    a function of that name, or a keyword of that name that its ``parse`` takes."""
    if hook in ("conversation", "leaf"):
        return hook in inspect.signature(module.parse).parameters
    return callable(getattr(module, hook, None))


def load_all(data: bytes, format: str = "auto") -> list[Parsed]:
    """Every conversation of the file, in its order: one ``Parsed`` each (usually one)."""
    first = load(data, format)
    keys = conversation_keys(first)
    if len(keys) <= 1:
        return [first]
    # A shape whose parse reported several conversations reads each one when asked.
    module = cast(ConversationShape, FORMATS[first.format])
    if has_hook(module, "parse_all"):  # decodes the file once for all of them
        return cast(AllShape, module).parse_all(data)
    chosen = chosen_key(first)
    return [first if key == chosen else module.parse(data, conversation=key) for key in keys]


def load_part(
    data: bytes, format: str, *, conversation: int | None = None, leaf: str | None = None
) -> Parsed:
    """One part of a file of ``format``: a conversation of several, or a session's branch.

    ``conversation`` is a key ``conversation_keys`` lists; ``leaf`` the uuid of
    the record a forked Claude Code session's other branch ends at (as
    ``meta["branches"]`` lists them). With neither, ``load(data, format)``.
    ``FormatError`` when the file has no such part.
    """
    module = FORMATS[format]
    if leaf is not None:
        if not has_hook(module, "leaf"):
            raise FormatError(f"a {format} file has no branches")
        return cast(BranchShape, module).parse(data, leaf=leaf)
    if conversation is not None:
        if not has_hook(module, "conversation"):
            raise FormatError(f"a {format} file holds one conversation")
        return cast(ConversationShape, module).parse(data, conversation=conversation)
    return load(data, format)


def serialise_all(repaired: list[tuple[list[dict[str, Any]], Parsed]]) -> bytes:
    """The file with each of its conversations (``load_all``'s) written as repaired."""
    original = repaired[0][1]
    module = FORMATS[original.format]
    if len(repaired) > 1 and has_hook(module, "serialise_all"):
        return cast(AllShape, module).serialise_all(repaired)
    if len(repaired) > 1:
        raise ValueError(f"{original.format} cannot write several conversations back")
    return bytes(module.serialise(*repaired[0]))


def to_wire(messages: list[dict[str, Any]], provider: str) -> Any:
    """``messages`` as ``provider``'s request body, ids unchanged."""
    return wire_module(provider).to_wire(strip_private(messages))


def export_wire(messages: list[dict[str, Any]], provider: str) -> tuple[Any, dict[str, str]]:
    """``messages`` as ``provider``'s request body, with ids it refuses renamed.

    Returns the body and ``{old id: new id}`` for every renamed id. A new id
    is the old one with each character the provider refuses replaced by
    ``_`` (``call`` for an empty id); one longer than the provider takes
    (OpenAI Chat: 40, Responses and Anthropic: 64) keeps its start and ends
    in ``_`` and 8 hex digits of a hash of the old id, so it depends on that
    id alone. Then ``_1``, ``_2``...
    until it is used by no id before it in the history (kept or rewritten);
    an id the provider takes that an earlier one was rewritten to is
    rewritten so too. So a call's new id depends only on the history up to
    it: the export of a prefix is a prefix of the export.
    """
    module = wire_module(provider)
    clean = strip_private(messages)
    renamed = rename_map(history_ids(clean), *id_rules(provider))
    if renamed:
        clean = [renamed_message(message, renamed) for message in clean]
    return module.to_wire(clean), renamed


def export(messages: list[dict[str, Any]], provider: str) -> bytes:
    """``export_wire``'s body as JSON bytes."""
    wire, _ = export_wire(messages, provider)
    return orjson.dumps(wire)


def _parse(module: Shape, data: bytes) -> Parsed:
    """``module.parse``, with any failure that is not ``FormatError`` turned into one."""
    try:
        parsed = module.parse(data)
    except FormatError:
        raise
    except Exception as exc:  # a shape module's bug must not escape as another type
        raise FormatError(f"could not be read ({type(exc).__name__}: {exc})") from exc
    written = getattr(module, "BLANK_IS_WRITTEN", False)
    if not written and parsed.messages and all(map(_says_nothing, parsed.messages)):
        # Every message blank is what reading another agent's records as this shape
        # gives (their content under fields this shape does not have): a repair would
        # drop them all as placeholders. Refused instead, whatever the sniff said; a
        # shape that reads content only where it is written (BLANK_IS_WRITTEN, a
        # shape module's optional flag) refuses such records itself, record by record.
        raise FormatError(
            f"every one of the {len(parsed.messages)} messages read is empty: the records "
            "keep their content in fields this shape does not have, so this is probably "
            "another agent's file; nothing was read"
        )
    for number, message in enumerate(parsed.messages):
        if _says_nothing(message) and (held := _unread_part(message)):
            # A reader that passes on a part it did not understand (its text under a
            # field it does not know) made a blank message of a message that says something.
            lines = parsed.sources[number] if number < len(parsed.sources) else []
            where = f"record {lines[0]}" if lines else f"message {number + 1}"
            raise FormatError(
                f"{where}: a text part without 'text' holds {held}: a field this reader "
                "does not know, so the file was not read"
            )
    parsed.format = module.NAME
    return parsed


def _unread_part(message: dict[str, Any]) -> str:
    content = message.get("content")
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict) and part.get("type") == "text" and "text" not in part:
            held = unread_text_fields(part)
            if held:
                return held
    return ""


def _says_nothing(message: dict[str, Any]) -> bool:
    """A message with no content, no call and no result: what a misread record becomes."""
    if message.get("role") == "tool":
        return False
    md = message.get("metadata")
    if isinstance(md, dict) and md.get("tool_calls"):
        return False
    return is_blank(message.get("content"))


def _ranked(head: bytes) -> list[tuple[str, Shape]]:
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


def wire_module(provider: str) -> WireShape:
    try:
        return WIRE_FORMATS[provider]
    except KeyError:
        known = ", ".join(WIRE_FORMATS)
        raise ValueError(f"unknown provider {provider!r}; expected one of {known}") from None


def history_ids(messages: list[dict[str, Any]]) -> list[str]:
    """Every call and result id in history order, each once."""
    # ``private.metadata``, ``calls_of`` and ``call_id`` inlined: this reads every message.
    # tests/diagnosis/test_call_ids.py holds it to the plain definition.
    seen: dict[str, None] = {}
    for message in messages:
        md = message.get("metadata")
        if md.__class__ is not dict and not isinstance(md, dict):
            md = _EMPTY
        if message.get("role") == "tool":
            value = md.get("tool_call_id") or md.get("id") or ""
            seen[value if value.__class__ is str else private.call_id(md)] = None
        calls = md.get("tool_calls")
        if not calls or (calls.__class__ is not list and not isinstance(calls, list)):
            continue
        for call in calls:
            if call.__class__ is dict or isinstance(call, dict):
                value = call.get("tool_call_id") or call.get("id") or ""
                seen[value if value.__class__ is str else private.call_id(call)] = None
    return list(seen)


def rename_map(
    ids: list[str], chars: re.Pattern[str] | None, limit: int | None = None
) -> dict[str, str]:
    """``{old: new}`` for the ids a provider refuses: empty ones, with ``chars`` any
    holding a character outside it, with ``limit`` any longer than that."""
    # The healthy case in one pass: no id is empty and, together, they use only ``chars``.
    if (
        "" not in ids
        and (chars is None or chars.fullmatch("".join(ids)))
        and (limit is None or not ids or max(map(len, ids)) <= limit)
    ):
        return {}
    match: Callable[[str], Any] = bool if chars is None else chars.fullmatch

    def accepted(value: str) -> bool:
        return bool(value) and bool(match(value)) and (limit is None or len(value) <= limit)

    # In history order, each id against the ids sent before it only: what follows a
    # call never changes the id it is sent under (the export of a prefix is a prefix
    # of the export). An id the provider takes that an earlier rewrite already took
    # is sent under a new one too.
    taken: set[str] = set()
    renamed: dict[str, str] = {}
    for old in ids:
        if accepted(old) and old not in taken:
            taken.add(old)
            continue
        base = (re.sub(r"[^a-zA-Z0-9_-]", "_", old) if chars is not None else old) or "call"
        if limit is not None and len(base) > limit - 3:  # room for a ``_k`` after it
            digest = hashlib.blake2b(old.encode("utf-8", "surrogatepass"), digest_size=4)
            base = f"{base[: limit - 12]}_{digest.hexdigest()}"
        new, k = base, 1
        while new in taken:
            new, k = f"{base}_{k}", k + 1
        renamed[old] = new
        taken.add(new)
    return renamed


def renamed_message(message: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    md = private.metadata(message)
    if message.get("role") == "tool":
        old = private.call_id(md)
        if old in renamed:
            return {**message, "metadata": {**md, "tool_call_id": renamed[old]}}
        return message
    calls = private.calls_of(message)
    if not any(private.call_id(c) in renamed for c in calls):
        return message
    fresh = []
    for call in calls:
        old = private.call_id(call)
        fresh.append({**call, "tool_call_id": renamed.get(old, old)} if old in renamed else call)
    return {**message, "metadata": {**md, "tool_calls": fresh}}
