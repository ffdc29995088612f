"""Claude Code session files (``~/.claude/projects/<project>/<session>.jsonl``).

Claude Code appends one JSON record a line. ``user`` and ``assistant``
records carry an Anthropic ``message``; every other type (``summary``,
``system``, ``file-history-snapshot``, ``attachment``, ``progress``,
``queue-operation``, ...) is bookkeeping that is never sent to a model. Records
link to their parent by ``parentUuid``, which makes the file a tree: editing
an earlier prompt or resuming from an older point starts a new branch, and
the conversation the user is in is the branch that ends at the last leaf.

Reading (``parse``)
-------------------
- The active branch ends at the last leaf in file order (the last
  ``user``/``assistant`` record that no other names as parent; if that is
  only the result of one of several parallel calls and the conversation went
  on from the same reply, the last leaf below the reply) and follows
  ``parentUuid`` up, through bookkeeping records, and
  across ``compact_boundary`` records by their ``logicalParentUuid``. A record
  with no parent (or a parent that is not in the file) in the middle of a
  file continues the conversation above it: Claude Code starts a new chain
  that way after a plan-mode context reset and did so in older versions on
  resume, and hand-made files often have no links at all (a record that
  descends from the branch is no such conversation). A cycle ends the
  walk like a root does, so a bad file cannot hang the reader.
- Records are in chain order, not file order: Claude Code resumes by
  walking the chain from the leaf, so where a line stands does not matter
  to it, and 2.1.79 wrote a ``tool_result`` line before the line of its
  ``tool_use``. Each record comes after the one it follows; among records
  free to go next, the one written first goes first, so a file written in
  order reads in file order. A result of a reply split over several records
  comes after the reply's last record (unless the reply went on below it),
  and a run of results after a reply is in call order, so that the branch
  does not depend on the order the tools finished in. ``Parsed.sources``
  names each message's lines as they are in the file.
- Claude Code writes the results of parallel calls as leaves hanging off
  their ``tool_use`` records, beside the chain; they belong to the branch,
  whatever else their records carry (newer versions put what the user typed
  while the tools ran in a result's record, as a text block after it).
  So do the records of a reply split over several ``assistant`` records
  (same ``message.id``) that sit beside the chain. A record beside the chain
  stays in its parent's turn, before the chain's next reply or prompt,
  even when it was written after them.
- Other leaves are reported as branches in ``meta["branches"]`` and where
  they leave the active branch in ``meta["forks"]``.
- A record whose ``uuid`` was already seen (Claude Code repeats records on
  resume) is ignored; the first copy counts (``meta["duplicates"]``).
- ``isSidechain`` records in a main session file are a subagent's own
  conversation and not part of the main history. A file whose message
  records are all sidechain records (``agent-*.jsonl``,
  ``<session>/subagents/*.jsonl``) is a subagent's conversation: read as is,
  with ``meta["sidechain"] = True`` and ``meta["parent_session"]``.
- One API reply split over several ``assistant`` records sharing
  ``message.id`` becomes one canonical assistant message, placed where its
  first record stood: text and thinking blocks become content parts,
  ``tool_use`` blocks ``metadata.tool_calls``. Results of parallel calls
  that Claude Code wrote between those records follow it, in call order (the
  provider gets them in one user message, where their order is free).
- A ``tool_result`` block becomes a ``tool`` message; the rest of a user
  record becomes one ``user`` message after its results: in a record with
  results, after the whole run of results that follows the reply (the
  provider gets them in one user message, text after the results, so a
  steer typed while the tools ran is no result out of place).
- An ``isApiErrorMessage`` record (text Claude Code made up to show a failed
  request) stays an assistant message: it is what the user saw, and it ends
  the turn before it as it did in the session. ``causes`` marks it
  ``"api_error"``. The stop markers ``[Request interrupted by user]`` and
  ``[Request interrupted by user for tool use]`` mark the assistant message
  before them ``"user_stop"``; ``stop_reason: "max_tokens"`` marks
  ``"max_tokens"``.

The private metadata key ``_src``
---------------------------------
Each message ``parse`` makes carries ``metadata["_src"]``: its index in
``Parsed.messages``. ``serialise`` uses it to find the records and content
blocks a repaired message came from (the engine carries unknown keys through,
into renamed copies and orphan notes too). Messages without it are new.
It is private plumbing, not transcript content: nothing may compare or
validate on it, and canonical downloads and provider exports drop every
metadata key starting with ``_``.

Writing (``serialise``)
-----------------------
An unchanged transcript comes back byte for byte, except that a line
holding two records (a lost newline, LINE-1) is written as one line a
record, each record's bytes as they were. After repair, records that were
not touched keep their exact bytes; changed records are written
again with orjson. Synthetic results become ``user`` records holding one
``tool_result`` block (``is_error: true``), notes become ``user`` text
records; both get uuid5 ids from the session id (and the call id for a
result), so the same repair writes the same file. ``parentUuid`` is relinked
around inserted and dropped records so the active branch stays one chain:
the record after an insertion points at it. Records are placed and relinked
in chain order; in the file an original record stays on its line and a new
one goes after the last original record before it in the history, so it is
never written before its parent and untouched lines keep their order (Claude
Code reads the chain, not the line order; this reader's leaf is the last in
the file, and ``_keep_leaf_last`` keeps it so). Glued lines are written as one
record a line; lines that could not be read are kept as they were.
"""

from __future__ import annotations

import uuid
from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass, field
from heapq import heappop, heappush
from typing import Any

import orjson

from inspector.engine.canonical import arguments_object
from inspector.formats.anthropic import image_block, source_part
from inspector.formats.base import Facts, FormatError, Parsed, Problem, token_count
from inspector.formats.jsondoc import part_text, typed_parts
from inspector.formats.jsondoc import text_or_json as _text
from inspector.formats.jsonl import (
    JsonlFile,
    Record,
    head_records,
    iter_jsonl,
    release,
)
from inspector.formats.private import call_id
from inspector.formats.records import SRC, RecordWriter

NAME = "claude-code"
PROVIDER = "anthropic"
# What the upload form and the lists call this shape, and the extension its files take.
LABEL = "Claude Code session (JSONL)"
EXTENSION = "jsonl"
# Where it stands among the shapes when two sniffs are as sure (see ``base``).
ORDER = 60

STOP_MARKERS = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")

# Fixed, so the same repair of the same session always writes the same uuids.
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://transcript-inspector/claude-code")

# Record types only Claude Code writes; any of them in a sample is strong evidence.
_OWN_TYPES = frozenset(
    {"file-history-snapshot", "queue-operation", "progress", "summary", "attachment"}
)
_ENVELOPE_KEYS = ("parentUuid", "sessionId", "uuid", "leafUuid", "isSidechain")
_LINK_KEYS = ("parentUuid", "uuid", "leafUuid", "isSidechain", "agentId")
# Envelope fields a new record copies from its neighbour, in Claude Code's order.
_COPIED_KEYS = (
    "isSidechain",
    "userType",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "agentId",
    "slug",
)


# --------------------------------------------------------------------------- sniff


def sniff(head: bytes) -> float:
    """How sure we are that ``head`` starts a Claude Code session file."""
    stripped = head.lstrip()
    if stripped.startswith(b"{") and b'"loglines"' in stripped[:4096]:
        return 0.9
    score = 0.0
    for value in head_records(head, 20):
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            continue
        kind = value["type"]
        message = value.get("message")
        has_envelope = any(key in value for key in _ENVELOPE_KEYS)
        if kind in ("user", "assistant") and isinstance(message, dict) and "role" in message:
            score = max(score, 0.95 if has_envelope else 0.7)
        elif kind in _OWN_TYPES or (kind == "system" and has_envelope):
            score = max(score, 0.9)
        elif any(key in value for key in _LINK_KEYS):
            # A typed record with Claude Code's links but nothing else known:
            # maybe a record type newer than this reader, maybe not a session.
            score = max(score, 0.3)
        if score >= 0.95:
            break
    return score


