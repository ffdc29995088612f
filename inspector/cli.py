"""``transcript-inspector``: check, report, repair and fix sessions, with no server.

    transcript-inspector list [--broken]          sessions on this machine, newest first
    transcript-inspector check FILE...            the verdict of each file
    transcript-inspector report FILE [--json]     the diagnosis, readable or as JSON
                          [--html [--redacted] | --markdown]  or as the web's one-file exports
    transcript-inspector repair FILE [-o OUT]     the repaired file, in its own shape
    transcript-inspector fix [SESSION-ID | PATH]  repair a session in place (--dry-run, --undo)

Exit status: 0 clean, 1 repaired or needs repair, 2 bad input; ``fix``: 0 fixed
(or clean, or undone), 1 a dry run found something to repair, 2 refused or
failed, so ``fix ID && claude --resume ID`` resumes only a repaired session. It runs on the
pure core alone (``inspector.engine``, ``formats``, ``diagnosis``, ``local``):
no Django, no database. ``manage.py repair`` runs ``repair`` from here. The one
exception is asked for by name: ``report --html`` and ``--markdown`` write the web
page's own exports, so they load ``inspector.offline`` (Django's templates, no
database, no server) by its name, when asked and not before.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import orjson

from inspector import collector, formats
from inspector.diagnosis import (
    DiagnosisView,
    diagnose_all,
    read_only_predicate,
    repaired_bytes_all,
    report_all,
    report_from,
)
from inspector.diagnosis.select import finding_place
from inspector.engine import InvalidTranscript
from inspector.local import agents, fix, sessions

CLEAN, NEEDS_REPAIR, BAD_INPUT = 0, 1, 2
FORMAT_CHOICES = ["auto", *formats.FORMATS]


class _BadInput(Exception):
    """Input the command cannot use; the message is the one line printed on stderr."""


def main(argv: Sequence[str] | None = None, stdout: IO[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return main_with(args.run, args, stdout or sys.stdout)


def main_with(
    run: Callable[[argparse.Namespace, IO[str]], int], args: argparse.Namespace, out: IO[str]
) -> int:
    """Run one command: its exit status, or 2 with one line on stderr for bad input."""
    try:
        # A command reads and diagnoses whole sessions: the collector's passes over
        # what it builds would free nothing (``inspector.collector``).
        with collector.paused():
            return int(run(args, out))
    except _BadInput as error:
        sys.stderr.write(f"{args.command}: {error}\n")
        return BAD_INPUT
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; nothing more was changed\n")
        return BAD_INPUT


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="transcript-inspector",
        description="Find and repair broken tool-call pairing in saved agent sessions.",
        epilog="Exit status: 0 clean, 1 repaired or needs repair, 2 bad input. fix: 0 fixed "
        "or clean, 1 a dry run would fix, 2 refused or failed.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    listing = commands.add_parser("list", help="the sessions on this machine, newest first")
    listing.add_argument("--broken", action="store_true", help="only those that need repair")
    listing.add_argument("--limit", type=int, default=0, help="at most this many (0: all)")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    _root_option(listing)
    listing.set_defaults(run=run_list)

    checking = commands.add_parser("check", help="the verdict of each file")
    checking.add_argument("files", nargs="+", metavar="FILE")
    checking.add_argument("--format", default="auto", choices=FORMAT_CHOICES)
    checking.set_defaults(run=run_check)

    reporting = commands.add_parser("report", help="what is wrong with a file, and the repair")
    reporting.add_argument("file", metavar="FILE", help="a transcript, or - for standard input")
    output = reporting.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="the report as JSON")
    output.add_argument(
        "--html",
        action="store_true",
        help="the timeline as one self-contained HTML file (credentials masked), to attach or send",
    )
    output.add_argument(
        "--markdown", action="store_true", help="the diagnosis as Markdown, to paste in an issue"
    )
    reporting.add_argument(
        "--redacted",
        action="store_true",
        help="with --html: every text replaced by its length, as a redacted share",
    )
    reporting.add_argument(
        "--conversation",
        type=int,
        default=0,
        metavar="N",
        help="with --html, of a file of several conversations: the Nth "
        "(default: the first that needs repair)",
    )
    reporting.add_argument("--format", default="auto", choices=FORMAT_CHOICES)
    _read_only_option(reporting)
    reporting.set_defaults(run=run_report)

    repairing = commands.add_parser("repair", help="write the repaired file (it never edits FILE)")
    add_repair_arguments(repairing)
    repairing.set_defaults(run=run_repair)

    fixing = commands.add_parser("fix", help="repair a session in place, with a backup")
    fixing.add_argument(
        "target", nargs="?", metavar="SESSION-ID|PATH", help="omit to choose among broken ones"
    )
    fixing.add_argument("--dry-run", action="store_true", help="show what would change")
    fixing.add_argument("--undo", action="store_true", help="restore the last backup")
    fixing.add_argument("--force", action="store_true", help="with --undo: even if it changed")
    fixing.add_argument("--backup-dir", type=Path, help="keep backups here, not beside the file")
    fixing.add_argument(
        "--quiet-seconds",
        type=float,
        default=fix.QUIET_SECONDS,
        help="refuse a file written to more recently than this (default %(default)s)",
    )
    _root_option(fixing)
    fixing.set_defaults(run=run_fix)
    return parser


def add_repair_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``repair`` takes here and in ``manage.py repair``."""
    parser.add_argument("file", help="transcript file, or - for standard input")
    parser.add_argument("--format", default="auto", choices=FORMAT_CHOICES)
    _read_only_option(parser)
    parser.add_argument("--report", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--text",
        action="store_true",
        help="with --report: the report as a person reads it, not JSON",
    )
    parser.add_argument(
        "--canonical", action="store_true", help="write canonical JSON, not the source shape"
    )
    parser.add_argument("--output", "-o", help="write the repaired transcript here")


