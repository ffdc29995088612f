"""The diagnosis of a transcript: what broke, which rule says so, what the repair did.

One pure package (no Django, no process-wide state) between the readers
(``inspector.formats``) and the engine (``inspector.engine``) on one side and
the web, the scan, the console command and the watcher on the other:

- ``diagnose(parsed)``: repair, the timeline's rows (``rows``), the findings
  and the four providers' verdicts (``verdicts``), as a ``Diagnosis``
  (``model``); ``diagnose_all`` for a file of several conversations;
- ``report_from`` / ``report_all``: what ``repair --report`` prints;
  ``repaired_bytes`` / ``repaired_bytes_all``: the repaired file;
- ``stored``: a diagnosis as one cache file a page reads only a little of;
  ``select``: choosing, paging and searching a view's rows on it.

Everything a diagnosis holds is plain data, so it is cached as compressed JSON
and rebuilt from the stored raw bytes whenever ``ENGINE_VERSION`` changes.
``docs/architecture.md`` follows one upload through these modules.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import orjson

from inspector import formats
from inspector.diagnosis.model import (
    ENGINE_VERSION,
    REPAIR_RULES,
    TEXT_LIMIT,
    Diagnosis,
    Finding,
    Issue,
    Row,
    Verdict,
)
from inspector.diagnosis.rows import (
    Timeline,
    line_findings,
    message_facts,
    plain,
    public_call,
    totals,
)
from inspector.diagnosis.stored import DiagnosisView
from inspector.diagnosis.verdicts import (
    PROVIDER_NAMES,
    accepted_reuse,
    export_findings,
    provider_verdicts,
)
from inspector.engine import Action, Repair, conservation, repair_history
from inspector.engine.canonical import call_id
from inspector.formats.base import Parsed, StoredShape

__all__ = [
    "ENGINE_VERSION",
    "PROVIDER_NAMES",
    "REPAIR_RULES",
    "TEXT_LIMIT",
    "Diagnosis",
    "DiagnosisView",
    "FileDiagnosis",
    "Finding",
    "Issue",
    "ReadOnly",
    "Row",
    "Verdict",
    "conversation_summaries",
    "diagnose",
    "diagnose_all",
    "diagnose_file",
    "diagnose_part",
    "message_facts",
    "provider_verdicts",
    "read_only_predicate",
    "repair_parsed",
    "repair_parsed_after",
    "repaired_bytes",
    "repaired_bytes_all",
    "report",
    "report_all",
    "report_from",
    "report_head",
]

ReadOnly = Callable[[str], bool] | None


def read_only_predicate(names: Iterable[str] | None) -> ReadOnly:
    wanted = frozenset(name for name in (names or ()) if name)
    return (lambda name: name in wanted) if wanted else None


def repair_parsed(
    parsed: Parsed,
    is_read_only: ReadOnly = None,
    *,
    offset: int = 0,
    assigned: Collection[str] = (),
) -> Repair:
    """The repair of ``parsed``, refused (``ContentLost``) if it would lose any of its content.

    ``offset`` and ``assigned`` repair messages that follow others at a SPEC cut
    (``repair_history``'s: the index of the first in the whole, and the call ids
    given out before it); the defaults, a whole history.

    Every diagnosis, download and write-back goes through here, so a repair
    that would drop a text, a call or a result (a bug, never a rule) is
    refused as the engine refuses bad input instead of being shown or
    written. The check costs about a third of the repair itself over the
    corpus (1.4% of a diagnosis; ``inspector.engine.conservation``).
    """
    kwargs: dict[str, Any] = {}
    if offset:
        kwargs["offset"] = offset
    if assigned:
        kwargs["assigned"] = assigned
    if parsed.not_started:
        kwargs["not_started"] = parsed.not_started
    if parsed.causes:
        # SPEC §7: the interruption note names the cause where the transcript shows it.
        kwargs["causes"] = parsed.causes
    stored = _stored_outputs(parsed)
    if stored:
        # A body that continues a stored history opens with the outputs of the calls
        # its previous response made, which the provider holds: real answers, kept as
        # they are, and the rest repaired as a history of its own.
        rest = repair_history(parsed.messages[stored:], is_read_only, **_shifted(kwargs, stored))
        repair = Repair(
            [*parsed.messages[:stored], *rest.messages],
            rest.interrupted,
            [_moved(action, stored) for action in rest.actions],
        )
    else:
        repair = repair_history(parsed.messages, is_read_only, **kwargs)
    conservation.check(parsed.messages, repair)
    return repair


def repair_parsed_after(
    parsed: Parsed,
    cut: int,
    start: Repair,
    is_read_only: ReadOnly = None,
    *,
    taken: Collection[str] = (),
) -> list[dict[str, Any]] | None:
    """What follows ``start`` (``repair_parsed`` of ``parsed.messages[:cut]``) in the
    repair of the whole, made from ``parsed.messages[cut:]`` alone, or ``None`` for a
    body whose history is partly stored (repair it whole then).

    ``cut`` must be a SPEC §4 cut (just before an assistant message that surely
    ends a span): the engine's prefix rule then makes the repair of the whole
    ``start.messages`` followed by this (``repair_history``'s ``offset`` and
    ``assigned``; tests/engine's property). Checked for lost content as the
    whole would be. ``taken`` are more ids the rest may not reuse: those of a start
    that goes out as it was sent, not as repaired (the guard's kept start, where its
    repair left out a call the provider took: its id is still the provider's).
    """
    if _stored_outputs(parsed):
        return None
    kwargs: dict[str, Any] = {}
    if parsed.not_started:
        kwargs["not_started"] = parsed.not_started
    if parsed.causes:
        kwargs["causes"] = parsed.causes
    given = [call_id(c) for m in start.messages for c in _metadata(m).get("tool_calls") or ()]
    given.extend(taken)
    rest = repair_history(
        parsed.messages[cut:], is_read_only, offset=cut, assigned=given, **_shifted(kwargs, cut)
    )
    head = parsed.messages[:cut]
    if len(start.messages) == cut and all(map(operator.is_, start.messages, head)):
        # The start's repair changed nothing (the usual kept start): what the whole
        # would lose is what the rest loses, so only the rest is looked through.
        conservation.check(parsed.messages[cut:], rest)
        return rest.messages
    whole = Repair(
        [*start.messages, *rest.messages],
        [*start.interrupted, *rest.interrupted],
        # Only the input indices count here (INT-1 removals), which _moved shifts right.
        [*start.actions, *(_moved(action, cut) for action in rest.actions)],
    )
    conservation.check(parsed.messages, whole)
    return rest.messages


def _stored_outputs(parsed: Parsed) -> int:
    """How many messages open a body that continues a stored history before any call of
    its own: its instructions, then results each answering a call the body does not
    hold (the stored response's); 0 when no such result opens it."""
    if not _stored_history(parsed):
        return 0
    messages = parsed.messages
    called = {call_id(c) for m in messages for c in _metadata(m).get("tool_calls") or ()}
    # The body's instructions (a Responses ``instructions`` field) come first as a
    # system message; the outputs the stored response waits for follow them.
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system":
        lead += 1
    count = 0
    for message in messages[lead:]:
        if message.get("role") != "tool" or call_id(_metadata(message)) in called:
            break
        count += 1
    return lead + count if count else 0


def _metadata(message: dict[str, Any]) -> dict[str, Any]:
    md = message.get("metadata")
    return md if isinstance(md, dict) else {}


def _shifted(kwargs: dict[str, Any], by: int) -> dict[str, Any]:
    """``repair_history``'s keywords for the messages from ``by`` on."""
    if "causes" in kwargs:
        causes = {at - by: cause for at, cause in kwargs["causes"].items() if at >= by}
        kwargs = {**kwargs, "causes": causes}
    return kwargs


def _moved(action: Action, by: int) -> Action:
    """``action`` of a repair of the messages from ``by`` on, as one of the whole."""
    fields = ("input_index", "output_index", "from_index", "turn_index")
    moved = {
        name: getattr(action, name) + by for name in fields if getattr(action, name) is not None
    }
    return dataclasses.replace(action, **moved)


def diagnose(parsed: Parsed, is_read_only: ReadOnly = None) -> Diagnosis:
    """Repair ``parsed``, lay the two histories out as rows and ask the four providers."""
    repair = repair_parsed(parsed, is_read_only)
    facts = message_facts(parsed)
    builder = Timeline(parsed, repair, facts)
    rows, findings = builder.build()
    glued = line_findings(parsed, rows, findings)
    renames: dict[str, dict[str, str]] = {}
    duplicates: dict[str, set[str]] = {}
    providers = provider_verdicts(
        parsed.messages,
        repair.messages,
        stored=_stored_history(parsed),
        renames=renames,
        unchecked=_unchecked_kinds(parsed),
        duplicates=duplicates,
    )
    shape = formats.FORMATS[parsed.format]
    if shape in formats.WIRE_FORMATS.values():  # a request body: its provider answers it
        accepted_reuse(findings, shape.PROVIDER, duplicates)
    # What the repair did, per rule (a glued line too); the export's rewritten ids
    # (ID-3) are findings as well, but not repairs.
    counts: dict[str, int] = {}
    for finding in findings:
        counts[finding["rule"]] = counts.get(finding["rule"], 0) + 1
    findings += export_findings(rows, renames)
    return Diagnosis(
        format=parsed.format,
        engine_version=ENGINE_VERSION,
        message_count=len(parsed.messages),
        repaired_count=len(repair.messages),
        needs_repair=bool(repair.actions) or glued,
        counts=counts,
        providers=providers,
        problems=[{"line": p.line, "reason": p.reason, "kind": p.kind} for p in parsed.problems],
        findings=findings,
        rows=rows,
        interrupted=[public_call(call) for call in repair.interrupted],
        meta=plain(parsed.meta)
        | ({"timing": totals(facts)} if any(facts) else {})
        | _first_prompt(rows),
    )


# A session is titled by its first prompt, this long at most, on one line.
TITLE_CHARS = 160
_SPACES = re.compile(r"\s+")


def _first_prompt(rows: Sequence[Row]) -> dict[str, str]:
    """``{"first_prompt": ...}``: the first thing the user typed, as the tables title the
    session by it; a message that opens with a tag (an agent's command or context
    wrapper, not words typed) is passed over."""
    for row in rows:
        if row["role"] != "user" or not row["in_original"]:
            continue
        text = _SPACES.sub(" ", row["text"] or "").strip()
        if not text or text.startswith("<"):
            continue
        if len(text) > TITLE_CHARS:
            text = text[: TITLE_CHARS - 1].rstrip() + "…"
        return {"first_prompt": text}
    return {}


def _unchecked_kinds(parsed: Parsed) -> list[str]:
    """The Responses item kinds the reader kept that no provider check reads."""
    kinds = parsed.meta.get("unchecked_kinds") if isinstance(parsed.meta, dict) else None
    return [k for k in kinds if isinstance(k, str)] if isinstance(kinds, list) else []


def _stored_history(parsed: Parsed) -> dict[str, Any]:
    """What names the history a request body continues on the provider's side, as the
    body names it (a Responses ``previous_response_id`` or ``conversation``), or ``{}``:
    the shape's ``stored_history`` hook says (``formats.base``)."""
    module = formats.FORMATS.get(parsed.format)
    if module is None or not formats.has_hook(module, "stored_history"):
        return {}
    return cast(StoredShape, module).stored_history(parsed)


def report(
    data: bytes,
    format: str = "auto",
    is_read_only: ReadOnly = None,
) -> dict[str, Any]:
    """Exactly what ``manage.py repair --report`` prints for these bytes."""
    parsed = formats.load(data, format)
    return report_from(diagnose(parsed, is_read_only))


def report_head(diagnosis: DiagnosisView) -> dict[str, Any]:
    """What every report of a diagnosis opens with (the owner's, a redacted share's)."""
    return {
        "format": diagnosis.format,
        "engine_version": diagnosis.engine_version,
        "messages": diagnosis.message_count,
        "repaired_messages": diagnosis.repaired_count,
        "needs_repair": diagnosis.needs_repair,
    }


def report_from(diagnosis: DiagnosisView) -> dict[str, Any]:
    return {
        **report_head(diagnosis),
        "findings": [
            {k: f[k] for k in ("rule", "message", "line", "text", "ids")}
            for f in diagnosis.findings
        ],
        "counts": diagnosis.counts,
        "providers": {
            name: {
                "before": [i["text"] for i in v["before"]],
                "after": [i["text"] for i in v["after"]],
            }
            for name, v in diagnosis.providers.items()
        },
        "problems": diagnosis.problems,
        "interrupted": diagnosis.interrupted,
        "meta": diagnosis.meta,
    }


def repaired_bytes(parsed: Parsed, fmt: str = "source", is_read_only: ReadOnly = None) -> bytes:
    """The repaired transcript: in its own shape (``source``) or canonical JSON."""
    repair = repair_parsed(parsed, is_read_only)
    if fmt == "canonical":
        return orjson.dumps(formats.strip_private(repair.messages), option=orjson.OPT_INDENT_2)
    if fmt != "source":
        raise ValueError(f"unknown output format {fmt!r}; use 'source' or 'canonical'")
    return formats.FORMATS[parsed.format].serialise(repair.messages, parsed)


# --- a whole file, as the web stores it --------------------------------------


@dataclass(slots=True)
class FileDiagnosis:
    """A file diagnosed whole: what the web stores of an upload.

    ``shown`` is the diagnosis of the conversation a timeline opens on (the
    file's only one, or the one its reader picks: a capture's main loop, else
    the first); ``conversations`` summarises each one of a file of several
    (``[]`` for one); ``parsed`` is every conversation as read.
    """

    format: str
    shown: Diagnosis
    conversations: list[dict[str, Any]]
    parsed: list[Parsed]


def diagnose_file(data: bytes, format: str = "auto") -> FileDiagnosis:
    """Read every conversation of ``data`` and diagnose it: the one call an upload makes.

    Raises ``formats.FormatError`` for bytes no shape reads and
    ``InvalidTranscript`` for a history the engine refuses.
    """
    every = formats.load_all(data, format)
    if len(every) == 1:
        return FileDiagnosis(every[0].format, diagnose(every[0]), [], every)
    keys = formats.conversation_keys(every[0])
    chosen = formats.chosen_key(every[0])
    shown = keys.index(chosen) if chosen in keys else 0
    diagnoses = diagnose_all(every)
    summaries = conversation_summaries(every, diagnoses)
    return FileDiagnosis(every[0].format, diagnoses[shown], summaries, every)


def diagnose_part(
    data: bytes, format: str, *, conversation: int | None = None, leaf: str | None = None
) -> Diagnosis:
    """One part of a stored file that is not stored with it, diagnosed on demand.

    ``conversation``: that conversation of a file of several (its key in
    ``conversation_summaries``); ``leaf``: the branch of a forked Claude Code
    session that ends at that record (its uuid, as ``meta["branches"]`` lists
    them). Raises ``formats.FormatError`` when the file has no such part.
    """
    return diagnose(formats.load_part(data, format, conversation=conversation, leaf=leaf))


# --- files of several conversations -------------------------------------------


def diagnose_all(parsed: Sequence[Parsed], is_read_only: ReadOnly = None) -> list[Diagnosis]:
    """One diagnosis per conversation of a file (``formats.load_all``'s list, in order)."""
    return [diagnose(one, is_read_only) for one in parsed]


def conversation_summaries(
    parsed: Sequence[Parsed], diagnoses: Sequence[DiagnosisView]
) -> list[dict[str, Any]]:
    """What a timeline lists of each conversation: which one, its size and its verdict.

    ``key`` is what ``parse(data, conversation=key)`` takes to read it again.
    """
    keys = formats.conversation_keys(parsed[0]) if len(parsed) > 1 else [0]
    return [
        {
            "key": key,
            "number": n,
            "messages": diagnosis.message_count,
            "needs_repair": diagnosis.needs_repair,
            "counts": dict(diagnosis.counts),
            "rejected_by": [name for name, v in diagnosis.providers.items() if v["before"]],
        }
        for n, (key, diagnosis) in enumerate(zip(keys, diagnoses, strict=True), 1)
    ]


def repaired_bytes_all(
    parsed: Sequence[Parsed], fmt: str = "source", is_read_only: ReadOnly = None
) -> bytes:
    """The whole file repaired: every conversation in it, in its own shape or canonical JSON.

    Canonical JSON of a file of several conversations is a list of them, each
    a list of messages.
    """
    if len(parsed) == 1:
        return repaired_bytes(parsed[0], fmt, is_read_only)
    repairs = [repair_parsed(one, is_read_only) for one in parsed]
    if fmt == "canonical":
        every = [formats.strip_private(repair.messages) for repair in repairs]
        return orjson.dumps(every, option=orjson.OPT_INDENT_2)
    if fmt != "source":
        raise ValueError(f"unknown output format {fmt!r}; use 'source' or 'canonical'")
    return formats.serialise_all(
        [(repair.messages, one) for repair, one in zip(repairs, parsed, strict=True)]
    )


def report_all(parsed: Sequence[Parsed], diagnoses: Sequence[DiagnosisView]) -> dict[str, Any]:
    """``report_from`` for a file: for several conversations, each one's report and the totals."""
    if len(diagnoses) == 1:
        return report_from(diagnoses[0])
    counts: dict[str, int] = {}
    for diagnosis in diagnoses:
        for rule, n in diagnosis.counts.items():
            counts[rule] = counts.get(rule, 0) + n
    summaries = conversation_summaries(parsed, diagnoses)
    return {
        "format": diagnoses[0].format,
        "engine_version": ENGINE_VERSION,
        "conversations": len(diagnoses),
        "conversations_needing_repair": sum(d.needs_repair for d in diagnoses),
        "needs_repair": any(d.needs_repair for d in diagnoses),
        "counts": counts,
        "each": [
            {"conversation": summary["number"], "key": summary["key"], **report_from(diagnosis)}
            for summary, diagnosis in zip(summaries, diagnoses, strict=True)
        ],
    }