# --------------------------------------------------------------------------- timeline facts


def timeline_facts(parsed: Parsed) -> list[Facts | None]:
    """Per message, from the records it was read from: the first one's ``timestamp``,
    the last one's ``message.model`` and ``message.usage`` (the ``base`` hook)."""
    state = parsed.state
    if not isinstance(state, _State):
        return []
    return list(state.facts)


def _facts(first: Any, last: Any) -> Facts | None:
    if not isinstance(first, dict) or not isinstance(last, dict):
        return None
    found = last.get("message")
    message: dict[str, Any] = found if isinstance(found, dict) else {}
    spent = message.get("usage")
    usage: dict[str, Any] = spent if isinstance(spent, dict) else {}
    tokens_in = None
    if usage:
        # What the model read: new input plus what came from (and went into) the cache.
        tokens_in = sum(
            value
            for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            if isinstance(value := usage.get(key), int)
        )
    out = usage.get("output_tokens")
    model = message.get("model")
    return {
        "at": first.get("timestamp") if isinstance(first.get("timestamp"), str) else None,
        "model": model if isinstance(model, str) and model != "<synthetic>" else None,
        "tokens_in": tokens_in,
        "tokens_out": out if isinstance(out, int) else None,
        "cache_read": token_count(usage.get("cache_read_input_tokens")),
        "cache_write": token_count(usage.get("cache_creation_input_tokens")),
    }


# --------------------------------------------------------------------------- parse


# Where (part of) a canonical message came from: ``(rec, blocks)``, a record
# and its blocks. ``blocks`` holds indices into the record's
# ``message.content`` list, or is ``None`` when the content is a plain string
# and the message is all of it. A plain tuple: a session has one per record,
# and a class's instances take four times as long to make.
_Piece = tuple[int, tuple[int, ...] | None]


@dataclass(slots=True)
class _State:
    """What ``serialise`` needs to write the file back."""

    data: bytes
    records: list[Record]
    loglines: dict[str, Any] | None
    final_newline: bool
    crlf: bool
    branch: list[int]
    pieces: list[list[_Piece]]
    parent_of: dict[int, int | None]
    echoes: dict[int, list[int]]  # record -> later copies of it (same uuid)
    candidates: set[int]  # records that could be in the history (any branch)
    session_id: str
    facts: list[Facts | None]  # ``timeline_facts``, read while the values were decoded


def parse(data: bytes, *, leaf: str | None = None) -> Parsed:
    """Read a session file; see the module docstring for what is read how.

    ``leaf`` (a message record's uuid, as ``meta["branches"]`` lists them)
    reads the branch that ends there instead of the active one, to look at a
    fork; write-back is only meant for the active branch, the one the tool resumes.
    """
    read, loglines, stream = _read(data)
    records = read.records
    problems: list[Problem] = []
    values: list[Any] = []
    known = False  # anything only Claude Code writes?
    msg_records: list[int] = []
    main_records: list[int] = []  # the message records not marked isSidechain
    # Each record's line and, for the tree, where its uuid first appears and
    # which record its link up names. Read as each record is decoded, while it
    # is still in the processor's cache: a long session's records lie all
    # over memory, and a pass over them afterwards takes half as long again.
    # (So the uuids are hashed here too, and the sidechain records are
    # counted here and the subagents that answered are noted.)
    lines: list[int] = []
    by_uuid: dict[str, int] = {}  # uuid -> the first record with it
    repeats: list[tuple[int, str]] = []  # the later records with a uuid, and it
    parent: list[int | None] = []  # record -> the record its link names, None for none
    ahead: list[tuple[int, str]] = []  # records that name a uuid no record before has
    agents: dict[int, tuple[str, list[str]]] = {}  # record -> toolUseResult.agentId, its calls
    for idx, value in enumerate(stream):
        record = records[idx]
        lines.append(record.line)
        up = None
        if not isinstance(value, dict):
            if record.ok:
                problems.append(Problem(record.line, "not a JSON object", "unreadable"))
            value = None
        else:
            kind = value.get("type")
            if not isinstance(kind, str):
                problems.append(Problem(record.line, "record has no type", "skipped"))
                value = None
            else:
                if not known:
                    known = kind in _OWN_TYPES or any(k in value for k in _LINK_KEYS)
                if kind in ("user", "assistant"):
                    reason = _message_problem(value)
                    if reason:
                        problem = Problem(record.line, f"{kind} record {reason}", "unreadable")
                        problems.append(problem)
                        value = None
                    else:
                        known = True
                        msg_records.append(idx)
                        if not value.get("isSidechain"):
                            main_records.append(idx)
                        result = value.get("toolUseResult")
                        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
                            agents[idx] = (result["agentId"], sorted(_result_ids(value)))
            if value is not None:
                uid = value.get("uuid")
                # The first copy of a uuid counts (see _Tree). Noted before the
                # link is looked up: a record whose link names its own uuid is
                # its own parent (a cycle the tree reports).
                if isinstance(uid, str) and by_uuid.setdefault(uid, idx) != idx:
                    repeats.append((idx, uid))
                link = value.get("parentUuid")
                if link is None:
                    link = value.get("logicalParentUuid")
                if isinstance(link, str):
                    up = by_uuid.get(link)
                    if up is None:
                        ahead.append((idx, link))
        values.append(value)
        parent.append(up)
    if records and not known:
        raise FormatError(
            "no line is a Claude Code record (a user or assistant message, or a record"
            " with Claude Code's uuid links)"
        )
    problems = read.problems + problems  # the reader's first, as the sort keeps them
    for idx, link in ahead:  # a parent further down the file, or none
        parent[idx] = by_uuid.get(link)

    sidechain = bool(msg_records) and not main_records
    candidates = msg_records if sidechain else main_records

    tree = _Tree(records, values, candidates, by_uuid, repeats, parent)
    start = None
    if leaf is not None:
        start = tree.by_uuid.get(leaf)
        if start is None or start not in tree.cand_set:
            raise FormatError(f"no message record {leaf!r} ends a branch of this session")
    branch = tree.active_branch(start)
    messages, pieces, sources, causes, subagents = _build_messages(branch, values, lines, agents)
    for index, message in enumerate(messages):
        message["metadata"][SRC] = index

    for idx in tree.unreached(branch):
        reason = (
            f"{values[idx]['type']} record in a parentUuid cycle that no branch reaches:"
            " kept in the file, not read"
        )
        problems.append(Problem(lines[idx], reason, "skipped"))
    side_records = len(msg_records) - len(main_records)
    meta = _meta(tree, branch, values, records, sidechain, side_records, subagents)
    session_id = meta.get("session_id") or ""
    mparent = tree.mparent
    state = _State(
        data=data,
        records=records,
        loglines=loglines,
        final_newline=read.final_newline,
        crlf=read.crlf,
        branch=branch,
        pieces=pieces,
        # Usually the branch is every candidate, the keys of mparent in the same order.
        parent_of=dict(mparent) if len(branch) == len(mparent) else {r: mparent[r] for r in branch},
        echoes=tree.echoes,
        candidates=tree.cand_set,
        session_id=session_id,
        # Made here, while the records' values are still decoded: once they are
        # released, reading them would decode each message's lines again.
        facts=[_facts(values[own[0][0]], values[own[-1][0]]) if own else None for own in pieces],
    )
    problems.sort(key=lambda p: p.line)
    # Messages and meta are made: what serialise needs of a record it decodes again.
    release(records)
    return Parsed(NAME, messages, sources, problems, causes, meta=meta, state=state)


def _read(data: bytes) -> tuple[JsonlFile, dict[str, Any] | None, Iterator[Any]]:
    """Records from JSONL or from a ``{"loglines": [...]}`` export, and their values.

    The values come in file order, each as its record is read: the records
    are in ``JsonlFile.records`` (and the reader's problems in its
    ``problems``) once the values are all read.
    """
    stripped = data.lstrip()
    if stripped.startswith(b"{") and b'"loglines"' in stripped[:4096]:
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("loglines"), list):
            records = [Record(n, b"", value) for n, value in enumerate(doc["loglines"], 1)]
            return JsonlFile(records, [], True, False), doc, iter(doc["loglines"])
    read = JsonlFile()
    return read, None, iter_jsonl(data, read)


