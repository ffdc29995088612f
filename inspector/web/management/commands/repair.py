"""Repair one transcript from the command line, for scripts and CI.

Exit status: 0 nothing needed repair, 1 something was repaired, 2 bad input
(one line on stderr saying why).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
from django.core.management.base import BaseCommand, CommandParser

from inspector import formats
from inspector.diagnosis import diagnose, read_only_predicate, repaired_bytes, report_from
from inspector.engine import InvalidTranscript

FORMAT_CHOICES = ["auto", *formats.FORMATS]


class Command(BaseCommand):
    help = (
        "Repair FILE (any supported shape; '-' reads stdin). Writes the repaired transcript in "
        "its own shape to stdout or --output, or the diagnosis with --report. "
        "Exit 0 clean, 1 repaired, 2 bad input."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="transcript file, or - for standard input")
        parser.add_argument("--format", default="auto", choices=FORMAT_CHOICES)
        parser.add_argument(
            "--read-only",
            default="",
            metavar="NAME[,NAME]",
            help="tools that only read: their synthetic results say they are safe to call again",
        )
        parser.add_argument("--report", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--canonical", action="store_true", help="write canonical JSON, not the source shape"
        )
        parser.add_argument("--output", "-o", help="write the repaired transcript here")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            data = _read(options["file"])
            parsed = formats.load(data, options["format"])
            is_read_only = read_only_predicate(options["read_only"].split(","))
            diagnosis = diagnose(parsed, is_read_only)
            if options["report"]:
                out = orjson.dumps(report_from(diagnosis), option=orjson.OPT_INDENT_2) + b"\n"
            else:
                fmt = "canonical" if options["canonical"] else "source"
                out = repaired_bytes(parsed, fmt, is_read_only)
        except (OSError, formats.FormatError, InvalidTranscript) as error:
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            sys.stderr.write(f"repair: {first_line}\n")
            sys.exit(2)
        if options["output"] and not options["report"]:
            Path(options["output"]).write_bytes(out)
        else:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
        sys.exit(1 if diagnosis.needs_repair else 0)


def _read(name: str) -> bytes:
    if name == "-":
        return sys.stdin.buffer.read()
    return Path(name).read_bytes()
