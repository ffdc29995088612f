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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from inspector.diagnosis import TEXT_LIMIT
from inspector.redact import find_secrets, mask
from inspector.web.cachefile import Clipped

if TYPE_CHECKING:
    from inspector.diagnosis import Diagnosis

Row = dict[str, Any]

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
KNOWN_CAUSES = frozenset({"user_stop", "max_tokens", "stream_ended", "turn_aborted", "api_error"})
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
SECRET_NAME = re.compile(r"(?i)(?:key|token|secret|password|passwd)$")
QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
# The most a shared page shows of a provider's issues and of the unreadable
# lines (templates/inspector/timeline.html, its chip and problems list).
SHOWN_ISSUES = 20
SHOWN_PROBLEMS = 200
# The tail ``_clip`` in inspector.diagnosis writes after TEXT_LIMIT characters.
CLIPPED_REST = re.compile(r"\n… \(([\d,]+) more characters[^\n]*\)\Z")


# --- masking (both modes) ---------------------------------------------------


def mask_deep(value: Any) -> Any:
    """A copy of ``value`` with every string in it (keys too) masked."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask_deep(key): _mask_item(key, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [mask_deep(item) for item in value]
    return value


def _mask_item(key: Any, value: Any) -> Any:
    # {"api_key": "9f8Q..."}: decoded, the value alone is just a random string;
    # written out as an assignment it is what the detector calls a secret.
    if isinstance(key, str) and isinstance(value, str) and SECRET_NAME.search(key):
        assignment = f"{key}={value}"
        masked = mask(assignment)
        if masked.startswith(f"{key}="):
            return masked[len(key) + 1 :]
    return mask_deep(value)


def full_row(row: Row) -> Row:
    """The row as the owner sees it, secrets masked."""
    shown = dict(row)
    shown["text"] = _without_cut_word(row.get("text") or "")
    shown["parts"] = [
        {**part, "text": _without_cut_word(part.get("text") or "")} for part in row.get("parts", [])
    ]
    return mask_deep(shown)


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
    that was not JSON to begin with is masked as text.
    """
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError:
        return b"".join(_mask_line(line) for line in data.splitlines(keepends=True))
    option = orjson.OPT_INDENT_2 if b"\n" in data.strip() else 0
    return _dump(document, data, option)


def _mask_line(line: bytes) -> bytes:
    body = line.rstrip(b"\r\n")
    ending = line[len(body) :]
    if not body.strip():
        return line
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return mask(body.decode("utf-8", "replace")).encode() + ending
    return _dump(value, body, 0) + ending


def _dump(value: Any, original: bytes, option: int) -> bytes:
    try:
        return orjson.dumps(mask_deep(value), option=option)
    except RecursionError:
        # Nesting too deep to walk: mask the text itself. Every pattern but an
        # unterminated key block stops short of a quote, so it stays JSON.
        return mask(original.decode("utf-8", "replace")).encode()


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


