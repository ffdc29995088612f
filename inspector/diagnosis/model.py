"""The diagnosis as data: what the web renders, the cache stores and ``--report`` prints.

A ``Diagnosis`` is one transcript's: its verdict per provider, the findings
and the timeline's rows. Rows, findings and verdicts are ``TypedDict``s: plain
dicts at run time, so orjson writes and reads them as they are (a timeline
page decodes 200 rows from the cache and hands them to a template), with
their keys named and typed here, where mypy holds every reader to them.

No Django.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, NotRequired, TypedDict

# Bump when the engine, a parser or this module changes what a diagnosis
# holds: stored transcripts then rebuild their cached diagnosis on next view.
ENGINE_VERSION = "11"

# A row's text is what a person reads on the timeline; past this length the
# rest is left to the downloads, so a 50 MB session stays a page, not a dump.
TEXT_LIMIT = 20_000

# The rules a finding can name: the engine's, then the readers' (LINE-1, a
# line that held two records, comes from a reader's problems, not an action).
REPAIR_RULES = (
    "PAIR-1",
    "PAIR-2",
    "PAIR-3",
    "ID-1",
    "ID-2",
    "MSG-1",
    "INT-1",
    "INT-2",
    "LINE-1",
)


class Issue(TypedDict):
    """One problem a provider's check finds: where (a JSON path and item index) and its words."""

    path: str
    index: int
    text: str


class Verdict(TypedDict):
    """A provider's answer to the history as uploaded (``before``) and as repaired (``after``).

    No issue: accepted. Responses' verdict on a body that continues a stored
    response may be "cannot tell": ``undecided_*`` then holds the one reason.
    """

    before: list[Issue]
    after: list[Issue]
    undecided_before: NotRequired[list[str]]
    undecided_after: NotRequired[list[str]]
    # What the check could not look at, as "not checked: unknown item kind X".
    notes_before: NotRequired[list[str]]
    notes_after: NotRequired[list[str]]


class Finding(TypedDict):
    """What one rule found and what the repair did, on the row it is shown on."""

    rule: str
    row: str | None  # the row's key; None for a line no row was read from
    text: str
    ids: list[str]
    message: int | None  # the original message's index
    line: int | None  # the file's 1-based line


class Problem(TypedDict):
    """A record of the file a reader could not take: its line, why, and what kind of fault."""

    line: int
    reason: str
    kind: str  # "unreadable", "truncated", "glued", ...


class Call(TypedDict):
    """A tool call as a row shows it."""

    id: str
    new_id: str | None  # the id the repair gave it (ID-1, ID-2); None: unchanged
    name: str
    arguments: str  # as a person reads it: pretty JSON, or the text as written
    removed: bool  # a cut call the repair took out (INT-1)
    cause: str | None  # why its turn was cut (``inspector.engine.causes``)


class Result(TypedDict):
    """A tool result's ids as a row shows them."""

    id: str
    new_id: str | None
    name: str | None
    is_error: bool


class Row(TypedDict):
    """One line of the timeline: a message of the original, of the repair, or of both.

    ``state`` says which: ``kept`` (in both, unchanged), ``changed``,
    ``moved`` (a result put after its call), ``inserted`` (the repair's: a
    result for an unanswered call, a note) or ``dropped``. ``findings`` names
    the rules that fired on it; ``span``/``span_pos`` group a call turn with
    its results; ``at``, ``model`` and the tokens are what the file records.
    """

    key: str  # "r<n>", unique in the diagnosis: what a finding and a link point at
    input_index: int | None  # the original message; None for an inserted row
    output_index: int | None  # the repaired message; None for a dropped row
    role: str
    original_role: str | None
    state: str
    text: str
    parts: list[dict[str, Any]]
    calls: list[Call]
    result: Result | None
    healed: bool
    outcome: str | None
    note: str | None
    moved_from: int | None
    span: int | None
    span_pos: str | None
    findings: list[str]
    lines: list[int]  # the file's 1-based lines it was read from
    cause: str | None
    in_original: bool
    in_repaired: bool
    at: str | None
    model: str | None
    tokens_in: int | None
    tokens_out: int | None
    cache_read: int | None  # of tokens_in, read from the provider's prompt cache
    cache_write: int | None  # of tokens_in, written into it


@dataclass(slots=True)
class Summary:
    """The short fields that open every diagnosis, made (``Diagnosis``) or read back from
    the cache (``stored.StoredDiagnosis``), whose header holds them."""

    format: str
    engine_version: str
    message_count: int
    repaired_count: int
    needs_repair: bool
    counts: dict[str, int]


@dataclass(slots=True)
class Diagnosis(Summary):
    """One conversation's diagnosis, made whole in memory by ``diagnose``.

    Read back from the cache it is a ``stored.StoredDiagnosis`` instead, with
    the same fields read on demand.
    """

    providers: dict[str, Verdict]
    problems: list[Problem]
    findings: list[Finding]
    rows: list[Row]
    interrupted: list[dict[str, Any]]  # the calls repair found interrupted (``Repair.interrupted``)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
