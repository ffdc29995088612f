"""Choosing and paging the timeline's rows, and the small timelines of the rule pages.

Rows are shared with the in-process diagnosis cache: nothing here changes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import orjson

if TYPE_CHECKING:
    from inspector.diagnosis import Diagnosis

PAGE_SIZE = 200
# A findings group lists this many entries; the rest are one filter away.
GROUP_LIMIT = 25

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Filters:
    view: str = "annotated"
    rule: str = ""
    role: str = ""
    around: int | None = None  # rows of context around each finding; None: every row
    branch: str = ""  # another branch of a forked session, by its leaf uuid; "": the active one

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
            **changes,
        }
        if values["view"] == "annotated":
            values["view"] = None
        return {key: str(value) for key, value in values.items() if value not in (None, "")}


def select_rows(diagnosis: Diagnosis, filters: Filters) -> list[Row]:
    """The rows a filtered view shows, in the order it shows them."""
    if filters.view == "original":
        rows = sorted(
            (row for row in diagnosis.rows if row["in_original"]),
            key=lambda row: row["input_index"],
        )
    elif filters.view == "repaired":
        rows = [row for row in diagnosis.rows if row["in_repaired"]]
    else:
        rows = diagnosis.rows
    if filters.role:
        rows = [row for row in rows if _role(row, filters.view) == filters.role]
    if filters.around is None:
        if filters.rule:
            rows = [row for row in rows if filters.rule in row["findings"]]
        return rows
    hits = [i for i, row in enumerate(rows) if _matches(row, filters.rule)]
    keep: list[Row] = []
    last = -1
    for hit in hits:
        start = max(hit - filters.around, last + 1)
        stop = min(hit + filters.around, len(rows) - 1)
        keep.extend(rows[start : stop + 1])
        last = max(last, stop)
    return keep


def page_count(rows: list[Row]) -> int:
    return max(1, -(-len(rows) // PAGE_SIZE))


def page_rows(rows: list[Row], page: int) -> list[Row]:
    start = (page - 1) * PAGE_SIZE
    return rows[start : start + PAGE_SIZE]


def finding_groups(
    diagnosis: Diagnosis,
    rows: list[Row],
    filters: Filters,
    page: int,
    titles: dict[str, str],
) -> list[dict[str, Any]]:
    """Findings grouped by rule, each with a link to the row that shows it.

    A finding on the page being shown links to its anchor; one on another page
    links to that page (of this view, or of the whole annotated timeline when
    the filters hide its row) and the anchor.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    for finding in diagnosis.findings:
        rule = finding["rule"]
        counts[rule] = counts.get(rule, 0) + 1
        if counts[rule] <= GROUP_LIMIT:
            groups.setdefault(rule, []).append(finding)
    wanted = {f["row"] for items in groups.values() for f in items}
    here = _positions(rows, wanted)
    everywhere = _positions(diagnosis.rows, wanted - here.keys())
    result = []
    for rule, items in groups.items():
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
                "count": counts[rule],
                "entries": entries,
                "more": counts[rule] - len(items),
            }
        )
    return result


def original_page(row: Row) -> int:
    """The page of the original view that shows this row (it is sorted by input index)."""
    return (row["input_index"] or 0) // PAGE_SIZE + 1


def _positions(rows: list[Row], keys: set[str]) -> dict[str, int]:
    if not keys:
        return {}
    return {row["key"]: i for i, row in enumerate(rows) if row["key"] in keys}


def _role(row: Row, view: str) -> str:
    if view == "original":
        return row.get("original_role") or row["role"]
    return row["role"]


def _matches(row: Row, rule: str) -> bool:
    return rule in row["findings"] if rule else bool(row["findings"])


def example_rows(messages: Any) -> list[dict[str, Any]]:
    """A rule's example messages as rows of the small timeline on its page."""
    rows = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        metadata = message.get("metadata") or {}
        calls = metadata.get("tool_calls") if isinstance(metadata.get("tool_calls"), list) else []
        is_tool = message.get("role") == "tool"
        rows.append(
            {
                "role": message.get("role", ""),
                "text": example_text(message.get("content")),
                "calls": [
                    {
                        "id": call.get("tool_call_id") or call.get("id") or "",
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