def redact_row(row: Row) -> Row:
    """Structure, ids, tool names and findings of ``row``; every text as its length."""
    redacted = {name: row.get(name) for name in ROW_STRUCTURE}
    redacted["findings"] = list(row.get("findings") or [])
    redacted["lines"] = list(row.get("lines") or [])
    redacted["text"] = length_of(row.get("text"))
    redacted["parts"] = [_redact_part(part) for part in row.get("parts") or []]
    redacted["calls"] = [
        {
            "id": call.get("id"),
            "new_id": call.get("new_id"),
            "name": call.get("name"),
            "arguments": length_of(call.get("arguments")),
            "removed": bool(call.get("removed")),
            "cause": call.get("cause") if call.get("cause") in KNOWN_CAUSES else None,
        }
        for call in row.get("calls") or []
    ]
    result = row.get("result")
    redacted["result"] = (
        {
            "id": result.get("id"),
            "new_id": result.get("new_id"),
            "name": result.get("name"),
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


def shared_rows(rows: Iterable[Row], redacted: bool) -> list[Row]:
    """The rows a shared page may show, in either mode."""
    return [redact_row(row) if redacted else full_row(row) for row in rows]


def without_quoted(text: str) -> str:
    """A reader's reason with the values it quotes left out (they come from the file)."""
    return QUOTED.sub("'…'", text)


def shared_summary(diagnosis: Diagnosis, redacted: bool) -> dict[str, Any]:
    """Everything but the rows that a shared page's header and sidebar show.

    Of a long list (a provider's issues, the unreadable lines) only what the
    page shows is masked and kept, with the list's length.
    """
    meta = diagnosis.meta or {}
    branches = found if isinstance(found := meta.get("branches"), list) else []
    providers = {
        name: {when: checks.get(when, []) for when in ("before", "after")}
        for name, checks in diagnosis.providers.items()
    }
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
                            "path": str(issue.get("path") or ""),
                            "text": str(issue.get("text") or ""),
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
                {name: branch.get(name) for name in BRANCH_STRUCTURE}
                for branch in branches
                if isinstance(branch, dict)
            ],
            "session_id": str(meta.get("session_id") or ""),
        }
    )
    # Wrapped after masking, so each holds masked items only.
    for shown, checks in zip(summary["providers"].values(), providers.values(), strict=True):
        for when in shown:
            shown[when] = Clipped(shown[when], len(checks[when]))
    summary["problems"] = Clipped(summary["problems"], len(diagnosis.problems))
    return summary


def _problem(problem: dict[str, Any], redacted: bool) -> dict[str, Any]:
    reason = str(problem.get("reason") or "")
    return {
        "line": problem.get("line"),
        "kind": str(problem.get("kind") or ""),
        "reason": without_quoted(reason) if redacted else reason,
    }


def shared_groups(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The findings list (``finding_groups``), each finding cut to what it says."""
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


def redacted_report(diagnosis: Diagnosis) -> dict[str, Any]:
    """The report of a redacted link: findings and structure, contents as lengths."""
    meta = diagnosis.meta or {}
    report = {
        "shared": "redacted",
        "explanation": (
            "A redacted share: message text, tool arguments, tool results and thinking are "
            "replaced by their length; ids, tool names, findings and verdicts are kept."
        ),
        "format": diagnosis.format,
        "engine_version": diagnosis.engine_version,
        "messages": diagnosis.message_count,
        "repaired_messages": diagnosis.repaired_count,
        "needs_repair": diagnosis.needs_repair,
        "findings": [
            {name: finding.get(name) for name in ("rule", "message", "line", "text", "ids")}
            for finding in diagnosis.findings
        ],
        "counts": dict(diagnosis.counts),
        "providers": {
            name: {when: [issue["text"] for issue in checks[when]] for when in ("before", "after")}
            for name, checks in diagnosis.providers.items()
        },
        "problems": [_problem(problem, redacted=True) for problem in diagnosis.problems],
        "interrupted": [
            {
                "id": str(call.get("tool_call_id") or call.get("id") or ""),
                "name": str(call.get("name") or ""),
                "arguments": length_of(call.get("arguments")),
            }
            for call in diagnosis.interrupted
            if isinstance(call, dict)
        ],
        "meta": {name: meta[name] for name in META_STRUCTURE if name in meta},
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


def count_secrets(diagnosis: Diagnosis) -> SecretCount:
    """How many credential-shaped strings the timeline's rows hold, by kind.

    Counts what the diagnosis holds: each row's text up to the diagnosis's
    clip limit. Shared downloads mask the whole file regardless.
    """
    kinds: Counter[str] = Counter()
    rows: list[str] = []
    for row in diagnosis.rows:  # the annotated timeline, a chunk of the cache at a time
        found = [match.kind for text in _row_texts(row) for match in find_secrets(text)]
        if found:
            kinds.update(found)
            if len(rows) < ROW_LINKS:
                rows.append(row["key"])
    return SecretCount(sum(kinds.values()), dict(kinds.most_common()), rows)


def _row_texts(row: Row) -> Iterator[str]:
    yield row.get("text") or ""
    for part in row.get("parts") or []:
        if part.get("type") != "text":  # text parts are in the row's text already
            yield part.get("text") or ""
            yield part.get("label") or ""
    for call in row.get("calls") or []:
        yield call.get("name") or ""
        yield call.get("arguments") or ""
