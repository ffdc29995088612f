"""Choosing and paging the timeline's rows, and the small timelines of the rule pages.

A view is chosen on the row index (``inspector.diagnosis.stored.RowIndex``) as a
list of row positions, a pass over lists of small ints; only the rows of the
page being shown are read from the cache and decoded. Rows are shared with
the in-process diagnosis cache: nothing here changes them.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlencode

import orjson

from inspector.diagnosis.model import Row
from inspector.diagnosis.stored import IndexedRows, ListRows, StoredDiagnosis, group_findings
from inspector.engine.canonical import call_id_text as call_id

if TYPE_CHECKING:
    from inspector.diagnosis.model import Diagnosis

PAGE_SIZE = 200
# A findings group lists this many entries; the rest are one filter away.
GROUP_LIMIT = 25


@dataclass(frozen=True, slots=True)
class Filters:
    view: str = "annotated"
    rule: str = ""
    role: str = ""
    around: int | None = None  # rows of context around each finding; None: every row
    branch: str = ""  # another branch of a forked session, by its leaf uuid; "": the active one
    # Another conversation of a file of several, by its key; None: the one shown first.
    conversation: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.rule or self.role or self.around is not None)

    def query(self, **changes: Any) -> dict[str, Any]:
        """GET parameters for these filters, with ``changes``; defaults left out."""
        values = {
            "view": self.view,
            "rule": self.rule,
            "role": self.role,
            "around": self.around,
            "branch": self.branch,
            "conversation": self.conversation,
            **changes,
        }
        if values["view"] == "annotated":
            values["view"] = None
        return {key: str(value) for key, value in values.items() if value not in (None, "")}


def indexed_rows(diagnosis: Diagnosis | StoredDiagnosis) -> IndexedRows:
    """The diagnosis's rows with their index (built here for rows held as a plain list)."""
    rows = diagnosis.rows
    return rows if isinstance(rows, IndexedRows) else ListRows(rows)


def select_positions(diagnosis: Diagnosis | StoredDiagnosis, filters: Filters) -> list[int]:
    """The positions of the rows a filtered view shows, in the order it shows them."""
    index = indexed_rows(diagnosis).row_index
    everything = range(len(index))
    if filters.view == "original":
        in_original = index.in_original
        # A row in the original has an input index: the key is never None.
        by_input = cast(Callable[[int], int], index.input_indexes.__getitem__)
        positions = sorted((p for p in everything if in_original[p]), key=by_input)
    elif filters.view == "repaired":
        in_repaired = index.in_repaired
        positions = [p for p in everything if in_repaired[p]]
    else:
        positions = list(everything)
    if filters.role:
        code = index.role_code(filters.role)
        roles = index.original_roles if filters.view == "original" else index.roles
        positions = [p for p in positions if roles[p] == code]
    findings = index.findings
    if filters.around is None:
        if filters.rule:
            positions = [p for p in positions if filters.rule in findings.get(p, ())]
        return positions
    if filters.rule:
        hits = [i for i, p in enumerate(positions) if filters.rule in findings.get(p, ())]
    else:
        hits = [i for i, p in enumerate(positions) if p in findings]
    keep: list[int] = []
    last = -1
    for hit in hits:
        start = max(hit - filters.around, last + 1)
        stop = min(hit + filters.around, len(positions) - 1)
        keep.extend(positions[start : stop + 1])
        last = max(last, stop)
    return keep