def _read_only_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--read-only",
        default="",
        metavar="NAME[,NAME]",
        help="tools that only read: their synthetic results say they are safe to call again",
    )


def _root_option(parser: argparse.ArgumentParser) -> None:
    names = ", ".join(agent.name for agent in agents.AGENTS)
    parser.add_argument(
        "--root",
        action="append",
        default=[],
        metavar="AGENT=DIR",
        help=f"look for AGENT's sessions in DIR (agents: {names})",
    )


# --- repair, report, check ----------------------------------------------------------


def run_repair(args: argparse.Namespace, out: IO[str]) -> int:
    """Exactly what ``manage.py repair`` has always done; the bytes go to stdout or --output.

    A file of several conversations is repaired whole: every conversation in it.
    """
    every = _load_all(args.file, args.format)
    is_read_only = read_only_predicate(args.read_only.split(","))
    try:
        diagnoses = diagnose_all(every, is_read_only)
        if args.report and getattr(args, "text", False):
            text = (
                text_report(diagnoses[0], args.file)
                if len(diagnoses) == 1
                else _conversations_text(args.file, diagnoses)
            )
            data = text.encode()
        elif args.report:
            data = orjson.dumps(report_all(every, diagnoses), option=orjson.OPT_INDENT_2) + b"\n"
        else:
            fmt = "canonical" if args.canonical else "source"
            data = repaired_bytes_all(every, fmt, is_read_only)
    except InvalidTranscript as error:
        raise _BadInput(sessions.first_line(str(error))) from None
    if args.output and not args.report:
        Path(args.output).write_bytes(data)
    else:
        _write_bytes(out, data)
    return NEEDS_REPAIR if any(d.needs_repair for d in diagnoses) else CLEAN