def _message_problem(value: dict[str, Any]) -> str:
    """Why a user/assistant record cannot be read as a message, or ``""``."""
    message = value.get("message")
    if not isinstance(message, dict):
        return "has no message object"
    content = message.get("content")
    if isinstance(content, str):
        return ""
    if not isinstance(content, list):
        return "has no message content"
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return "has a content block that is not an object with a type"
    return ""


class _Tree:
    """The ``parentUuid`` tree over the message records that can be in the history."""

    def __init__(
        self,
        records: list[Record],
        values: list[Any],
        candidates: list[int],
        by_uuid: dict[str, int],
        repeats: list[tuple[int, str]],
        parent: list[int | None],
    ) -> None:
        """What ``_parse`` read: ``by_uuid`` maps each uuid to its first record,
        ``repeats`` lists the later records with one (and it) in file order,
        ``parent`` gives each record's parent (``None`` for none, and for
        unreadable records)."""
        self.records = records
        self.values = values
        self.candidates = candidates  # in file order
        self.duplicates: list[dict[str, Any]] = []
        self.echoes: dict[int, list[int]] = {}
        self.cycles: list[str] = []
        self._depths: dict[int, int] = {}
        self.leaf: int | None = None  # where the branch read ends (active_branch)

        # First copy of a uuid wins; later copies are Claude Code's resume echoes.
        dropped: set[int] = set()
        cand_set = set(candidates)
        for idx, uid in repeats:
            if idx in cand_set:
                dropped.add(idx)
                self.echoes.setdefault(by_uuid[uid], []).append(idx)
                first = records[by_uuid[uid]].line
                self.duplicates.append(
                    {"uuid": uid, "line": records[idx].line, "first_line": first}
                )
        if dropped:
            self.candidates = [c for c in candidates if c not in dropped]
            cand_set -= dropped
        self.by_uuid = by_uuid
        self.cand_set = cand_set

        # Record index -> its parent's, None for none (and for dropped records).
        for idx in dropped:
            parent[idx] = None
        self.parent = parent
        self.mparent = self._message_parents()

    def _message_parents(self) -> dict[int, int | None]:
        """For each candidate, its nearest ancestor that is a candidate, or None."""
        parent, cand_set = self.parent, self.cand_set
        through: dict[int, int | None] = {}  # bookkeeping record -> candidate above it
        out: dict[int, int | None] = {}
        for c in self.candidates:
            p = parent[c]
            if p is None or p in cand_set:  # the usual case: no bookkeeping between
                out[c] = None if p == c else p
                continue
            path: list[int] = []
            seen: set[int] = set()
            while p is not None and p not in cand_set and p not in through:
                if p in seen:  # a cycle among bookkeeping records
                    p = None
                    break
                seen.add(p)
                path.append(p)
                p = parent[p]
            if p is not None and p not in cand_set:
                p = through[p]
            for t in path:
                through[t] = p
            out[c] = None if p == c else p
        return out

    def active_branch(self, start: int | None = None) -> list[int]:
        """Record indices of the branch ending at ``start`` (default: the resumed leaf).

        In history order: each record after the one its ``parentUuid`` names,
        wherever in the file either was written (see ``_history_order``).
        """
        if not self.candidates:
            return []
        values, mparent = self.values, self.mparent
        visited: set[int] = set()
        walk: list[int] = []  # from the leaf up, continuations included
        cur: int | None = self._resumed_leaf() if start is None else start
        self.leaf = cur
        while cur is not None:
            visited.add(cur)
            walk.append(cur)
            p = mparent[cur]
            if p is not None and p not in visited:
                cur = p
                continue
            if p is not None:
                self.cycles.append(values[cur].get("uuid"))
            cur = self._continuation(cur, visited)
        walk.reverse()
        if len(visited) == len(self.candidates):  # the usual session: one chain through all
            return walk

        # Beside the chain: parallel results hanging off their tool_use records,
        # and records of a split reply that the chain does not pass through.
        # Only a record off the chain whose parent is on it can join; in most
        # sessions there is none, and nothing below needs to be looked at.
        included = set(visited)
        rest = [c for c in self.candidates if c not in included]
        if not any(mparent[c] in included for c in rest):
            return walk
        message_ids = set()
        answered: set[str] = set()
        for c in visited:
            value = values[c]
            if value["type"] == "assistant":
                mid = value["message"].get("id")
                if mid:
                    message_ids.add(mid)
            else:
                answered.update(_result_ids(value))
        # Claude Code links each result to its own tool_use record and the next
        # reply to the last result to arrive, so the chain can pass through any
        # one of them; the rest of the reply hangs beside it, results included.
        # A result record joins whatever else it carries: newer Claude Code
        # writes what the user typed while the tools ran into the record of
        # the result that arrived next (a text block after the tool_result).
        grew = True
        beside: list[int] = []
        while grew:
            grew = False
            for c in rest:
                if c in included or mparent[c] not in included:
                    continue
                value = values[c]
                message = value["message"]
                if value["type"] == "assistant":
                    if message.get("id") and message.get("id") in message_ids:
                        included.add(c)
                        beside.append(c)
                        grew = True
                    continue
                ids = _result_ids(value)
                # A result already answered on the branch is another branch's copy.
                if ids and not answered & ids:
                    included.add(c)
                    beside.append(c)
                    answered |= ids
                    grew = True
        return _history_order(walk, beside, mparent, values)

    def _resumed_leaf(self) -> int:
        """Where the active branch ends: the last message record in the file
        that no other one names as parent (the last record, in a file written
        in order; a record written after its children is no leaf).

        When that leaf is a result of a reply's calls and the conversation
        went on from the same reply (the result hangs beside the branch, see
        ``active_branch``), the branch ends where it went on: the last leaf
        below the reply that is no result of it. Every record has a child
        only in a cycle: then the last.
        """
        mparent = self.mparent
        children: dict[int, list[int]] = {}
        for c, p in mparent.items():
            if p is not None:
                children.setdefault(p, []).append(c)
        leaf = next((c for c in reversed(self.candidates) if c not in children), None)
        if leaf is None:
            return self.candidates[-1]
        seen: set[int] = set()
        while leaf not in seen:
            seen.add(leaf)
            reply = self._reply_of_result(leaf)
            if reply is None:
                break
            top, mid = reply
            below: list[int] = []
            todo, met = [top], {top}
            while todo:
                for child in children.get(todo.pop(), ()):
                    if child in met:
                        continue
                    met.add(child)
                    if child in children:
                        todo.append(child)
                        continue
                    answers = self._reply_of_result(child)
                    if answers is None or answers[1] != mid:
                        below.append(child)
            if not below:
                break
            leaf = max(below)
        return leaf

    def _reply_of_result(self, idx: int) -> tuple[int, Any] | None:
        """For a record of tool results under an assistant record: the first
        record of that reply (same ``message.id``) and the id. Else None."""
        value = self.values[idx]
        parent = self.mparent[idx]
        if value["type"] != "user" or parent is None or not _result_ids(value):
            return None
        top = self.values[parent]
        if top["type"] != "assistant":
            return None
        mid = top["message"].get("id")
        seen = {parent}
        if mid:
            up = self.mparent[parent]
            while (
                up is not None
                and up not in seen
                and self.values[up]["type"] == "assistant"
                and self.values[up]["message"].get("id") == mid
            ):
                seen.add(up)
                parent, up = up, self.mparent[up]
        return parent, mid

    def _continuation(self, root: int, visited: set[int]) -> int | None:
        """The latest message record before ``root`` that the walk has not met.

        Not one that descends from a record the walk met (a record written
        before its parent, on a branch off this one): that is no conversation
        above the root, and going up from it would only come back.
        """
        candidates, mparent = self.candidates, self.mparent
        for r in range(bisect_left(candidates, root) - 1, -1, -1):
            c = candidates[r]
            if c in visited:
                continue
            up, seen = mparent[c], {c}
            while up is not None and up not in visited and up not in seen:
                seen.add(up)
                up = mparent[up]
            if up is None or up not in visited:
                return c
        return None

    def unreached(self, branch: list[int]) -> list[int]:
        """The message records on no branch: each has a child, so from them
        only a cycle goes on; no leaf ends there, and ``branches`` cannot list
        them."""
        if len(branch) == len(self.candidates):
            return []
        covered = set(branch)
        has_child = {p for p in self.mparent.values() if p is not None}
        for c in self.candidates:
            cur: int | None = c
            if c in has_child:
                continue
            while cur is not None and cur not in covered:
                covered.add(cur)
                cur = self.mparent[cur]
        return [c for c in self.candidates if c not in covered]

    def depth(self, start: int) -> int:
        """Message records from ``start`` up to its root (no continuation)."""
        memo = self._depths
        path: list[int] = []
        seen: set[int] = set()
        cur: int | None = start
        while cur is not None and cur not in memo and cur not in seen:
            seen.add(cur)
            path.append(cur)
            cur = self.mparent[cur]
        # Branches share their trunk: each record's depth is counted once.
        n = memo[cur] if cur is not None and cur in memo else 0
        for node in reversed(path):
            n += 1
            memo[node] = n
        return memo[start]


