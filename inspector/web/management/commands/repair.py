"""Repair one transcript from the command line, for scripts and CI.

The same command as ``transcript-inspector repair`` (``inspector.cli``), which
needs no Django; this one is kept for those who run everything through
``manage.py``. Exit status: 0 nothing needed repair, 1 something was
repaired, 2 bad input (one line on stderr saying why).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from inspector import cli


class Command(BaseCommand):
    help = (
        "Repair FILE (any supported shape; '-' reads stdin). Writes the repaired transcript in "
        "its own shape to stdout or --output, or the diagnosis with --report (as JSON; "
        "--report --text: as a person reads it). "
        "Exit 0 clean, 1 repaired, 2 bad input."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_repair_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        names = ("file", "format", "read_only", "report", "text", "canonical", "output")
        namespace = argparse.Namespace(command="repair", **{k: options[k] for k in names})
        sys.exit(cli.main_with(cli.run_repair, namespace, sys.stdout))