def page_count(positions: Sequence[int]) -> int:
    return max(1, -(-len(positions) // PAGE_SIZE))


def page_rows(
    diagnosis: Diagnosis | StoredDiagnosis, positions: Sequence[int], page: int
) -> list[Row]:
    """The rows of one page of a view: only these are read from the cache."""
    start = (page - 1) * PAGE_SIZE
    return indexed_rows(diagnosis).take(positions[start : start + PAGE_SIZE])


def finding_groups(
    diagnosis: Diagnosis | StoredDiagnosis,
    positions: Sequence[int],
    filters: Filters,
    page: int,
    titles: dict[str, str],
) -> list[dict[str, Any]]:
    """Findings grouped by rule, each with a link to the row that shows it.

    A finding on the page being shown links to its anchor; one on another page
    links to that page (of this view, or of the whole annotated timeline when
    the filters hide its row) and the anchor.
    """
    groups = group_findings(diagnosis.findings, GROUP_LIMIT)
    wanted = {finding["row"] for _, _, items in groups for finding in items}
    # A row's place in the whole annotated timeline is its position.
    everywhere = indexed_rows(diagnosis).row_index.positions_of(wanted) if wanted else {}
    keys = {position: key for key, position in everywhere.items()}
    here = {keys[p]: i for i, p in enumerate(positions) if p in keys} if keys else {}
    result = []
    for rule, count, items in groups:
        entries = []
        for finding in items:
            key = finding["row"]
            if key in here:
                target = here[key] // PAGE_SIZE + 1
                query = None if target == page else filters.query(page=target)
            else:
                query = Filters().query(page=everywhere.get(key, 0) // PAGE_SIZE + 1)
            href = f"?{urlencode(query)}#{key}" if query is not None else f"#{key}"
            entries.append({"finding": finding, "href": href})
        result.append(
            {
                "rule": rule,
                "title": titles.get(rule, ""),
                "count": count,
                "entries": entries,
                "more": count - len(items),
            }
        )
    return result


def original_page(row: Row) -> int:
    """The page of the original view that shows this row (it is sorted by input index)."""
    return (row["input_index"] or 0) // PAGE_SIZE + 1


def example_rows(messages: Any) -> list[dict[str, Any]]:
    """A rule's example messages as rows of the small timeline on its page."""
    rows = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        metadata = message.get("metadata") or {}
        calls = found if isinstance(found := metadata.get("tool_calls"), list) else []
        is_tool = message.get("role") == "tool"
        rows.append(
            {
                "role": message.get("role", ""),
                "text": example_text(message.get("content")),
                "calls": [
                    {
                        "id": call_id(call),
                        "name": call.get("name") or "",
                        "arguments": example_text(call.get("arguments")),
                    }
                    for call in calls
                    if isinstance(call, dict)
                ],
                "result_id": (metadata.get("tool_call_id") or metadata.get("id"))
                if is_tool
                else None,
                "healed": bool(metadata.get("healed")),
                "note": metadata.get("note"),
            }
        )
    return rows


def example_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, dict) for part in value):
        return "\n".join(
            str(part.get("text", "")) if part.get("type") == "text" else f"[{part.get('type')}]"
            for part in value
        )
    return orjson.dumps(value).decode()


# --- the map of the session ---------------------------------------------------

# The map draws at most this many marks; a longer view shares them out evenly.
MAP_MARKS = 300
# Rows looked at to colour a mark that stands for many: enough to find the usual role.
MAP_SAMPLES = 12


@dataclass(frozen=True, slots=True)
class Mark:
    role: str
    key: str  # the first row it stands for
    page: int
    rows: int  # how many rows it stands for
    finding: str  # the rules found in them, "" for none
    finding_key: str  # the first row with a finding, for the finding's own link


@dataclass(frozen=True, slots=True)
class SessionMap:
    marks: list[Mark]
    window: tuple[int, int]  # the marks the page being shown covers, [start, stop)
    per_page: float  # marks one page of rows covers, for pages that load as you scroll
    total: int


def session_map(
    diagnosis: Diagnosis | StoredDiagnosis, positions: Sequence[int], filters: Filters, page: int
) -> SessionMap | None:
    """One mark per row of the view (or per run of rows, past ``MAP_MARKS``), by role.

    Reads only the row index: a few thousand list lookups whatever the length.
    """
    total = len(positions)
    if total == 0:
        return None
    index = indexed_rows(diagnosis).row_index
    roles = index.original_roles if filters.view == "original" else index.roles
    names = index.role_names
    count = min(total, MAP_MARKS)
    bounds = [total * b // count for b in range(count + 1)]
    # Where each finding row stands in this view: in the annotated view with every
    # row shown (the usual case) a row's place is its position.
    if total == len(index) and positions[0] == 0 and positions[-1] == total - 1:
        at = {p: p for p in index.findings}
    else:
        wanted = index.findings
        at = {p: i for i, p in enumerate(positions) if p in wanted} if wanted else {}
    found: dict[int, tuple[list[str], int]] = {}
    for position, place in sorted(at.items(), key=lambda item: item[1]):
        mark = _mark_of(place, bounds)
        rules_here, first = found.setdefault(mark, ([], position))
        rules_here.extend(rule for rule in index.findings[position] if rule not in rules_here)
    marks = []
    for b in range(count):
        start, stop = bounds[b], bounds[b + 1]
        step = max(1, (stop - start) // MAP_SAMPLES)
        sample = [roles[p] for p in positions[start:stop:step]]
        role = max(set(sample), key=sample.count)
        rules, first = found.get(b, ([], -1))
        marks.append(
            Mark(
                role=names[role] if role is not None and role < len(names) else "",
                key=index.key(positions[start]),
                page=start // PAGE_SIZE + 1,
                rows=stop - start,
                finding=" ".join(rules),
                finding_key=index.key(first) if first >= 0 else "",
            )
        )
    first_row = (page - 1) * PAGE_SIZE
    window = (
        _mark_of(first_row, bounds),
        _mark_of(min(total, first_row + PAGE_SIZE) - 1, bounds) + 1,
    )
    return SessionMap(marks, window, count * PAGE_SIZE / total, total)


def _mark_of(view_index: int, bounds: list[int]) -> int:
    """The mark whose rows include this place in the view (``bounds`` are the marks' starts)."""
    return bisect.bisect_right(bounds, view_index) - 1


# --- search ---------------------------------------------------------------

# The most hits a search returns by row; the count is of every row that matches.
SEARCH_HITS = 2000


def row_matches(row: Row, needle: str) -> bool:
    """Does the row's text, thinking, calls (names and arguments) or result name hold ``needle``?

    ``needle`` is casefolded already; so is what it is compared with.
    """
    if needle in (row.get("text") or "").casefold():
        return True
    for part in row.get("parts") or ():
        if needle in (part.get("text") or "").casefold():
            return True
    for call in row.get("calls") or ():
        if needle in (call.get("name") or "").casefold():
            return True
        if needle in (call.get("arguments") or "").casefold():
            return True
    result = row.get("result")
    return result is not None and needle in str(result.get("name") or "").casefold()


def row_number(row: Mapping[str, Any]) -> int:
    """The number every page, export and the CLI give a row: its message in the file, from
    1 (the timeline's ``#12``, the findings' "message 12"); 0 for a row the repair
    inserted, which has none (the timeline's "new")."""
    index = row.get("input_index")
    return index + 1 if isinstance(index, int) else 0


def finding_place(finding: Mapping[str, Any]) -> str:
    """Where a finding is, its row numbered as ``row_number`` numbers it: "message 3, line 7",
    "inserted row" (the timeline's findings, the CLI report, the Markdown export)."""
    message = finding.get("message")
    where = [f"message {message + 1}" if isinstance(message, int) else "inserted row"]
    if finding.get("line"):
        where.append(f"line {finding['line']}")
    return ", ".join(where)


def search(
    diagnosis: Diagnosis | StoredDiagnosis, positions: Sequence[int], query: str
) -> tuple[int, list[dict[str, Any]]]:
    """Every row of this view that holds ``query`` (any case): how many, and the first of them
    with the page of the view that shows each and the row's number (``row_number``).

    Reads every row, a chunk at a time: the page loads 200 rows, the search
    looks at all of them.
    """
    needle = query.casefold()
    rows = indexed_rows(diagnosis)
    place = {position: i for i, position in enumerate(positions)}
    hits: list[tuple[int, str, int]] = []
    for position, row in enumerate(rows):
        at = place.get(position)
        if at is not None and row_matches(row, needle):
            hits.append((at, row["key"], row_number(row)))
    hits.sort()
    shown = [
        {"key": key, "page": at // PAGE_SIZE + 1, "message": number}
        for at, key, number in hits[:SEARCH_HITS]
    ]
    return len(hits), shown