def _result_ids(value: dict[str, Any] | None) -> set[str]:
    content = value["message"]["content"] if value else None
    if not isinstance(content, list):
        return set()
    return {
        b.get("tool_use_id")
        for b in content
        if b["type"] == "tool_result" and isinstance(b.get("tool_use_id"), str)
    }


def _history_order(
    walk: list[int], beside: list[int], mparent: dict[int, int | None], values: list[Any]
) -> list[int]:
    """The branch's records with each one after the record it follows.

    ``walk`` is the chain in history order (root first); each record of
    ``beside`` (in the order they joined) follows its parent. Among the
    records whose predecessor is placed, the one written first goes first,
    so a file written in order (every parent before its children) comes out
    in file order. A record beside the chain belongs to its parent's turn:
    it goes before the chain's next reply or prompt even when it was written
    after them (a parallel call's result that arrived late).
    """
    # The record that starts the next turn after each one of the chain.
    starts: list[bool] = []
    reply: Any = None
    for r in walk:
        value = values[r]
        if value["type"] == "assistant":
            mid = value["message"].get("id")
            starts.append(not mid or mid != reply)
            reply = mid
        else:
            starts.append(not _result_ids(value))
    turn_end: dict[int, int | None] = {}
    upcoming: int | None = None
    for k in range(len(walk) - 1, -1, -1):
        turn_end[walk[k]] = upcoming
        if starts[k]:
            upcoming = walk[k]
    follows: dict[int, int] = {}
    for k in range(1, len(walk)):
        follows[walk[k]] = walk[k - 1]
    key: dict[int, tuple[int, int, int]] = {r: (r, 0, r) for r in walk}
    for c in beside:
        p = mparent[c]
        assert p is not None  # a record joins beside the chain by its parent
        follows[c] = p
        end = turn_end[c] = turn_end[p]
        key[c] = (end, -1, c) if end is not None and end < c else (c, 0, c)
    # A result hanging off one record of a reply split over several comes after
    # the whole reply, as the provider gets it (unless the reply went on after
    # it: Claude Code ran a call while the reply was still streaming).
    last_part = _last_parts([*walk, *beside], mparent, values)
    for c in (*walk, *beside):
        p = mparent[c]
        if p is None or values[p]["type"] != "assistant" or values[c]["type"] != "user":
            continue
        if not _result_ids(values[c]):
            continue
        mid = values[p]["message"].get("id")
        last = last_part.get(mid) if mid else None
        if last is not None and last != p and not _goes_through(last, c, p, mparent):
            follows[c] = last
    after: dict[int, list[int]] = {}
    for c, p in follows.items():
        after.setdefault(p, []).append(c)
    ready = [key[walk[0]]]
    out: list[int] = []
    while ready:
        c = heappop(ready)[2]
        out.append(c)
        for child in after.get(c, ()):
            heappush(ready, key[child])
    # Every record follows one placed before it, so all are placed; were one
    # not, the branch is read by its links alone rather than lose a record.
    if len(out) != len(follows) + 1:
        return _linked_order(walk, beside, mparent)
    return _results_in_call_order(out, values)


def _results_in_call_order(order: list[int], values: list[Any]) -> list[int]:
    """Each run of result records after a reply in the order of its calls.

    The order they were written in is the order the tools finished, which a
    file need not keep (and the reader sorts the results by call anyway); so
    the branch is the same whatever the order of its lines.
    """
    out = list(order)
    calls: dict[str, int] = {}
    reply: Any = None
    run: list[int] = []  # positions in ``order`` of the current run of results

    def close() -> None:
        if len(run) > 1:
            last = len(calls)
            recs = [order[n] for n in run]
            recs.sort(
                key=lambda r: (
                    min((calls.get(i, last) for i in _result_ids(values[r])), default=last),
                    r,
                )
            )
            for n, r in zip(run, recs, strict=True):
                out[n] = r
        run.clear()

    for n, r in enumerate(order):
        value = values[r]
        if value["type"] == "assistant":
            close()
            mid = value["message"].get("id")
            if not mid or mid != reply:
                calls = {}
            reply = mid
            content = value["message"]["content"]
            if isinstance(content, list):
                for b in content:
                    if b["type"] == "tool_use" and isinstance(b.get("id"), str):
                        calls.setdefault(b["id"], len(calls))
        elif calls and _result_ids(value):
            run.append(n)
        else:
            close()
            calls, reply = {}, None
    close()
    return out


def _linked_order(walk: list[int], beside: list[int], mparent: dict[int, int | None]) -> list[int]:
    """The chain, each record beside it after its parent, in file order among them."""
    after: dict[int, list[int]] = {}
    for c in beside:
        p = mparent[c]
        assert p is not None  # a record joins beside the chain by its parent
        after.setdefault(p, []).append(c)
    order = {r: (r, 0) for r in walk}
    out: list[int] = []
    ready = [(walk[0], 0, walk[0])]
    nexts = {walk[k - 1]: walk[k] for k in range(1, len(walk))}
    while ready:
        c = heappop(ready)[2]
        out.append(c)
        if c in nexts:
            heappush(ready, (*order[nexts[c]], nexts[c]))
        for child in after.get(c, ()):
            heappush(ready, (child, 1, child))
    return out


def _last_parts(
    records: list[int], mparent: dict[int, int | None], values: list[Any]
) -> dict[Any, int]:
    """For each reply split over several of these records: its last record."""
    mids = {r: values[r]["message"].get("id") for r in records if values[r]["type"] == "assistant"}
    inner = set()  # the records a later record of the same reply descends from
    for r, mid in mids.items():
        cur, seen = mparent[r], {r}
        while mid and cur is not None and cur not in seen:  # up through the reply
            seen.add(cur)
            value = values[cur]
            if value["type"] == "assistant":
                if value["message"].get("id") != mid:
                    break
                inner.add(cur)
            elif not _result_ids(value):
                break
            cur = mparent[cur]
    out: dict[Any, int] = {}
    for r, mid in mids.items():
        if mid and r not in inner:
            out[mid] = max(out.get(mid, r), r)
    return out


def _goes_through(last: int, record: int, parent: int, mparent: dict[int, int | None]) -> bool:
    """Does the way up from ``last`` to ``parent`` pass through ``record``?"""
    cur: int | None = last
    seen: set[int] = set()
    while cur is not None and cur != parent and cur not in seen:
        if cur == record:
            return True
        seen.add(cur)
        cur = mparent[cur]
    return False


