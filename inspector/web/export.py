"""A diagnosis as Markdown, to attach to an issue or send: no server needed to read it.

It says what the page's head says (the verdict, each provider's before and
after, every finding with its rule, message and line, the lines no reader
could read), from the same report the JSON download holds. Text from the
transcript is escaped for Markdown and HTML both, so a finding that quotes
markup renders as the text it is wherever the file is pasted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from inspector.engine import RULES
from inspector.web import words

# What Markdown reads as markup inside a line (no text here starts a line: "#", "-" and
# ">" cannot open a block); "<" and "&" are written as entities instead.
_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def _text(value: Any) -> str:
    """One line of transcript text, safe inside Markdown and inside a table cell."""
    flat = " ".join(str(value).split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;")
    return _SPECIAL.sub(r"\\\1", flat)


def _cut(value: str, limit: int = 300) -> str:
    return value if len(value) <= limit else value[: limit - 1].rstrip() + "…"


def markdown(
    name: str,
    report: Mapping[str, Any],
    provider_label: Callable[[str], str] = str,
    address: str = "",
) -> str:
    """``report`` (``diagnosis.report_from``'s) of the file ``name`` as a Markdown document."""
    meta = report.get("meta") or {}
    out = [f"# Transcript diagnosis: {_text(name)}", ""]
    if meta.get("first_prompt"):
        out += [f"> {_text(meta['first_prompt'])}", ""]
    facts = [f"shape {_text(report['format'])}", f"{report['messages']} messages"]
    if report.get("repaired_messages") != report["messages"]:
        facts[-1] += f" ({report['repaired_messages']} after repair)"
    if meta.get("session_id"):
        facts.append(f"session `{_text(meta['session_id'])}`")
    out += ["; ".join(facts) + ".", ""]
    findings = report.get("findings") or []
    if report["needs_repair"]:
        out.append(
            f"**This history needs repair.** {len(findings)} finding"
            f"{'s' if len(findings) != 1 else ''}; the repaired file answers every call "
            "exactly once and invents no event."
        )
    else:
        out.append("**Nothing to repair.** Every tool call is answered once, right after it.")
    out += ["", "## What each provider says", "", "| Provider | As it is | After repair |"]
    out.append("| --- | --- | --- |")
    for provider, verdict in (report.get("providers") or {}).items():
        cells = []
        for side in ("before", "after"):
            reasons = verdict.get(side) or []
            cells.append("accepted" if not reasons else "rejected: " + _cut(_text(reasons[0]), 200))
        out.append(f"| {_text(provider_label(provider))} | {cells[0]} | {cells[1]} |")
    if findings:
        out += ["", f"## Findings ({len(findings)})"]
        by_rule: dict[str, list[Mapping[str, Any]]] = {}
        for finding in findings:
            by_rule.setdefault(str(finding["rule"]), []).append(finding)
        for rule, listed in by_rule.items():
            title = words.title(RULES.get(rule), rule)
            out += ["", f"### {_text(rule)}: {_text(title)} ({len(listed)})", ""]
            for finding in listed:
                where = []
                if finding.get("message") is not None:
                    where.append(f"message {int(finding['message']) + 1}")
                if finding.get("line"):
                    where.append(f"line {finding['line']}")
                lead = ", ".join(where) or "inserted row"
                out.append(f"- {lead}: {_text(finding['text'])}")
    problems = report.get("problems") or []
    if problems:
        out += ["", f"## Lines no reader could read ({len(problems)})", ""]
        out += [
            f"- line {p['line']} ({_text(p['kind'])}): {_text(p['reason'])}" for p in problems[:200]
        ]
    trailer = f"Diagnosed by Transcript Inspector (engine {_text(report['engine_version'])})"
    out += ["", "---", "", trailer + (f": {address}" if address else "") + ".", ""]
    return "\n".join(out)
