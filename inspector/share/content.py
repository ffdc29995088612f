"""What of a transcript a share link shows. No Django.

Two modes. **Full** shows everything, with every credential-shaped string
masked (``inspector.redact``). **Redacted** keeps the structure and every
finding (roles, ids, tool names, spans, rule badges, provider verdicts) and
replaces message text, tool arguments, tool results and thinking with their
length. Both are built here, from the diagnosis, as new data: the templates
of a shared page never receive a diagnosis row, so content they are not
meant to show cannot reach them. The rows are shared with the in-process
diagnosis cache, so nothing here changes them.

Whitelists, not blacklists: a field added to rows or metadata later stays
out of redacted pages until someone decides it is structure.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import orjson

from inspector.diagnosis import TEXT_LIMIT, report_head
from inspector.diagnosis.stored import AT_HAND, Clipped
from inspector.engine.canonical import call_id_text
from inspector.engine.causes import CAUSES
from inspector.redact import SecretMatch, find_secrets, mask_found

if TYPE_CHECKING:
    from inspector.diagnosis import DiagnosisView

# Rows and findings are read here (``inspector.diagnosis.model``) and redacted into new dicts.
Row = dict[str, Any]
RowIn = Mapping[str, Any]

# Row fields that describe structure, never content.
ROW_STRUCTURE = (
    "key",
    "input_index",
    "output_index",
    "role",
    "original_role",
    "state",
    "healed",
    "moved_from",
    "span",
    "span_pos",
    "findings",
    "lines",
    "in_original",
    "in_repaired",
)
# Values the engine and the readers write themselves; anything else is dropped.
KNOWN_NOTES = frozenset({"interruption", "orphan_result"})
KNOWN_OUTCOMES = frozenset({"unknown", "not_started", "interrupted"})
KNOWN_CAUSES = frozenset(CAUSES)
THINKING_KINDS = frozenset({"thinking", "reasoning", "redacted_thinking"})
PART_TYPE = re.compile(r"[a-z][a-z0-9_]{0,39}")
# Metadata of a transcript that is structure (ids, counts, flags, branches).
# Left out on purpose: cwd (a path on someone's machine), response_error
# (a provider's text, which may quote the request), originator.
META_STRUCTURE = (
    "session_id",
    "version",
    "sidechain",
    "parent_session",
    "agent_id",
    "sidechain_records",
    "branches",
    "forks",
    "duplicates",
    "cycles",
    "subagents",
    "pending_calls",
    "compactions",
    "stop_reason",
    "finish_reason",
    "response_status",
    "response_complete",
    "response_cut",
    "stream_complete",
    "conversation",
    "conversations",
    "envelope",
    "previous_response_id",
)
BRANCH_STRUCTURE = ("line", "leaf", "length", "last_timestamp", "fork", "active")
SECRET_NAME = re.compile(r"(?i)(?:key|token|secret|password|passwd|pwd|passphrase|credentials?)s?$")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
# The most a shared page shows of a provider's issues and of the unreadable
# lines (templates/inspector/timeline.html, its chip and problems list).
SHOWN_ISSUES = 20
SHOWN_PROBLEMS = 200
# The tail ``_clip`` in inspector.diagnosis writes after TEXT_LIMIT characters.
CLIPPED_REST = re.compile(r"\n… \(([\d,]+) more characters[^\n]*\)\Z")


# --- masking (both modes) ---------------------------------------------------


def mask_deep(value: Any, found: list[SecretMatch] | None = None) -> Any:
    """A copy of ``value`` with every string in it (keys too) masked.

    Each span masked is appended to ``found``: what the owner is told is
    counted by this same walk, so the count and the masks agree.
    """
    if isinstance(value, str):
        matches = find_secrets(value)
        if found is not None:
            found.extend(matches)
        return mask_found(value, matches)
    if isinstance(value, dict):
        return {mask_deep(key, found): _mask_item(key, item, found) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_deep(item, found) for item in value]
    return value


def _mask_item(key: Any, value: Any, found: list[SecretMatch] | None) -> Any:
    # {"api_key": "9f8Q..."}: decoded, the value alone is just a random string;
    # written out as a page shows it, it is what the detector calls a secret.
    if isinstance(key, str) and isinstance(value, str) and SECRET_NAME.search(key):
        prefix = f'"{key}": "'
        matches = [
            SecretMatch(m.kind, max(m.start - len(prefix), 0), min(m.end - len(prefix), len(value)))
            for m in find_secrets(f'{prefix}{value}"')
            if m.end > len(prefix) and m.start < len(prefix) + len(value)
        ]
        if found is not None:
            found.extend(matches)
        return mask_found(value, matches)
    return mask_deep(value, found)


def shown_row(row: RowIn) -> Row:
    """The row's fields as a full share shows them, before masking."""
    shown = dict(row)
    shown["text"] = _without_cut_word(row.get("text") or "")
    # A text part is shown as part of the row's text, never on its own.
    shown["parts"] = [
        {
            **part,
            "text": "" if part.get("type") == "text" else _without_cut_word(part.get("text") or ""),
        }
        for part in row.get("parts", [])
    ]
    return shown