def _build_messages(
    branch: list[int], values: list[Any], lines: list[int], agents: dict[int, tuple[str, list[str]]]
) -> tuple[
    list[dict[str, Any]], list[list[_Piece]], list[list[int]], dict[int, str], dict[str, str]
]:
    """Canonical messages, in history order, with what they came from and why turns ended.

    For each message the pieces it is made of (one per record) and its
    source lines; ``Parsed.causes`` (see the module docstring); and which
    subagent answered which Task call, as ``agents`` (each record's
    ``toolUseResult.agentId``) says, for ``meta["subagents"]``.
    """
    messages: list[dict[str, Any]] = []
    pieces: list[list[_Piece]] = []
    sources: list[list[int]] = []
    ended: dict[int, str] = {}  # assistant message -> why its own records say it ended
    stopped: list[int] = []  # the messages user stop markers mark
    reply: dict[str, Any] | None = None  # the assistant message later records may join
    reply_pieces: list[_Piece] = []
    reply_lines: list[int] = []
    reply_id: Any = None
    last_reply: int | None = None  # the index of the last assistant message
    # [start, stop) of each run of tool messages in ``messages``, noted while
    # they are added so that ordering them need not look at every message again.
    runs: list[list[int]] = []
    in_run = False  # is the last message added a tool message?
    # What the user typed while the tools ran, written into a result's record:
    # it follows the whole run of results, as the provider gets them together.
    steers: list[tuple[int, tuple[int, ...], list[Any], int]] = []
    for idx in branch:
        value = values[idx]
        message = value["message"]
        content = message["content"]
        line = lines[idx]
        if value["type"] == "assistant":
            if steers:
                _add_steers(steers, messages, pieces, sources, stopped, last_reply)
                in_run = False
            mid = message.get("id")
            if reply is None or not mid or mid != reply_id:
                reply = {"role": "assistant", "content": [], "metadata": {}}
                reply_pieces = []
                reply_lines = [line]
                reply_id = mid
                last_reply = len(messages)
                messages.append(reply)
                pieces.append(reply_pieces)
                sources.append(reply_lines)
                in_run = False
            elif line not in reply_lines:  # a glued line holds several records
                reply_lines.append(line)
            reply_pieces.append(_add_reply(reply, idx, content))
            # The first record to say why the reply ended has it.
            assert last_reply is not None  # set when the reply was started
            if last_reply not in ended:
                if value.get("isApiErrorMessage"):
                    ended[last_reply] = "api_error"
                elif message.get("stop_reason") == "max_tokens":
                    ended[last_reply] = "max_tokens"
            continue
        if steers:
            # Ends the run: a record with a result of its own goes on with it.
            if isinstance(content, str) or not any(b["type"] == "tool_result" for b in content):
                _add_steers(steers, messages, pieces, sources, stopped, last_reply)
                in_run = False
        if isinstance(content, str):
            if content.strip() in STOP_MARKERS:
                stopped.append(len(messages) if last_reply is None else last_reply)
            messages.append(_user(content))
            pieces.append([(idx, None)])
            sources.append([line])
            reply = None
            in_run = False
            continue
        rest: list[int] = []
        results = len(messages)
        for b, block in enumerate(content):
            if block["type"] == "tool_result":
                if in_run:
                    runs[-1][1] += 1
                else:
                    runs.append([len(messages), len(messages) + 1])
                    in_run = True
                messages.append(_tool(block))
                pieces.append([(idx, (b,))])
                sources.append([line])
            else:
                rest.append(b)
        if rest or not content:
            parts = [_part(content[b]) for b in rest]
            reply = None
            if len(messages) > results:  # after results of its own: after the run
                steers.append((idx, tuple(rest), parts, line))
                continue
            if any(t.strip() in STOP_MARKERS for t in _texts(parts)):
                stopped.append(len(messages) if last_reply is None else last_reply)
            messages.append(_user(parts))
            pieces.append([(idx, tuple(rest))])
            sources.append([line])
            in_run = False
    if steers:
        _add_steers(steers, messages, pieces, sources, stopped, last_reply)
    _order_results(runs, messages, pieces, sources)
    # A reply's own reason wins over a stop after it; by message, in history order.
    causes = dict(ended)
    for index in stopped:
        causes.setdefault(index, "user_stop")
    subagents: dict[str, str] = {}
    if agents:
        on_branch = set(branch)
        for idx, (agent, calls) in agents.items():  # in file order, as the branch is
            if idx in on_branch:
                for call in calls:
                    subagents[call] = agent
    return messages, pieces, sources, dict(sorted(causes.items())), subagents


def _add_steers(
    steers: list[tuple[int, tuple[int, ...], list[Any], int]],
    messages: list[dict[str, Any]],
    pieces: list[list[_Piece]],
    sources: list[list[int]],
    stopped: list[int],
    last_reply: int | None,
) -> None:
    """Add the user messages held back until their run of results ended."""
    for idx, rest, parts, line in steers:
        if any(t.strip() in STOP_MARKERS for t in _texts(parts)):
            stopped.append(len(messages) if last_reply is None else last_reply)
        messages.append(_user(parts))
        pieces.append([(idx, rest)])
        sources.append([line])
    steers.clear()


# The indices of n content blocks, made once for the usual small n.
_ALL_BLOCKS = tuple(tuple(range(n)) for n in range(16))


def _add_reply(message: dict[str, Any], idx: int, content: Any) -> _Piece:
    """Add one assistant record's blocks to the reply it belongs to; its piece of it."""
    if isinstance(content, str):
        if content:
            message["content"].append({"type": "text", "text": content})
        return (idx, None)
    parts = message["content"]
    for block in content:
        kind = block["type"]
        if kind == "tool_use":
            arguments = block.get("input", {})
            if not isinstance(arguments, (dict, str)):
                # Not an object: keep it as the text it was, for the checks to see.
                arguments = orjson.dumps(arguments).decode()
            call_id = block.get("id")
            name = block.get("name")
            call = {
                "tool_call_id": call_id if isinstance(call_id, str) else _text(call_id),
                "name": name if isinstance(name, str) else _text(name),
                "arguments": arguments,
            }
            message["metadata"].setdefault("tool_calls", []).append(call)
        elif kind == "text":  # the usual part, made here as _part makes it
            parts.append({"type": "text", "text": part_text(block)})
        else:
            parts.append(_part(block))
    n = len(content)
    return (idx, _ALL_BLOCKS[n] if n < len(_ALL_BLOCKS) else tuple(range(n)))


def _order_results(runs: list[list[int]], messages: list[dict[str, Any]], *more: list[Any]) -> None:
    """Put the results right after a reply in its call order (stable otherwise).

    ``runs`` holds where each run of tool messages starts and stops; what
    ``more`` lists holds for them moves with them.
    """
    for start, stop in runs:
        if stop - start < 2 or start == 0:
            continue
        calls = messages[start - 1]["metadata"].get("tool_calls")
        if calls:
            ids = [m["metadata"]["tool_call_id"] for m in messages[start:stop]]
            # Usually every call has its result, in call order already: the
            # sort would keep them as they are (unless an id repeats).
            if ids == [call["tool_call_id"] for call in calls] and len(set(ids)) == len(ids):
                continue
            order: dict[str, int] = {}
            for n, call in enumerate(calls):
                order.setdefault(call["tool_call_id"], n)
            last = len(order)
            run = sorted(range(start, stop), key=lambda k: order.get(ids[k - start], last))
            for column in (messages, *more):
                column[start:stop] = [column[k] for k in run]


def _user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, "metadata": {}}


def _tool(block: dict[str, Any]) -> dict[str, Any]:
    call_id = block.get("tool_use_id")
    metadata: dict[str, Any] = {
        "tool_call_id": call_id if isinstance(call_id, str) else _text(call_id)
    }
    if "is_error" in block:
        metadata["is_error"] = block["is_error"]
    content = block.get("content")
    if not isinstance(content, str):  # the common case, without a call
        content = _result_content(content)
    return {"role": "tool", "content": content, "metadata": metadata}