def run_report(args: argparse.Namespace, out: IO[str]) -> int:
    every = _load_all(args.file, args.format)
    try:
        diagnoses = diagnose_all(every, read_only_predicate(args.read_only.split(",")))
    except InvalidTranscript as error:
        raise _BadInput(sessions.first_line(str(error))) from None
    if args.redacted and not args.html:
        raise _BadInput("--redacted goes with --html")
    if args.conversation and not args.html:
        raise _BadInput("--conversation goes with --html")
    if args.json:
        report = report_all(every, diagnoses)
        _write_bytes(out, orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    elif args.html or args.markdown:
        _write_bytes(out, _export(args, diagnoses).encode())
    elif len(diagnoses) == 1:
        out.write(text_report(diagnoses[0], args.file))
    else:
        out.write(_conversations_text(args.file, diagnoses))
        for n, diagnosis in enumerate(diagnoses, 1):
            if diagnosis.needs_repair:
                out.write("\n" + text_report(diagnosis, f"{args.file}, conversation {n}"))
    return NEEDS_REPAIR if any(d.needs_repair for d in diagnoses) else CLEAN


def _export(args: argparse.Namespace, diagnoses: Sequence[DiagnosisView]) -> str:
    """The web's HTML or Markdown export of the file's diagnosis (see the module's doc)."""
    offline = importlib.import_module("inspector.offline")
    name = "standard input" if args.file == "-" else Path(args.file).name
    if args.markdown:
        if len(diagnoses) == 1:
            return str(offline.markdown(report_from(diagnoses[0]), name))
        return "\n".join(
            offline.markdown(report_from(d), f"{name}, conversation {n}")
            for n, d in enumerate(diagnoses, 1)
        )
    if args.conversation:
        if not 1 <= args.conversation <= len(diagnoses):
            raise _BadInput(f"{name} has {len(diagnoses)} conversation(s), not {args.conversation}")
        chosen = args.conversation
    else:
        chosen = next((n for n, d in enumerate(diagnoses, 1) if d.needs_repair), 1)
    if len(diagnoses) > 1:
        name = f"{name}, conversation {chosen}"
    return str(offline.html(diagnoses[chosen - 1], name, args.redacted))


def run_check(args: argparse.Namespace, out: IO[str]) -> int:
    worst = CLEAN
    for name in args.files:
        try:
            every = _load_all(name, args.format)
            diagnoses = diagnose_all(every)
        except (_BadInput, InvalidTranscript) as error:
            out.write(f"{name}: unreadable: {error}\n")
            worst = BAD_INPUT
            continue
        out.write(f"{name}: {_file_verdict(diagnoses)}\n")
        if any(d.needs_repair for d in diagnoses):
            worst = max(worst, NEEDS_REPAIR)
    return worst


def _file_verdict(diagnoses: Sequence[DiagnosisView]) -> str:
    if len(diagnoses) == 1:
        return _verdict_words(diagnoses[0])
    broken = [d for d in diagnoses if d.needs_repair]
    if not broken:
        return f"clean ({len(diagnoses)} conversations)"
    counts: dict[str, int] = {}
    for diagnosis in broken:
        for rule, n in diagnosis.counts.items():
            counts[rule] = counts.get(rule, 0) + n
    rules = ", ".join(f"{rule} x{n}" for rule, n in sorted(counts.items()))
    return f"needs repair in {len(broken)} of {len(diagnoses)} conversations ({rules})"


def _conversations_text(name: str, diagnoses: Sequence[DiagnosisView]) -> str:
    lines = [f"{name}: {diagnoses[0].format}, {len(diagnoses)} conversations"]
    lines.append(f"Verdict: {_file_verdict(diagnoses)}")
    for n, diagnosis in enumerate(diagnoses, 1):
        lines.append(
            f"  {n:>4}. {diagnosis.message_count:>6,} messages  {_verdict_words(diagnosis)}"
        )
    return "\n".join(lines) + "\n"


def text_report(diagnosis: DiagnosisView, name: str) -> str:
    """The report a person reads in a terminal: verdict, findings, provider answers."""
    lines = [f"{name}: {diagnosis.format}, {diagnosis.message_count:,} messages"]
    lines.append(f"Verdict: {_verdict_words(diagnosis)}")
    if diagnosis.findings:
        lines.append("")
        lines.append("Findings:")
        for finding in diagnosis.findings:
            lines.append(f"  {finding['rule']:<8} {finding_place(finding):<24} {finding['text']}")
    lines.append("")
    lines.append("Providers (as uploaded -> after repair):")
    for provider, verdict in diagnosis.providers.items():
        before = "rejects" if verdict["before"] else "accepts"
        after = "rejects" if verdict["after"] else "accepts"
        lines.append(f"  {provider:<12} {before} -> {after}")
        for issue in verdict["before"][:3]:
            lines.append(f"    {issue['text']}")
    if diagnosis.problems:
        lines.append("")
        lines.append("Lines not read:")
        for problem in diagnosis.problems:
            lines.append(f"  line {problem['line']}: {problem['reason']}")
    return "\n".join(lines) + "\n"


def _verdict_words(diagnosis: DiagnosisView) -> str:
    if not diagnosis.needs_repair:
        return "clean"
    counts = ", ".join(f"{rule} x{n}" for rule, n in sorted(diagnosis.counts.items()))
    return f"needs repair ({counts})"


def _load_all(name: str, fmt: str) -> list[formats.Parsed]:
    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        return formats.load_all(data, fmt)
    except OSError as error:
        raise _BadInput(f"{name}: {error.strerror or error}") from None
    except (formats.FormatError, InvalidTranscript) as error:
        raise _BadInput(sessions.first_line(str(error))) from None


def _write_bytes(out: IO[str], data: bytes) -> None:
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        buffer.write(data)
        buffer.flush()
    else:
        out.write(data.decode("utf-8"))


# --- list and fix ---------------------------------------------------------------------


def _folders(args: argparse.Namespace) -> list[tuple[agents.Agent, Path]]:
    overrides: dict[str, Path] = {}
    for item in args.root:
        name, sep, folder = item.partition("=")
        if not sep or name not in agents.BY_NAME:
            known = ", ".join(agents.BY_NAME)
            raise _BadInput(f"--root takes AGENT=DIR with AGENT one of {known}, not {item!r}")
        overrides[name] = Path(folder).expanduser()
    return sessions.roots(overrides)


def run_list(args: argparse.Namespace, out: IO[str]) -> int:
    found, warnings = sessions.find(_folders(args))
    for warning in warnings:
        sys.stderr.write(f"warning: {warning}\n")
    cache = sessions.VerdictCache()
    shown = 0
    broken = 0
    try:
        for session in found:
            verdict = cache.verdict(session)
            if verdict.needs_repair:
                broken += 1
            elif args.broken:
                continue
            if args.json:
                out.write(orjson.dumps(_session_record(session, verdict)).decode() + "\n")
            else:
                out.write(_session_line(session, verdict) + "\n")
            shown += 1
            if args.limit and shown >= args.limit:
                break
    finally:
        cache.save()
    if not args.json:
        summary = (
            f"{shown} need repair" if args.broken else f"{shown} sessions, {broken} need repair"
        )
        out.write(summary + "\n")
    return NEEDS_REPAIR if broken else CLEAN


def _session_line(session: sessions.Session, verdict: sessions.Verdict) -> str:
    when = datetime.fromtimestamp(session.mtime).strftime("%Y-%m-%d %H:%M")
    words = f"unreadable: {verdict.error}" if verdict.error else verdict.verdict
    if verdict.counts:
        words += " (" + ", ".join(f"{r} x{n}" for r, n in sorted(verdict.counts.items())) + ")"
    head = f"{when}  {session.agent.label:<11} {verdict.session_id}  {words}"
    titled = f"\n    “{_short(verdict.title)}”" if verdict.title else ""
    return f"{head}{titled}\n    {session.path}"


def _short(title: str, limit: int = 100) -> str:
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


def _session_record(session: sessions.Session, verdict: sessions.Verdict) -> dict[str, Any]:
    return {
        "agent": session.agent.name,
        "session": verdict.session_id,
        "path": str(session.path),
        "modified": datetime.fromtimestamp(session.mtime).isoformat(timespec="seconds"),
        "bytes": session.size,
        "verdict": verdict.verdict,
        "counts": verdict.counts,
        "error": verdict.error,
        "resume": verdict.resume,
        "title": verdict.title,
    }


def run_fix(args: argparse.Namespace, out: IO[str]) -> int:
    folders = _folders(args)
    path, agent = _target(args.target, folders, out)
    if path is None:
        return BAD_INPUT
    if args.undo:
        outcome = fix.undo(path, backup_dir=args.backup_dir, force=args.force)
        out.write(f"{outcome.reason}\n" if outcome.changed_file else "")
        if not outcome.changed_file:
            raise _BadInput(outcome.reason)
        return CLEAN
    outcome = fix.fix(
        path,
        agent,
        dry_run=args.dry_run,
        backup_dir=args.backup_dir,
        quiet_seconds=args.quiet_seconds,
    )
    if outcome.status in ("refused", "failed"):
        raise _BadInput(outcome.reason)
    if outcome.status == "clean":
        out.write(f"{path}: clean, nothing to repair; nothing was changed.\n")
        _resume_line(outcome, out)
        return CLEAN
    checked = outcome.checked
    assert checked is not None and checked.diagnosis is not None
    verb = "Would fix" if args.dry_run else "Fixed"
    out.write(f"{verb} {path}\n")
    for finding in checked.diagnosis.findings:
        where = f"line {finding['line']}: " if finding.get("line") else ""
        out.write(f"  {finding['rule']:<8} {where}{finding['text']}\n")
    touched = len(outcome.touched)
    if outcome.records:  # a session in OpenCode's database
        out.write(
            f"  {touched} row{'s' if touched != 1 else ''} of the session rewritten or removed, "
            f"{outcome.added} added, in one transaction; every other row is as it was:\n"
        )
        out.write("".join(f"    {record}\n" for record in outcome.records))
    elif outcome.files:  # a session of many files (OpenCode's storage)
        out.write(
            f"  {touched} file{'s' if touched != 1 else ''} of the session rewritten or removed, "
            f"{outcome.added} added; every other file is as it was:\n"
        )
        out.write("".join(f"    {name}\n" for name in outcome.files))
    else:
        out.write(
            f"  {touched} line{'s' if touched != 1 else ''} rewritten or removed, "
            f"{outcome.added} added; every other line is byte for byte as it was.\n"
        )
    if args.dry_run:
        out.write("Dry run: nothing was written.\n")
    else:
        out.write(f"Backup: {outcome.backup}  (undo: transcript-inspector fix --undo {path})\n")
    _resume_line(outcome, out)
    # Fixed is success (so ``fix ID && claude --resume ID`` resumes); a dry run reports, as check.
    return NEEDS_REPAIR if args.dry_run else CLEAN


def _resume_line(outcome: fix.Outcome, out: IO[str]) -> None:
    command = outcome.checked.resume_command() if outcome.checked else None
    if command:
        out.write(f"Resume it with:\n  {command}\n")


def _target(
    target: str | None, folders: list[tuple[agents.Agent, Path]], out: IO[str]
) -> tuple[Path | None, agents.Agent | None]:
    """The session file ``target`` names (a path or an id); with none, ask which broken one."""
    if target:
        as_path = Path(target).expanduser()
        if as_path.is_file():
            return as_path, sessions.agent_for(as_path, folders)
        found, _ = sessions.find(folders)
        matches = [s for s in found if _names(s, target)]
        if not matches:
            raise _BadInput(f"no session file or id {target!r} (looked in {_where(folders)})")
        if len(matches) > 1:
            listed = "\n  ".join(str(s.path) for s in matches)
            raise _BadInput(f"{target!r} names {len(matches)} sessions; give a path:\n  {listed}")
        return matches[0].path, matches[0].agent
    found, _ = sessions.find(folders)
    cache = sessions.VerdictCache()
    try:
        verdicts = [(s, cache.verdict(s)) for s in found]
    finally:
        cache.save()
    broken = [s for s, verdict in verdicts if verdict.needs_repair]
    titles = {s.path: verdict.title for s, verdict in verdicts}
    if not broken:
        out.write(f"No session needs repair (looked in {_where(folders)}).\n")
        return None, None
    out.write("Sessions that need repair, newest first:\n")
    for n, session in enumerate(broken, 1):
        title = titles.get(session.path)
        out.write(f"  {n}. {session.agent.label}: {f'“{_short(title)}” ' if title else ''}")
        out.write(f"{session.path}\n")
    if not sys.stdin.isatty():
        raise _BadInput("name one: transcript-inspector fix PATH")
    answer = input(f"Fix which one? [1-{len(broken)}, Enter for none] ").strip()
    if not answer.isdigit() or not 1 <= int(answer) <= len(broken):
        out.write("Nothing was changed.\n")
        return None, None
    chosen = broken[int(answer) - 1]
    return chosen.path, chosen.agent


def _names(session: sessions.Session, target: str) -> bool:
    stem = session.path.stem
    # A session that is a folder (OpenHands' events/) is named by its path as found too,
    # and by the folder holding it (the conversation's own: <id>/ beside its base_state.json).
    beside = str(session.path.parent) if session.path.name == "events" else None
    return target in (stem, session.guessed_id, session.path.name, str(session.path)) or (
        (len(target) >= 8 and stem.endswith(target)) or target.rstrip("/") == beside
    )


def _where(folders: list[tuple[agents.Agent, Path]]) -> str:
    return ", ".join(str(root) for _, root in folders)


if __name__ == "__main__":
    raise SystemExit(main())
