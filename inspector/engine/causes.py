"""Why a turn was cut: the one table of interruption causes and their words.

A shape module records a cause in ``Parsed.causes`` (message index -> cause
id) where its file says why a turn ended early; everything that words a
cause reads it here:

- ``note``: the words the repair's INT-2 note puts after "was interrupted"
  (SPEC §4 step 7: "the cause where the transcript shows it"); part of the
  repaired history, so changing one changes repaired bytes;
- ``finding``: the words a finding puts in brackets after what happened;
- ``mark``: the short label of the cause on a timeline row.
"""

from __future__ import annotations

from typing import NamedTuple


class Cause(NamedTuple):
    note: str
    finding: str
    mark: str


CAUSES: dict[str, Cause] = {
    "user_stop": Cause(" by the user", "the user pressed stop", "the user stopped it"),
    "max_tokens": Cause(
        " by the output token limit",
        "the reply hit the output token limit",
        "hit the output token limit",
    ),
    "stream_ended": Cause(
        " when the stream ended", "the stream ended with no completion", "stream ended early"
    ),
    "turn_aborted": Cause(" when the turn was aborted", "the turn was aborted", "turn aborted"),
    "api_error": Cause(" by an API error", "the provider returned an error", "provider error"),
}


def note_words(cause: str | None) -> str:
    """What the interruption note says of ``cause`` ("" for none or one not in the table)."""
    known = CAUSES.get(cause) if cause else None
    return known.note if known else ""


def finding_words(cause: str | None) -> str:
    """`` (why)`` for a finding's text, or "" when the cause is unknown."""
    known = CAUSES.get(cause) if cause else None
    return f" ({known.finding})" if known else ""


def mark_words(cause: str | None) -> str:
    """A row's label for ``cause``: its words, or the id itself for one not in the table."""
    known = CAUSES.get(cause) if cause else None
    return known.mark if known else (cause or "")