def _result_content(content: Any) -> Any:
    return typed_parts(content, _part) if isinstance(content, list) else _text(content)


def _part(block: dict[str, Any]) -> dict[str, Any]:
    """A content block as a canonical part (text and images mapped, others as they are)."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": part_text(block)}
    if kind == "image":
        source = block.get("source")
        if isinstance(source, dict):
            return source_part(source) or block
    return block


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"]


def _meta(
    tree: _Tree,
    branch: list[int],
    values: list[Any],
    records: list[Record],
    sidechain: bool,
    sidechain_records: int,
    subagents: dict[str, str],
) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    scope = branch or [i for i, v in enumerate(values) if v is not None]
    for key, name in (("sessionId", "session_id"), ("cwd", "cwd"), ("version", "version")):
        for idx in reversed(scope) if name != "session_id" else scope:
            found = values[idx].get(key)
            if isinstance(found, str) and found:
                meta[name] = found
                break
    meta["sidechain"] = sidechain
    if sidechain:
        meta["parent_session"] = meta.get("session_id")
        for idx in scope:
            agent = values[idx].get("agentId")
            if isinstance(agent, str):
                meta["agent_id"] = agent
                break
    else:
        meta["sidechain_records"] = sidechain_records

    branches, forks = _branches(tree, branch, values, records)
    meta["branches"] = branches
    meta["forks"] = forks
    meta["duplicates"] = tree.duplicates
    meta["cycles"] = tree.cycles

    meta["subagents"] = subagents
    return meta


def _branches(
    tree: _Tree, branch: list[int], values: list[Any], records: list[Record]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The active branch and every other leaf, and where the others fork off."""
    if not branch:
        return [], []
    leaf = tree.leaf
    assert leaf is not None  # active_branch found the branch, so its leaf too

    def describe(idx: int, length: int, active: bool) -> dict[str, Any]:
        value = values[idx]
        return {
            "leaf": value.get("uuid"),
            "line": records[idx].line,
            "length": length,
            "last_timestamp": value.get("timestamp"),
            "active": active,
        }

    branches = [describe(leaf, len(branch), True)]
    if len(branch) == len(tree.candidates):  # every message record is on it: no other leaf
        return branches, []
    in_branch = set(branch)
    has_child = {p for p in tree.mparent.values() if p is not None}
    forks: dict[int | None, list[str | None]] = {}
    for c in tree.candidates:
        if c in has_child or c in in_branch:
            continue
        info = describe(c, tree.depth(c), False)
        # Where it leaves the active branch: its first ancestor on it.
        cur, seen = tree.mparent[c], set()
        while cur is not None and cur not in in_branch and cur not in seen:
            seen.add(cur)
            cur = tree.mparent[cur]
        fork = cur if cur in in_branch else None
        info["fork"] = values[fork].get("uuid") if fork is not None else None
        branches.append(info)
        forks.setdefault(fork, []).append(info["leaf"])
    fork_list = [
        {
            "uuid": values[at].get("uuid") if at is not None else None,
            "line": records[at].line if at is not None else None,
            "leaves": leaves,
        }
        for at, leaves in sorted(forks.items(), key=lambda kv: -1 if kv[0] is None else kv[0])
    ]
    return branches, fork_list


# --------------------------------------------------------------------------- serialise


# "This chain reaches a root": the reader continues it from the record above.
_ROOT = object()


@dataclass(slots=True)
class _Unit:
    """One record of the written file that belongs to the active branch.

    ``rec`` is the original record it derives from (``None`` for a new one);
    ``blocks`` are its content blocks, each with a sort key (its place in
    the original record), or ``string`` its string content; ``touched`` says
    a block was changed. ``obj`` is the message of a new record.
    """

    key: tuple[int, int, int]
    kind: str  # "assistant" | "user"
    rec: int | None = None
    blocks: list[tuple[tuple[int, int], Any]] = field(default_factory=list)
    string: str | None = None
    touched: bool = False
    obj: dict[str, Any] | None = None
    call_id: str | None = None
    replaces: int | None = None  # the record a note was made from (it may take its place)


