"""What every shape module shares: the parse result, the one error type, and the contract.

A shape module is one file in this package; ``formats/__init__.py`` finds
every module that has ``NAME``, ``sniff``, ``parse`` and ``serialise`` and
registers it in ``FORMATS`` under its ``NAME``. Nothing else names a shape:
the loader, the diagnosis, the downloads, the console's ``--format`` and the
upload form read what they need from the module.
``tests/formats/test_shape_contract.py`` holds every registered module to
this contract. Its required names (``Shape``):

- ``NAME: str`` the format id (``"claude-code"``, ...), as ``--format`` takes it;
- ``PROVIDER: str`` the provider shape it corresponds to (``"openai-chat"``,
  ``"anthropic"``, ``"responses"``, ``"gemini"``; canonical uses
  ``"openai-chat"``);
- ``LABEL: str`` its name in words, for the upload form and the lists;
- ``EXTENSION: str`` the extension of its files, without the dot: a
  repaired download of a file whose name has none takes it;
- ``sniff(head: bytes) -> float`` confidence in 0..1 from the first bytes,
  for any bytes at all;
- ``parse(data: bytes) -> Parsed``; raises ``FormatError`` when the bytes are
  not this shape at all; a readable file with some bad lines or records
  returns a ``Parsed`` whose ``problems`` name them;
- ``serialise(messages: list[dict], original: Parsed) -> bytes`` writes
  canonical messages back in the source shape: the file's very bytes when
  ``messages`` is ``original.messages``.

Optional hooks, each declared by the Protocol named (``HOOKS``); a module
without one gets the default said:

- ``parse(data, *, conversation=None)`` (``ConversationShape``): a file may
  hold several conversations; ``parse`` reads the one asked for and names
  them in ``meta`` (see ``formats.conversation_keys``). Default: one a file.
- ``parse_all(data) -> list[Parsed]`` (``AllShape``): every conversation,
  decoding the file once. Default: ``parse`` once per conversation.
- ``serialise_all(repaired) -> bytes`` (``AllShape``): the file with each of
  its conversations written as repaired. Default: a file of several
  conversations is not written back.
- ``parse(data, *, leaf=None)`` (``BranchShape``): a forked session's other
  branch, by the uuid of the record it ends at (``meta["branches"]``).
  Default: a file has no branches.
- ``to_wire(messages, *, memo=None)`` (``WireShape``): a provider's request
  body; only the provider shapes (``WIRE_FORMATS``) have it.
- ``timeline_facts(parsed) -> list[Facts | None]`` (``TimelineShape``): per
  message, what the file records of when it was written, by which model and
  with how many tokens (``Facts``; ``None`` for a message it says nothing
  of); the timeline's header and rows show them. Default: ``[]``, nothing
  recorded.
- ``ORDER: int``: where the shape stands in detection order, which breaks
  ties between equally confident sniffs (and orders the lists): lower first.
  Default: after every shape that states one.
- ``stored_history(parsed) -> dict[str, Any]`` (``StoredShape``): what names
  the history a request body continues on the provider's side (a Responses
  ``previous_response_id`` or ``conversation``), as the body names it; the
  verdicts then say the provider's answer depends on it. Default: ``{}``.
- ``BLANK_IS_WRITTEN = True``: the shape reads content only where it is
  written and refuses a record that keeps it elsewhere, so a blank message
  is blank in the file. Without it, ``load`` refuses a read in which every
  message is blank: that is what another agent's records read as this shape
  look like.

What the shape modules share lives beside this one: ``private`` (the
private metadata keys and the readings of a canonical message every writer
uses), ``jsondoc`` (reading and writing JSON documents), ``exchanges``
(recorded API calls and request bodies), ``detect`` (telling shapes apart)
and ``jsonl`` (JSON Lines, each record's bytes kept). Adding a shape takes
the module and a corpus file (docs/architecture.md, "Adding a shape").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol


class FormatError(ValueError):
    """The bytes are not a transcript this shape (or any shape) can read.

    The message says why in plain words; ``attempts`` lists, for ``load``'s
    auto-detection, each shape tried and why it was rejected. ``unread``
    says the file is surely this shape (its own marks are there) but holds a
    record the reader does not understand: ``load`` then refuses the file as
    unread instead of trying a more generic shape, which would read blanks
    or miss what the shape means.
    """

    def __init__(
        self, message: str, attempts: list[tuple[str, str]] | None = None, *, unread: bool = False
    ):
        super().__init__(message)
        self.attempts = attempts or []
        self.unread = unread


@dataclass(frozen=True, slots=True)
class Problem:
    """One line or record that could not be read (or was read with repair).

    ``line`` is 1-based for line-oriented files; for JSON documents it is the
    1-based record (message) number inside the list, or 0 for the document.
    """

    line: int
    reason: str
    kind: str = "unreadable"  # "unreadable" | "truncated" | "glued" | "skipped" | "duplicate"


@dataclass(slots=True)
class Parsed:
    """A transcript read from bytes.

    - ``messages``: canonical messages (SPEC §2), what repair and the
      provider checks see.
    - ``sources``: for each message, the 1-based line numbers (JSONL) or
      record numbers (JSON) it came from; same length as ``messages``.
    - ``problems``: every line or record that was not read, with the reason.
    - ``causes``: interruption causes the format shows, keyed by the index
      of the canonical message they apply to (the assistant message that was
      cut, or the user marker); values are short ids: ``"user_stop"``,
      ``"max_tokens"``, ``"stream_ended"``, ``"turn_aborted"``,
      ``"api_error"``.
    - ``not_started``: call ids the transcript proves never ran.
    - ``meta``: shape-specific facts for the UI (``session_id``, ``branches``,
      ``forks``, ``sidechain``, ``parent_session``, ``cwd``, ...).
    - ``state``: whatever ``serialise`` needs to write the file back.
    """

    format: str
    messages: list[dict[str, Any]]
    sources: list[list[int]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    causes: dict[int, str] = field(default_factory=dict)
    not_started: set[str] = field(default_factory=set)
    meta: dict[str, Any] = field(default_factory=dict)
    state: Any = None


class Shape(Protocol):
    """A shape module, as the module docstring lists its names (``FORMATS`` holds them)."""

    NAME: str
    PROVIDER: str
    LABEL: str  # in words, for the upload form and lists
    EXTENSION: str  # of its files, without the dot: a repaired download keeps it

    def sniff(self, head: bytes) -> float: ...

    def parse(self, data: bytes) -> Parsed: ...

    def serialise(self, messages: list[dict[str, Any]], original: Parsed) -> bytes: ...


class ConversationShape(Shape, Protocol):
    """A shape whose files may hold several conversations: ``parse`` reads the one asked for."""

    def parse(self, data: bytes, *, conversation: int | None = None) -> Parsed: ...


class AllShape(Shape, Protocol):
    """A shape that reads and writes all the conversations of a file at once."""

    def parse_all(self, data: bytes) -> list[Parsed]: ...

    def serialise_all(self, repaired: list[tuple[list[dict[str, Any]], Parsed]]) -> bytes: ...


class BranchShape(Shape, Protocol):
    """A shape whose sessions fork: ``parse`` reads the branch that ends at ``leaf``."""

    def parse(self, data: bytes, *, leaf: str | None = None) -> Parsed: ...


# What a shape's ``timeline_facts`` says of one message: ``at`` (an ISO timestamp),
# ``model``, ``tokens_in`` (all the model read, cache included), ``tokens_out``; each
# ``None`` where the file does not say. Optional, where the file records them:
# ``cache_read`` (of ``tokens_in``, the tokens read from the provider's prompt cache)
# and ``cache_write`` (of ``tokens_in``, the tokens written into it); a shape that
# leaves them out says nothing of the cache.
Facts = dict[str, Any]
NO_FACTS: Facts = {
    "at": None,
    "model": None,
    "tokens_in": None,
    "tokens_out": None,
    "cache_read": None,
    "cache_write": None,
}


def token_count(value: Any) -> int | None:
    """``value`` when it is a count of tokens (an int, not a bool), else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def epoch_time(value: Any, *, ms: bool = True) -> str | None:
    """A Unix time (milliseconds, or seconds with ``ms=False``) as an ISO time in UTC (``Z``).

    ``None`` for what is no number or no time a clock can show (a file's odd
    value leaves the fact unsaid; it never makes the file unreadable).
    """
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    try:
        at = datetime.fromtimestamp(value / 1000 if ms else value, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return at.isoformat().replace("+00:00", "Z")


class TimelineShape(Shape, Protocol):
    """A shape whose records say when each message was written, by which model, at what cost."""

    def timeline_facts(self, parsed: Parsed) -> list[Facts | None]: ...


class StoredShape(Shape, Protocol):
    """A shape whose request bodies may continue a history the provider keeps."""

    def stored_history(self, parsed: Parsed) -> dict[str, Any]: ...


class WireShape(Shape, Protocol):
    """A shape module that also writes a provider's request body (``WIRE_FORMATS``)."""

    def to_wire(
        self, messages: list[dict[str, Any]], *, memo: dict[Any, Any] | None = None
    ) -> dict[str, Any]: ...


# Each optional hook (a function, or a keyword of ``parse``) and the Protocol that declares it.
HOOKS: dict[str, type] = {
    "conversation": ConversationShape,
    "parse_all": AllShape,
    "serialise_all": AllShape,
    "leaf": BranchShape,
    "to_wire": WireShape,
    "timeline_facts": TimelineShape,
    "stored_history": StoredShape,
}