def full_row(row: RowIn) -> Row:
    """The row as the owner sees it, secrets masked."""
    return mask_deep(shown_row(row))


def _without_cut_word(text: str) -> str:
    # A clipped text ends mid-string: a key cut at the limit may be too short
    # to be recognised, so the word the clip cut through is left out too.
    if len(text) <= TEXT_LIMIT:
        return text
    head, rest = text[:TEXT_LIMIT], text[TEXT_LIMIT:]
    cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
    return head[: max(cut, 0)] + " …" + rest


def mask_file(data: bytes) -> bytes:
    """``data`` with secrets masked inside its JSON string values.

    A JSON document stays a JSON document and JSON lines stay one record a
    line: strings are masked after decoding and encoded again, so no escape
    is cut in half and the file loads where the unmasked one did. A line
    that was not JSON to begin with (a truncated last line) has each of its
    strings masked the same way, and then what is left of it as text. Only
    a document or line in which the detector finds something, as written or
    with its escapes undone, is decoded at all.
    """
    if not find_secrets(data.decode("utf-8", "replace")):
        return data
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return b"".join(_mask_line(line) for line in data.splitlines(keepends=True))
    option = orjson.OPT_INDENT_2 if b"\n" in data.strip() else 0
    return _dump(document, data, option)


def _mask_line(line: bytes) -> bytes:
    body = line.rstrip(b"\r\n")
    ending = line[len(body) :]
    text = body.decode("utf-8", "replace")
    if not body.strip() or not find_secrets(text):
        return line
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return mask_text(JSON_STRING.sub(_mask_string, text)).encode() + ending
    return _dump(value, body, 0) + ending


# A JSON string, perhaps cut off by the end of a truncated line.
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.S)


def _mask_string(literal: re.Match[str]) -> str:
    written = literal.group()
    closed = written.endswith('"') and len(written) > 1
    body = written[1:-1] if closed else written[1:].removesuffix("\\")
    try:
        value = orjson.loads(f'"{body}"')
    except orjson.JSONDecodeError:
        return written
    masked = mask_deep(value)
    if masked == value:
        return written
    encoded = orjson.dumps(masked).decode()
    return encoded if closed else encoded[:-1]


def mask_text(text: str) -> str:
    return mask_found(text, find_secrets(text))


def _dump(value: Any, original: bytes, option: int) -> bytes:
    try:
        return orjson.dumps(mask_deep(value), option=option)
    except (RecursionError, orjson.JSONEncodeError):
        # Nesting too deep to walk or to write: mask the text itself. Every
        # rule but an unterminated key block stops short of a quote, so it
        # stays JSON.
        return mask_text(original.decode("utf-8", "replace")).encode()