class _Writer(RecordWriter[_State]):
    """Maps repaired canonical messages back onto the session's records.

    The records of untouched messages stay where they are; new and moved
    messages are placed after what precedes them in the repaired history, and
    new results of a turn go after the turn's last record (the reader puts a
    turn's results back in call order). Then ``parentUuid`` is relinked so
    the active branch is one chain again: the file's order is the base's
    ``order``, overridden.
    """

    STATE = _State
    UNGLUES = True

    def __init__(self, state: _State, before: list[dict[str, Any]]) -> None:
        super().__init__(state, before)
        # Decoded again from the file (parse let go of them), once for the whole write.
        self.values: list[Any] = [r.value if r.ok else None for r in state.records]
        self.inplace: dict[int, _Unit] = {}
        self.anchored: list[_Unit] = []
        # Units are placed by their records' places in the history (the
        # branch's order, which is the file's when every parent comes first);
        # where in the file each one goes is decided when it is written.
        self.branch = state.branch
        self.place = {rec: n for n, rec in enumerate(state.branch)}
        self.cursor = -1  # latest place in the history filled so far, in repaired order
        self.floor = -1  # latest place something was anchored after
        self.seq = 0
        self.deferred: list[_Unit] = []
        self.in_turn = False
        self.notes: dict[str, int] = {}

    # -- placing ---------------------------------------------------------------

    def on_original(self, m: dict[str, Any], src: int, moved: bool) -> None:
        role = self._turn(m)
        if not moved:
            for rec, blocks, string, touched in self._pieces(m, src):
                self._place_inplace(rec, blocks, string, touched, role)
            return
        # The repair moved it: its pieces go where it now stands.
        units = [
            _Unit((0, 0, 0), _kind(role), rec, blocks, string, True)
            for rec, blocks, string, _ in self._pieces(m, src)
        ]
        self._place(role, units, -1)

    def on_new(self, m: dict[str, Any]) -> None:
        role = self._turn(m)
        unit = self._new_unit(m)
        # A message made from an original one (an orphan result turned
        # into a note) stands where that one stood, or later.
        at = self._replaced(m)
        if at >= 0:
            unit.replaces = self.branch[at]
        self._place(role, [unit], at)

    def _turn(self, m: dict[str, Any]) -> Any:
        """Results held for the end of a turn go before the next message that is no result."""
        role = m.get("role")
        if role == "assistant" or (role != "tool" and self.deferred):
            self._flush()
        if role == "assistant":
            self.in_turn = True
        return role

    def _place(self, role: Any, units: list[_Unit], at: int) -> None:
        for unit in units:
            if role == "tool" and self.in_turn:
                self.deferred.append(unit)
            else:
                self._anchor(unit, at)

    def _replaced(self, m: dict[str, Any]) -> int:
        """The place of the last record of the original message ``m`` was made from, or -1."""
        src = self.source(m)
        if src is None or src in self.used:
            return -1
        return max(self.place[rec] for rec, _ in self.state.pieces[src])

    def _place_inplace(
        self,
        rec: int,
        blocks: list[tuple[tuple[int, int], Any]],
        string: str | None,
        touched: bool,
        role: Any,
    ) -> None:
        place = self.place[rec]
        if place <= self.floor:
            # Something was inserted after this record already: the rest of
            # the record goes after it, as a record of its own.
            self._anchor(_Unit((0, 0, 0), _kind(role), rec, blocks, string, True))
            return
        unit = self.inplace.get(rec)
        if unit is None:
            unit = self.inplace[rec] = _Unit((place, 0, 0), _kind(role), rec)
        unit.blocks.extend(blocks)
        if string is not None:
            unit.string = string
        unit.touched = unit.touched or touched
        self.cursor = max(self.cursor, place)

    def _anchor(self, unit: _Unit, at: int = -1) -> None:
        self.seq += 1
        self.cursor = max(self.cursor, at)
        unit.key = (self.cursor, 1, self.seq)
        self.floor = max(self.floor, self.cursor)
        self.anchored.append(unit)

    def _flush(self) -> None:
        for unit in self.deferred:
            self._anchor(unit)
        self.deferred = []

    # -- what each message becomes -------------------------------------------

    def _pieces(
        self, m: dict[str, Any], src: int
    ) -> list[tuple[int, list[tuple[tuple[int, int], Any]], str | None, bool]]:
        """Per source record: the blocks (or string) this message now puts there."""
        before = self.before[src]
        pieces = self.state.pieces[src]
        same_content = m.get("content") == before.get("content")
        out: list[tuple[int, list[tuple[tuple[int, int], Any]], str | None, bool]] = []
        role = m.get("role")
        if role == "assistant":
            renames = self._match_calls(m, before)
            for n, (rec, _) in enumerate(pieces):
                content = self.values[rec]["message"]["content"]
                blocks: list[tuple[tuple[int, int], Any]] = []
                touched = not same_content
                if isinstance(content, str):
                    if same_content:
                        out.append((rec, [], content, False))
                        continue
                    content = []
                for b, block in enumerate(content):
                    if block["type"] == "tool_use":
                        new_id = renames.get((rec, b), False)
                        if new_id is False:
                            touched = True  # the repair removed this call
                        elif new_id is None:
                            blocks.append(((b, 0), block))
                        else:
                            blocks.append(((b, 0), {**block, "id": new_id}))
                            touched = True
                    elif same_content:
                        blocks.append(((b, 0), block))
                if not same_content and n == 0:
                    new_parts = _blocks(m.get("content"), for_reply=True)
                    blocks[:0] = [((-1, k), part) for k, part in enumerate(new_parts)]
                out.append((rec, blocks, None, touched))
            return out
        rec, indices = pieces[0]
        content = self.values[rec]["message"]["content"]
        if role == "tool":
            assert indices is not None  # a result is one block of its record
            (b,) = indices
            block = content[b]
            new_id = call_id(m.get("metadata") or {})
            changed = dict(block)
            if new_id != call_id(before["metadata"]):
                changed["tool_use_id"] = new_id
            if not same_content:
                changed["content"] = _blocks(m.get("content"))
            touched = changed != block
            return [(rec, [((b, 0), changed if touched else block)], None, touched)]
        if indices is None:  # string content
            new = m.get("content")
            if same_content or isinstance(new, str):
                return [(rec, [], new if isinstance(new, str) else "", not same_content)]
            return [(rec, [((0, k), p) for k, p in enumerate(_blocks(new))], None, True)]
        if same_content:
            return [(rec, [((b, 0), content[b]) for b in indices], None, False)]
        first = indices[0] if indices else 0
        parts = _blocks(m.get("content"))
        if isinstance(parts, str):
            parts = [{"type": "text", "text": parts}]
        return [(rec, [((first, k), p) for k, p in enumerate(parts)], None, True)]

    def _match_calls(self, m: dict[str, Any], before: dict[str, Any]) -> dict[Any, Any]:
        """For each original tool_use block: None (kept), a new id, or False (removed).

        The repair keeps calls in order and only renames or removes them, so
        a call matches the next repaired call with the same name and arguments.
        """
        old = before["metadata"].get("tool_calls") or []
        new = (m.get("metadata") or {}).get("tool_calls") or []
        where: list[tuple[int, int]] = []
        for rec, _ in self.state.pieces[before["metadata"][SRC]]:
            content = self.values[rec]["message"]["content"]
            if isinstance(content, list):
                where.extend((rec, b) for b, blk in enumerate(content) if blk["type"] == "tool_use")
        out: dict[Any, Any] = {}
        k = 0
        for n, call in enumerate(old):
            here = where[n] if n < len(where) else None
            if (
                k < len(new)
                and isinstance(new[k], dict)
                and new[k].get("name") == call.get("name")
                and new[k].get("arguments") == call.get("arguments")
            ):
                new_id = call_id(new[k])
                out[here] = None if new_id == call["tool_call_id"] else new_id
                k += 1
            else:
                out[here] = False
        return out

    def _new_unit(self, m: dict[str, Any]) -> _Unit:
        role = m.get("role")
        metadata = md if isinstance(md := m.get("metadata"), dict) else {}
        content = m.get("content")
        if role == "tool":
            call = call_id(metadata)
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": call,
                "content": _blocks(content),
                "is_error": True if metadata.get("healed") else bool(metadata.get("is_error")),
            }
            message: dict[str, Any] = {"role": "user", "content": [block]}
            return _Unit((0, 0, 0), "user", obj=message, call_id=call)
        if role == "assistant":
            blocks = _blocks(content, for_reply=True)
            for call in metadata.get("tool_calls") or []:
                arguments = arguments_object(call.get("arguments"))
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call_id(call),
                        "name": call.get("name", ""),
                        "input": arguments if isinstance(arguments, dict) else {},
                    }
                )
            return _Unit((0, 0, 0), "assistant", obj={"role": "assistant", "content": blocks})
        # Notes (and anything else) are what the user side says.
        text = content if isinstance(content, str) else _blocks(content)
        return _Unit((0, 0, 0), "user", obj={"role": "user", "content": text})

    # -- writing ---------------------------------------------------------------

    def order(self) -> list[Any]:
        """The records in the file's order: original records where they were (an ``int``,
        written as it was), the branch's changed, new and moved ones (records) after the
        last original record before them in the history."""
        self._flush()  # results still held for the end of the last turn
        state = self.state
        in_branch = set(state.branch)
        # A copy Claude Code repeated on resume is ignored after the first; once
        # the first is dropped or moved, the copy would take its place.
        for rec in state.branch:
            if rec not in self.inplace:
                in_branch.update(state.echoes.get(rec, ()))
        # The repaired branch in history order: relinked along it.
        units = sorted([*self.inplace.values(), *self.anchored], key=lambda u: u.key)
        records = self._relink(units)
        # In the file: an original record where it was, a new one after the
        # last original record before it in the history (never before its
        # parent), so untouched lines keep their order.
        latest, after = -1, []
        for rec in self.branch:
            latest = max(latest, rec)
            after.append(latest)
        items: list[tuple[tuple[int, int, int], Any]] = [
            ((idx, 0, 0), idx) for idx in range(len(state.records)) if idx not in in_branch
        ]
        for unit in units:
            place, kind, seq = unit.key
            if kind == 0:  # in place
                assert unit.rec is not None  # an in-place unit is an original record
                items.append(((unit.rec, 0, 0), unit))
            elif unit.replaces is not None and self.place[unit.replaces] == place:
                # A note where the orphan result it replaces stood: on its line.
                items.append(((unit.replaces, 1, seq), unit))
            else:
                items.append(((after[place] if place >= 0 else -1, 1, seq), unit))
        items.sort(key=lambda item: item[0])
        items = self._keep_leaf_last(items, units[-1] if units else None, records)
        redirects = self._redirects()
        out: list[Any] = []
        for _, item in items:
            if not isinstance(item, int):
                out.append(records[id(item)])
                continue
            value = self.values[item]
            link = value.get("parentUuid") if isinstance(value, dict) else None
            if isinstance(link, str) and link in redirects:
                out.append({**value, "parentUuid": redirects[link]})
            else:
                out.append(item)
        return out

    def _keep_leaf_last(
        self, items: list[tuple[Any, Any]], leaf: _Unit | None, records: dict[int, Any]
    ) -> list[tuple[Any, Any]]:
        """Other leaves go before the active branch's last record.

        The reader takes the branch that ends at the last leaf in the file;
        when the repair dropped or replaced the old leaf, a message of another
        branch could otherwise end the file and win, and so could a record of
        this branch the relinking left without a child (in a file whose lines
        were out of order, the branch's end need not be its last line). A
        result beside its reply is passed over by the reader and stays.
        """
        last = next((n for n, (_, x) in enumerate(items) if x is leaf), -1)
        if last < 0:
            return items

        def value_of(item: Any) -> Any:
            found = records[id(item)] if isinstance(item, _Unit) else item
            return self.values[found] if isinstance(found, int) else found

        linked = {v.get("parentUuid") for _, x in items if isinstance(v := value_of(x), dict)}
        after = []
        for n in range(last + 1, len(items)):
            item = items[n][1]
            if isinstance(item, int):
                if item in self.state.candidates:
                    after.append(n)
                continue
            value = value_of(item)
            if value.get("uuid") in linked or value.get("type") != "user":
                continue
            content = value["message"]["content"]
            if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
                continue
            after.append(n)
        if not after:
            return items
        moved = [items[n] for n in after]
        rest = [item for n, item in enumerate(items) if n not in set(after)]
        return rest[:last] + moved + rest[last:]

    def _relink(self, units: list[_Unit]) -> dict[int, Any]:
        """Each unit's final record (an int: the original record, untouched)."""
        state, values = self.state, self.values
        pred: dict[int, int | None] = {}
        for k, rec in enumerate(self.branch):
            pred[rec] = self.branch[k - 1] if k else None
        session = state.session_id
        emitted: set[int] = set()
        reach: dict[int, Any] = {}  # id(unit) -> last assistant unit on its chain
        uuids: dict[int, Any] = {}
        tip: _Unit | None = None
        last_reply: _Unit | None = None
        prev_ident: Any = None
        out: dict[int, Any] = {}
        derived: dict[int, int] = {}
        by_rec: dict[int, _Unit] = {}
        # New records copy session, cwd, sidechain flag, ... from the last
        # original record before them (the first one when they lead).
        template = values[state.branch[0]] if state.branch else {}
        for unit in units:
            ident: int | None = None
            if unit.rec is not None and unit.rec not in emitted:
                ident = unit.rec
            elif unit.replaces is not None and unit.replaces not in emitted:
                # The record of an orphan result becomes its note: same uuid,
                # so records that point at it still do.
                ident = unit.replaces
            if ident is not None:
                emitted.add(ident)
                by_rec[ident] = unit
            tip_uuid = uuids.get(id(tip)) if tip is not None else None
            record: dict[str, Any] | None = None
            if ident is not None:
                value = template = values[ident]
                uid = value.get("uuid")
                par = state.parent_of.get(ident)
                keep = prev_ident == pred.get(ident) and (par is None or par in emitted)
                if unit.rec is None:
                    changed = True
                else:
                    changed = unit.touched or _blocks_differ(unit, value)
                if keep:
                    chain = (
                        unit
                        if unit.kind == "assistant"
                        else (reach.get(id(by_rec[par])) if par is not None else _ROOT)
                    )
                else:
                    chain = unit if unit.kind == "assistant" else self._reach_of(tip, reach)
                    if value.get("parentUuid", None) != tip_uuid and (
                        "parentUuid" in value or tip_uuid is not None
                    ):
                        record = self._rebuilt(value, unit)
                        record["parentUuid"] = tip_uuid
                if unit.rec is None:
                    note = self._fresh(unit, value)
                    if uid is None:  # a file without uuids: give the note one anyway
                        line = self.state.records[ident].line
                        uid = str(uuid.uuid5(_NAMESPACE, f"{session}:note:{line}"))
                    note["uuid"] = uid
                    note["parentUuid"] = value.get("parentUuid") if record is None else tip_uuid
                    record = note
                elif record is None and changed:
                    record = self._rebuilt(value, unit)
                out[id(unit)] = ident if record is None else record
            else:
                if unit.rec is not None:  # a second record made from one original
                    value = values[unit.rec]
                    n = derived[unit.rec] = derived.get(unit.rec, 0) + 1
                    uid = str(uuid.uuid5(_NAMESPACE, f"{session}:{value.get('uuid')}:{n}"))
                    record = self._rebuilt(value, unit)
                else:
                    anchor = tip_uuid or session
                    if unit.call_id is not None:
                        name = f"{session}:{unit.call_id}"
                    else:
                        name = f"{session}:note:{anchor}:{self._note_number(anchor)}"
                    uid = str(uuid.uuid5(_NAMESPACE, name))
                    record = self._fresh(unit, template)
                record["parentUuid"] = tip_uuid
                record["uuid"] = uid
                chain = unit if unit.kind == "assistant" else self._reach_of(tip, reach)
                out[id(unit)] = record
            uuids[id(unit)] = uid
            reach[id(unit)] = chain
            if unit.kind == "assistant":
                last_reply = unit
            if chain is _ROOT or chain is last_reply:
                tip = unit
            prev_ident = ident if ident is not None else ("new", id(unit))
        self.emitted = emitted
        return out

    def _redirects(self) -> dict[str, Any]:
        """uuid of each dropped record -> its nearest ancestor that is still there.

        Records off the active branch may point at a record the repair
        dropped; they are pointed past it, so the tree keeps its shape.
        """
        values = self.values
        gone = {values[r].get("uuid"): r for r in self.state.branch if r not in self.emitted}
        gone.pop(None, None)
        out: dict[str, Any] = {}
        for uid, rec in gone.items():
            link, seen = values[rec].get("parentUuid"), set()
            while link in gone and link not in seen:
                seen.add(link)
                link = values[gone[link]].get("parentUuid")
            out[uid] = None if link in gone else link
        return out

    def _note_number(self, anchor: str) -> int:
        """1, 2, ... for the notes written after the same record, for their uuids."""
        self.notes[anchor] = self.notes.get(anchor, 0) + 1
        return self.notes[anchor]

    @staticmethod
    def _reach_of(tip: _Unit | None, reach: dict[int, Any]) -> Any:
        return _ROOT if tip is None else reach.get(id(tip), _ROOT)

    def _rebuilt(self, value: dict[str, Any], unit: _Unit) -> dict[str, Any]:
        """A copy of an original record with this unit's content."""
        record = dict(value)
        message = dict(value["message"])
        if unit.string is not None and not unit.blocks:
            message["content"] = unit.string
        else:
            message["content"] = [block for _, block in sorted(unit.blocks, key=lambda x: x[0])]
        record["message"] = message
        return record

    def _fresh(self, unit: _Unit, template: dict[str, Any]) -> dict[str, Any]:
        """A new record around ``unit.obj``, dressed like the record before it."""
        record: dict[str, Any] = {"parentUuid": None}
        for key in _COPIED_KEYS:
            if key in template:
                record[key] = template[key]
        record["type"] = unit.kind
        record["message"] = unit.obj
        record["uuid"] = None
        if "timestamp" in template:
            record["timestamp"] = template["timestamp"]
        return record

    def emit(self) -> bytes:
        state = self.state
        if state.loglines is None:
            return super().emit()
        doc = dict(state.loglines)
        doc["loglines"] = [self.values[x] if isinstance(x, int) else x for x in self.order()]
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"

    def kept_record(self, rec: int) -> Any:
        record = self.state.records[rec]
        # A record of a glued line gets a line of its own, ending as the file's lines do.
        return record.raw + b"\r" if record.glued and self.state.crlf else record.raw


serialise = _Writer.serialise


def _kind(role: Any) -> str:
    return "assistant" if role == "assistant" else "user"


def _blocks_differ(unit: _Unit, value: dict[str, Any]) -> bool:
    """Does the unit hold anything but the record's own content, in its own order?"""
    content = value["message"]["content"]
    if isinstance(content, str):
        return unit.string != content or bool(unit.blocks)
    ordered = [block for _, block in sorted(unit.blocks, key=lambda x: x[0])]
    return len(ordered) != len(content) or any(
        a is not b for a, b in zip(ordered, content, strict=True)
    )


def _blocks(content: Any, for_reply: bool = False) -> Any:
    """Canonical content as Anthropic content (a string stays a string for users)."""
    if isinstance(content, str):
        if for_reply:
            return [{"type": "text", "text": content}] if content else []
        return content
    if not isinstance(content, list):
        return [] if for_reply else ""
    out: list[Any] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image" and "source" not in part:
            out.append(image_block(part))
        else:
            out.append(part)
    return out
