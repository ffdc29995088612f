"""The diagnosis as data: what the web renders, the cache stores and ``--report`` prints.

A ``Diagnosis`` is one transcript's: its verdict per provider, the findings
and the timeline's rows. Rows, findings and verdicts are ``TypedDict``s: plain
dicts at run time, so orjson writes and reads them as they are (a timeline
page decodes 200 rows from the cache and hands them to a template), with
their keys named and typed here, where mypy holds every reader to them.

No Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, NotRequired, TypedDict

# Bump when the engine, a parser or this module changes what a diagnosis
# holds: stored transcripts then rebuild their cached diagnosis on next view.
ENGINE_VERSION = "4"

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


class Finding(TypedDict):
    """What one rule found and what the repair did, on the row it is shown on."""

    rule: str
    row: str | None  # the row's key; None for a line no row was read from
    text: str
    ids: list[str]
    message: int | None  # the original message's index
    line: int | None  # the file's 1-based line


class Call(TypedDict, total=False):
    """A tool call as a row shows it."""

    id: str
    new_id: str  # the id the repair gave it (ID-1, ID-2)
    name: str
    arguments: str
    state: str  # "kept", "removed" (a cut call), "renamed"...


class Row(TypedDict):
    """One line of the timeline: a message of the original, the repair, or both.

    ``state`` says which: ``kept`` (in both, unchanged), ``changed``,
    ``inserted`` (the repair's, e.g. a result for an unanswered call) or
    ``dropped``. ``findings`` names the rules that fired on it.
    """

    key: str
    state: str
    role: str
    original_role: str | None
    input_index: int | None
    output_index: int | None
    in_original: bool
    in_repaired: bool
    lines: list[int]
    findings: list[str]
    text: str
    calls: list[Call]
    parts: list[dict[str, Any]]
    span: NotRequired[int]
    span_pos: NotRequired[str]
    outcome: NotRequired[str]
    cause: NotRequired[str]


@dataclass(slots=True)
class Diagnosis:
    format: str
    engine_version: str
    message_count: int
    repaired_count: int
    needs_repair: bool
    counts: dict[str, int]
    # Sequences, not lists: a diagnosis read from the web's cache file has lazy ones.
    providers: Mapping[str, Mapping[str, Any]]
    problems: Sequence[dict[str, Any]]
    findings: Sequence[dict[str, Any]]
    rows: Sequence[dict[str, Any]]
    interrupted: Sequence[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Diagnosis:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})

    @property
    def accepted_after(self) -> bool:
        return all(not verdict["after"] for verdict in self.providers.values())