# --- redaction --------------------------------------------------------------


def length_of(text: Any) -> str:
    """What a redacted page shows instead of a text: how long it was."""
    if text is None or text == "":
        return ""
    if not isinstance(text, str):
        text = orjson.dumps(text, default=str).decode()
    length = len(text)
    if length > TEXT_LIMIT:
        # Clipped in the diagnosis: the tail says how much was left out.
        rest = CLIPPED_REST.search(text)
        if rest is not None:
            length = TEXT_LIMIT + int(rest.group(1).replace(",", ""))
    return f"[redacted: {length:,} character{'s' if length != 1 else ''}]"


# What a redacted page shows of an id, a tool name, a session id or a version:
# the value when it looks like one (letters, digits and a few separators, no
# spaces), and otherwise its length, like content. A file can put anything in
# those fields, a secret or a whole paragraph included.
IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@+\-]{0,127}")
# The words of ``inspector.diagnosis._finding_text`` around a tool's name.
TOOL_IN_FINDING = re.compile(r"(?<= to )(?P<name>.+?)(?= never got a result| was cut off)")


def as_identifier(value: Any) -> Any:
    """``value`` if it looks like an identifier, else what a redacted page shows of content."""
    if value is None or value == "" or isinstance(value, bool | int | float):
        return value
    text = str(value)
    return text if IDENTIFIER.fullmatch(text) else length_of(text)


