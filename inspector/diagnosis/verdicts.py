"""Each provider's verdict on a history as it is and as repaired.

``provider_verdicts(before, after)`` is the one entry point: for each of the
four providers, the problems its check (``inspector.engine.providers``) finds
in the body ``inspector.formats`` would send for the original history, and
for the repaired one as our export writes it (ids the provider refuses
mapped, rule ID-3). ``export_findings`` turns those mapped ids into findings
on the timeline, so a verdict that changes between the two is always
explained by a row.

Making four full bodies of a long session costs more than reading it did, so
the work is shared: ``_Wires`` strips each message of its private keys once,
reuses what it made of an untouched message for the repaired body, and, for a
*regular* history, checks a skeleton body instead (``_skeleton``: the same
problems at the same indices, from one small digest per message). That fast
path is private to this module; ``tests/diagnosis/test_skeleton.py`` holds it
to the reference, ``providers.check(provider, formats.to_wire(...))``, over
generated histories and the corpus.

No Django, and no process-wide state: the caller decides whether to pause
the garbage collector around a diagnosis (``inspector.collector``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from inspector import formats
from inspector.diagnosis import _skeleton
from inspector.diagnosis.model import Finding, Issue, Row, Verdict
from inspector.engine.providers import (
    CANNOT_TELL,
    PROVIDERS,
    UNKNOWN_KIND,
    ProviderProblem,
    _validate_from,
    check,
    validate,
)
from inspector.formats.private import public, same_start


def provider_verdicts(
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    *,
    stored: dict[str, Any] | None = None,
    renames: dict[str, dict[str, str]] | None = None,
    unchecked: Sequence[str] = (),
    duplicates: dict[str, set[str]] | None = None,
) -> dict[str, Verdict]:
    """What each provider would answer to the history as it is and as repaired.

    The original goes out with its ids as they are (a Kimi id is a real
    Anthropic rejection); the repaired history goes out the way our export
    writes it, with ids the provider's pattern rejects mapped.

    Each verdict is ``{"before": issues, "after": issues}``. ``stored``
    names the response a Responses body continues (``previous_response_id``):
    part of its history is on the provider's side, so where the body shows
    no problem Responses' verdict is "cannot tell", and the verdict also
    holds ``undecided_before`` and ``undecided_after``: a list of the one reason
    (every value of a verdict is a list, as the cached diagnosis stores it).

    ``renames``, when given, gets each provider's ``{old id: new id}`` for the
    ids its export rewrites (ID-3).

    ``duplicates``, when given, gets for each provider the ids its check of the
    history as it is refuses as used twice (so a finding can say which
    provider takes a reused id as it is).

    ``unchecked`` names the Responses item kinds the file holds that no check
    reads (``meta["unchecked_kinds"]``): the export leaves them out, so the
    Responses verdict carries a note for each, before and after, rather than
    an "accepted" that says nothing of them.
    """
    verdicts: dict[str, Verdict] = {}
    # Repair returns untouched messages as the same objects: when nothing
    # changed and no id needs mapping, the export is the same wire and needs
    # no second check (the common, healthy case). Otherwise ``Wires`` reuses
    # what it made of each untouched message for the repaired history.
    wires = _Wires(before, after)
    unchanged = len(before) == len(after) == wires.shared()
    for provider in PROVIDERS:
        problems = wires.problems_before(provider)
        if duplicates is not None:
            duplicates[provider] = _reused(problems)
        found_before = [_issue(p) for p in problems]
        if unchanged and not found_before:
            found_after: list[Issue] = []
        elif unchanged and not wires.renamed(provider):
            found_after = [Issue(**issue) for issue in found_before]
        else:
            found_after = [_issue(p) for p in wires.problems_after(provider)]
        verdicts[provider] = {"before": found_before, "after": found_after}
        if renames is not None and wires.renamed(provider):
            renames[provider] = wires.renamed(provider)
    if stored:
        first = check("responses", {**wires.before("responses"), **stored})
        then = check("responses", {**wires.after("responses"), **stored})
        stateful: Verdict = {
            "before": [_issue(p) for p in first.problems],
            "after": [_issue(p) for p in then.problems],
        }
        if duplicates is not None:
            duplicates["responses"] = _reused(first.problems)
        if first.state == CANNOT_TELL:
            stateful["undecided_before"] = [first.reason]
        if then.state == CANNOT_TELL:
            stateful["undecided_after"] = [then.reason]
        verdicts["responses"] = stateful
    if unchecked:
        left_out = "(kept in the file, left out of the export)"
        said = [f"{UNKNOWN_KIND.format(kind=kind)} {left_out}" for kind in unchecked]
        responses = verdicts["responses"]
        responses["notes_before"] = [*responses.get("notes_before", []), *said]
        responses["notes_after"] = [*responses.get("notes_after", []), *said]
    return verdicts


PROVIDER_NAMES = {
    "openai-chat": "OpenAI Chat",
    "anthropic": "Anthropic",
    "responses": "OpenAI Responses",
    "gemini": "Gemini",
}


def export_findings(rows: list[Row], renames: dict[str, dict[str, str]]) -> list[Finding]:
    """An ID-3 finding for each id some provider's export rewrites, on the row of its call.

    Such an id changes that provider's verdict between the history as it is
    and as exported after repair even where nothing needed repair: the
    finding says which provider refuses it and what it is sent as.
    """
    if not renames:
        return []
    by_id: dict[str, list[str]] = {}
    new_ids: dict[str, list[str]] = {}  # named in the finding, so a redacted share masks them
    refused: set[str] = set()  # not only an id an earlier call's new id took
    for provider, renamed in renames.items():
        given = set(renamed.values())
        for old, new in renamed.items():
            by_id.setdefault(old, []).append(f"{PROVIDER_NAMES.get(provider, provider)} as {new}")
            new_ids.setdefault(old, []).append(new)
            if old not in given:
                refused.add(old)
    found: list[Finding] = []
    for row in rows:
        for call in row.get("calls") or ():
            cid = call.get("new_id") or call.get("id")
            sent = by_id.pop(cid, None)
            if sent is None:
                continue
            shown = cid or "(no id)"
            if "ID-3" not in row["findings"]:
                row["findings"] = [*row["findings"], "ID-3"]
            found.append(
                {
                    "rule": "ID-3",
                    "row": row["key"],
                    "text": (
                        f"call id {shown} is refused by a provider: the export sends it to "
                        if cid in refused
                        else f"call id {shown} is an earlier call's new id: the export sends it to "
                    )
                    + "; ".join(sent),
                    "ids": [cid, *dict.fromkeys(new_ids.get(cid, []))],
                    "message": row["input_index"],
                    "line": row["lines"][0] if row["lines"] else None,
                }
            )
    return found


def _reused(problems: Sequence[ProviderProblem]) -> set[str]:
    """The ids ``problems`` refuse as used twice (a call's, an item's or a result's)."""
    return {cid for p in problems if p.code.startswith("duplicate") for cid in p.ids}


def accepted_reuse(findings: list[Finding], provider: str, duplicates: dict[str, set[str]]) -> None:
    """Say on each ID-1 finding when ``provider``, the one the file is written for, takes
    the reused id as it is: the repair renames it for the providers that refuse it."""
    if provider not in duplicates:
        return
    refused = duplicates[provider]
    name = PROVIDER_NAMES.get(provider, provider)
    for finding in findings:
        if finding["rule"] != "ID-1" or refused.intersection(finding["ids"]):
            continue
        others = [
            PROVIDER_NAMES.get(other, other)
            for other, ids in duplicates.items()
            if other != provider and ids.intersection(finding["ids"])
        ]
        why = (
            f"for {', '.join(others)}, which refuse{'s' if len(others) == 1 else ''} it"
            if others
            else "so that every call's id is its own, as the repair rules ask"
        )
        finding["text"] += (
            f" {name}, which this file is written for, takes the id as it is: the new id is {why}."
        )


def _issue(problem: ProviderProblem) -> Issue:
    return {"path": problem.path, "index": problem.index, "text": problem.text}


class _Wires:
    """Each provider's body for a history as it is and as repaired, made with shared work.

    ``before(provider)`` is ``to_wire(before, provider)``, ``after(provider)``
    is ``export_wire(after, provider)[0]`` and ``renamed(provider)`` its
    second value. Repair hands back untouched messages as the same objects,
    so each message is stripped of private keys once and converted once per
    provider (the repaired body reuses the original's pieces), and the ids
    are collected once. The pieces, and the maps ``renamed`` gives, are shared
    between the bodies: read them, do not change them.

    With ``for_checks=True`` a regular history (``_skeleton``)
    gets the skeleton of the body instead: a provider check finds in it what
    it finds in the body, at a fraction of the cost. Never send a skeleton.
    ``problems_before`` and ``problems_after`` check the bodies so, starting
    after a regular history's quiet prefix.
    """

    def __init__(self, before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
        # Both histories are held, so their messages' ids stay unique while they
        # key the memos. Checks on skeletons read no private key, and never strip.
        self._originals = before
        self._repaired = after
        self._stripped: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._ids: list[str] | None = None
        self._renamed: dict[tuple[re.Pattern[str] | None, int | None], dict[str, str]] = {}
        self._histories: dict[int, list[_skeleton.Digest] | None] = {}
        self._walks: dict[int, _skeleton.Walk] = {}
        self._shared_count: int | None = None
        # A history that is not regular: the digests of its regular start, their walk
        # and the ids of the messages after it.
        self._starts: dict[
            int, tuple[list[_skeleton.Digest], _skeleton.Walk | None, list[str]]
        ] = {}
        # The pieces of one provider at a time: a 100,000-message history's pieces
        # for every provider at once would hold millions of objects.
        self._memo: tuple[str, dict[Any, Any]] = ("", {})

    def before(self, provider: str, *, for_checks: bool = False) -> Any:
        """The body of the history as it is; ``for_checks``: maybe only its skeleton."""
        if for_checks:
            history = self._digests(0, self._originals)
            if history is not None:
                formats.wire_module(provider)  # an unknown provider is an error here too
                return _skeleton.body(provider, history, {}, self._walk(0))
        clean, _ = self._clean()
        return formats.wire_module(provider).to_wire(clean, memo=self._memo_for(provider))

    def after(self, provider: str, *, for_checks: bool = False) -> Any:
        """The body of the repaired history; ``for_checks``: maybe only its skeleton."""
        renamed = self.renamed(provider)
        if for_checks:
            history = self._digests(1, self._repaired)
            if history is not None:
                return _skeleton.body(provider, history, renamed, self._walk(1))
        _, clean = self._clean()
        messages = [formats.renamed_message(m, renamed) for m in clean] if renamed else clean
        return formats.wire_module(provider).to_wire(messages, memo=self._memo_for(provider))

    def problems_before(self, provider: str) -> list[ProviderProblem]:
        """``validate(provider, self.before(provider))``, as cheaply as it can be found."""
        return self._problems(provider, 0, self._originals, {})

    def problems_after(self, provider: str) -> list[ProviderProblem]:
        """``validate(provider, self.after(provider))``, as cheaply as it can be found."""
        return self._problems(provider, 1, self._repaired, self.renamed(provider))

    def _problems(
        self, provider: str, which: int, messages: list[dict[str, Any]], renamed: dict[str, str]
    ) -> list[ProviderProblem]:
        history = self._digests(which, messages)
        if history is None:
            found = self._problems_after_quiet_start(provider, which, messages, renamed)
            if found is None:
                found = self._problems_after_regular_start(provider, which, renamed)
            if found is not None:
                return found
            wire = self.after(provider) if which else self.before(provider)
            return validate(provider, wire)
        formats.wire_module(provider)  # an unknown provider is an error here too
        wire, start = _skeleton.quiet_body(provider, history, renamed, self._walk(which))
        return _validate_from(provider, wire, start)

    def _problems_after_quiet_start(
        self, provider: str, which: int, messages: list[dict[str, Any]], renamed: dict[str, str]
    ) -> list[ProviderProblem] | None:
        """The problems of a history that is not regular but opens with quiet turns (most
        of a long session before its first image, say): those stand in the body as a
        regular history's quiet prefix does, and the real body is made of the rest only,
        which starts with a user's message after an assistant's reply (no body merges the
        two, so the rest's body is the whole body's end). ``None`` when there are none."""
        if which not in self._starts:
            start = _skeleton.regular_start(messages)
            found = _skeleton.walk(start) if start else None
            if found is not None and not any(0 < cut.at < len(start) for cut in found.cuts):
                found = None  # no quiet turn ends before the first message not regular
            later = formats.history_ids(messages[len(start) :]) if found is not None else []
            self._starts[which] = (start, found, later)
        start, found, later = self._starts[which]
        if found is None:
            return None
        if renamed:
            start = _skeleton.renamed_digests(start, renamed)
            found = _skeleton.walk(start)
            later = [renamed.get(cid, cid) for cid in later]
        length, items = _skeleton.quiet_start(provider, start, set(later), found)
        if not length:
            return None
        rest = self._clean()[which][length:]
        if renamed:
            rest = [formats.renamed_message(m, renamed) for m in rest]
        wire = formats.wire_module(provider).to_wire(rest, memo=self._memo_for(provider))
        key = _skeleton._KEYS[provider]
        wire[key] = [_skeleton._STAND_IN[provider]] * items + wire[key]
        return _validate_from(provider, wire, items)

    def _problems_after_regular_start(
        self, provider: str, which: int, renamed: dict[str, str]
    ) -> list[ProviderProblem] | None:
        """The problems of a history that is not regular but opens with regular messages
        that a user's message after an assistant's reply ends (a long session with an image
        in its last prompt, say): the body's items for the messages before that user's are
        their skeleton's, and the real body is made of the rest only, which no body merges
        with what comes before (as after a quiet start). ``None`` when there is no such
        user's message among the regular ones. Called after ``_problems_after_quiet_start``,
        which found the regular start."""
        start = self._starts[which][0]
        cut = _skeleton.turn_cut(start)
        if not cut:
            return None
        head = start[:cut]
        rest = self._clean()[which][cut:]
        if renamed:
            head = _skeleton.renamed_digests(head, renamed)
            rest = [formats.renamed_message(m, renamed) for m in rest]
        wire = formats.wire_module(provider).to_wire(rest, memo=self._memo_for(provider))
        key = _skeleton._KEYS[provider]
        wire[key] = _skeleton.head_items(provider, head) + wire[key]
        return validate(provider, wire)

    def renamed(self, provider: str) -> dict[str, str]:
        if self._ids is None:
            # Private keys hold no ids; a regular history's digests hold them all.
            history = self._digests(1, self._repaired)
            if history is None:
                self._ids = formats.history_ids(self._repaired)
            else:  # its walk has the ids of its quiet prefix
                self._ids = _skeleton.ids(history, self._walk(1))
        formats.wire_module(provider)  # an unknown provider is an error here too
        # Found once for the providers that accept the same ids.
        key = formats.id_rules(provider)
        if key not in self._renamed:
            self._renamed[key] = formats.rename_map(self._ids, *key)
        return self._renamed[key]

    def _clean(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Both histories stripped of private keys, once for every provider.

        The repaired history reuses the stripped copies of the messages it
        shares, so the pieces made of them are shared too.
        """
        if self._stripped is None:
            before = formats.strip_private(self._originals)
            clean = {id(m): c for m, c in zip(self._originals, before, strict=True)}
            after = [
                c if (c := clean.get(id(m))) is not None else public(m) for m in self._repaired
            ]
            self._stripped = (before, after)
        return self._stripped

    def _digests(self, which: int, messages: list[dict[str, Any]]) -> list[_skeleton.Digest] | None:
        # Made once per history for the four providers.
        if which not in self._histories:
            original = self._histories.get(0) if which else None
            if original is None:
                self._histories[which] = _skeleton.digests(messages)  # none made yet to reuse
            else:
                # The repaired history starts with the original's messages, up
                # to the first repair: their digests are the original's. Most
                # of the rest are the original's later messages, kept.
                shared = self.shared()
                leading = not shared or original[shared - 1][0] == "system"
                later = self._originals[shared:]
                memo: _skeleton.Memo = dict(zip(map(id, later), original[shared:], strict=True))
                rest = _skeleton.digests(messages[shared:], memo, leading)
                self._histories[which] = None if rest is None else original[:shared] + rest
        return self._histories[which]

    def shared(self) -> int:
        """How many messages the repaired history starts with that are the original's."""
        if self._shared_count is None:
            self._shared_count = same_start(self._originals, self._repaired)
        return self._shared_count

    def _walk(self, which: int) -> _skeleton.Walk | None:
        """The walk of a regular history, made once for the four providers."""
        history = self._histories.get(which)
        if history is None:
            return None
        if which not in self._walks:
            resume = None
            if which and (first := self._walk(0)) is not None:
                # The repaired history shares the original's messages up to the
                # first repair, and so their digests: walk on from there.
                resume = (first, self.shared())
            self._walks[which] = _skeleton.walk(history, resume)
        return self._walks[which]

    def _memo_for(self, provider: str) -> dict[Any, Any]:
        if self._memo[0] != provider:
            self._memo = (provider, {})
        return self._memo[1]