def identifiers_only(value: Any) -> Any:
    """``value`` with every string in it passed through ``as_identifier``."""
    if isinstance(value, str):
        return as_identifier(value)
    if isinstance(value, dict):
        return {key: identifiers_only(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [identifiers_only(item) for item in value]
    return value


def redacted_finding_text(finding: Mapping[str, Any]) -> str:
    """A finding's sentence with the ids and tool name it quotes kept only if they are ids."""
    return without_values(str(finding.get("text") or ""), quoted_values([finding]))


def quoted_values(findings: Iterable[Mapping[str, Any]]) -> list[str]:
    """The ids and tool names these findings quote that are no identifiers, longest first."""
    values: set[str] = set()
    for finding in findings:
        ids = [str(value) for value in finding.get("ids") or [] if value]
        # An id made from one that is no identifier (ID-3's rewrite) carries its words.
        wordy = any(as_identifier(value) != value for value in ids)
        values.update(value for value in ids if wordy or as_identifier(value) != value)
        text = str(finding.get("text") or "")
        for value in ids:  # the tool's name is read after the ids, which may hold " to "
            text = text.replace(value, "")
        name = TOOL_IN_FINDING.search(text)
        if name is not None and as_identifier(name.group("name")) != name.group("name"):
            values.add(name.group("name"))
    return sorted(values, key=len, reverse=True)


def without_values(text: str, values: list[str]) -> str:
    for value in values:
        text = text.replace(value, length_of(value))
    return text


def redact_row(row: RowIn) -> Row:
    """Structure, ids, tool names and findings of ``row``; every text as its length."""
    redacted = {name: row.get(name) for name in ROW_STRUCTURE}
    redacted["findings"] = list(row.get("findings") or [])
    redacted["lines"] = list(row.get("lines") or [])
    redacted["text"] = length_of(row.get("text"))
    redacted["parts"] = [_redact_part(part) for part in row.get("parts") or []]
    redacted["calls"] = [
        {
            "id": as_identifier(call.get("id")),
            "new_id": as_identifier(call.get("new_id")),
            "name": as_identifier(call.get("name")),
            "arguments": length_of(call.get("arguments")),
            "removed": bool(call.get("removed")),
            "cause": call.get("cause") if call.get("cause") in KNOWN_CAUSES else None,
        }
        for call in row.get("calls") or []
    ]
    result = row.get("result")
    redacted["result"] = (
        {
            "id": as_identifier(result.get("id")),
            "new_id": as_identifier(result.get("new_id")),
            "name": as_identifier(result.get("name")),
            "is_error": bool(result.get("is_error")),
        }
        if result
        else None
    )
    redacted["note"] = row.get("note") if row.get("note") in KNOWN_NOTES else None
    outcome = row.get("outcome")
    redacted["outcome"] = outcome if outcome in KNOWN_OUTCOMES else None
    redacted["cause"] = row.get("cause") if row.get("cause") in KNOWN_CAUSES else None
    return mask_deep(redacted)


def _redact_part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind == "thinking":
        label = part.get("label") if part.get("label") in THINKING_KINDS else "thinking"
    elif kind == "image":
        label = "image"  # its label names the URL, which is content
    elif kind == "text":
        label = ""
    else:
        label = part.get("label") if PART_TYPE.fullmatch(str(part.get("label"))) else "part"
        kind = "other"
    return {"type": kind, "label": label, "text": length_of(part.get("text"))}


def shared_rows(rows: Iterable[RowIn], redacted: bool) -> list[Row]:
    """The rows a shared page may show, in either mode."""
    return [redact_row(row) if redacted else full_row(row) for row in rows]


def without_quoted(text: str) -> str:
    """A reader's reason with the values it quotes left out (they come from the file)."""
    return QUOTED.sub("'…'", text)


def shared_summary(diagnosis: DiagnosisView, redacted: bool) -> dict[str, Any]:
    """Everything but the rows that a shared page's header and sidebar show.

    Of a long list (a provider's issues, the unreadable lines) only what the
    page shows is masked and kept, with the list's length.
    """
    meta = diagnosis.meta or {}
    branches = found if isinstance(found := meta.get("branches"), list) else []
    providers: dict[str, dict[str, Sequence[Any]]] = {
        name: {when: cast(Sequence[Any], checks.get(when, [])) for when in ("before", "after")}
        for name, checks in diagnosis.providers.items()
    }
    # A provider's error text quotes ids and names: those of the first
    # findings (the calls a provider faults) are kept only if they are ids.
    quoted = quoted_values(diagnosis.findings[:AT_HAND]) if redacted else []
    summary = mask_deep(
        {
            "format": diagnosis.format,
            "message_count": diagnosis.message_count,
            "repaired_count": diagnosis.repaired_count,
            "needs_repair": diagnosis.needs_repair,
            "finding_count": len(diagnosis.findings),
            "providers": {
                name: {
                    when: [
                        {
                            "path": without_values(str(issue.get("path") or ""), quoted),
                            "text": without_values(str(issue.get("text") or ""), quoted),
                        }
                        for issue in issues[:SHOWN_ISSUES]
                    ]
                    for when, issues in checks.items()
                }
                for name, checks in providers.items()
            },
            "problems": [
                _problem(problem, redacted) for problem in diagnosis.problems[:SHOWN_PROBLEMS]
            ],
            "branches": [
                {
                    name: as_identifier(branch.get(name)) if redacted else branch.get(name)
                    for name in BRANCH_STRUCTURE
                }
                for branch in branches
                if isinstance(branch, dict)
            ],
            "session_id": (as_identifier if redacted else str)(meta.get("session_id") or ""),
        }
    )
    # Wrapped after masking, so each holds masked items only.
    for shown, checks in zip(summary["providers"].values(), providers.values(), strict=True):
        for when in shown:
            shown[when] = Clipped(shown[when], len(checks[when]))
    summary["problems"] = Clipped(summary["problems"], len(diagnosis.problems))
    return summary


def _problem(problem: Mapping[str, Any], redacted: bool) -> dict[str, Any]:
    reason = str(problem.get("reason") or "")
    return {
        "line": problem.get("line"),
        "kind": str(problem.get("kind") or ""),
        "reason": without_quoted(reason) if redacted else reason,
    }


def shared_groups(groups: list[dict[str, Any]], redacted: bool = False) -> list[dict[str, Any]]:
    """The findings list (``finding_groups``), each finding cut to what it says."""
    if redacted:
        groups = [
            {
                **group,
                "entries": [
                    {**entry, "finding": _redacted_finding(entry["finding"])}
                    for entry in group["entries"]
                ],
            }
            for group in groups
        ]
    return [
        {
            **{name: group[name] for name in ("rule", "title", "count", "more")},
            "entries": [
                {
                    "href": entry["href"],
                    "finding": mask_deep(
                        {
                            name: entry["finding"].get(name)
                            for name in ("rule", "row", "text", "ids", "message", "line")
                        }
                    ),
                }
                for entry in group["entries"]
            ],
        }
        for group in groups
    ]


def _redacted_finding(finding: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **finding,
        "text": redacted_finding_text(finding),
        "ids": _shown_ids(finding.get("ids") or []),
    }


def _shown_ids(ids: list[Any]) -> list[Any]:
    """A finding's ids as a redacted share shows them: all as lengths if any is wordy."""
    if any(as_identifier(value) != value for value in ids if value):
        return [f"[redacted: {len(str(value)):,} characters]" if value else value for value in ids]
    return [as_identifier(value) for value in ids]


def redacted_report(diagnosis: DiagnosisView) -> dict[str, Any]:
    """The report of a redacted link: findings and structure, contents as lengths."""
    meta = diagnosis.meta or {}
    quoted = quoted_values(diagnosis.findings)
    report = {
        "shared": "redacted",
        "explanation": (
            "A redacted share: message text, tool arguments, tool results and thinking are "
            "replaced by their length; ids, tool names, findings and verdicts are kept."
        ),
        **report_head(diagnosis),
        "findings": [
            {
                name: _redacted_finding(finding).get(name)
                for name in ("rule", "message", "line", "text", "ids")
            }
            for finding in diagnosis.findings
        ],
        "counts": dict(diagnosis.counts),
        "providers": {
            name: {
                when: [without_values(str(issue["text"]), quoted) for issue in checks[when]]
                for when in ("before", "after")
            }
            for name, checks in diagnosis.providers.items()
        },
        "problems": [_problem(problem, redacted=True) for problem in diagnosis.problems],
        "interrupted": [
            {
                "id": as_identifier(call_id_text(call)),
                "name": as_identifier(str(call.get("name") or "")),
                "arguments": length_of(call.get("arguments")),
            }
            for call in diagnosis.interrupted
            if isinstance(call, dict)
        ],
        "meta": {name: identifiers_only(meta[name]) for name in META_STRUCTURE if name in meta},
        # The whole annotated timeline: every row, in order.
        "timeline": [redact_row(row) for row in diagnosis.rows],
    }
    return mask_deep(report)


# --- counting, for the owner's timeline --------------------------------------


@dataclass(slots=True)
class SecretCount:
    total: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    rows: list[str] = field(default_factory=list)  # row keys, for links; the first few

    def __bool__(self) -> bool:
        return self.total > 0


ROW_LINKS = 20


def count_secrets(diagnosis: DiagnosisView, file_name: str = "") -> SecretCount:
    """How many credential-shaped strings a full share masks in the timeline, by kind.

    Counted by the walk that masks them (``mask_deep`` of each row as shown),
    over every row, and in the file name. Shared downloads mask the whole
    file regardless.
    """
    kinds: Counter[str] = Counter()
    rows: list[str] = []
    for row in diagnosis.rows:  # the annotated timeline, a chunk of the cache at a time
        found: list[SecretMatch] = []
        mask_deep(shown_row(row), found)
        if found:
            kinds.update(match.kind for match in found)
            if len(rows) < ROW_LINKS:
                rows.append(row["key"])
    kinds.update(match.kind for match in find_secrets(file_name))
    return SecretCount(sum(kinds.values()), dict(kinds.most_common()), rows)
