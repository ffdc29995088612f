"""``manage.py scan PATH [--project NAME] [--owner USER] [--workers N]``.

Stores every ``.jsonl`` and ``.json`` session under PATH as a transcript of
the project, diagnoses it, and prints a progress bar and a summary. One bad
file never stops the run; unchanged files are skipped on a second scan.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django_tasks_db.backend import DatabaseBackend

from inspector.scan import reports
from inspector.scan.jobs import folder_job
from inspector.scan.models import ScanFile, ScanJob
from inspector.scan.tasks import complete_if_done, scan_file, start
from inspector.scan.workers import WorkerExit, run_workers
from inspector.web import address
from inspector.web.signin import ensure_owner
from inspector.web.store import project_for

BAR_WIDTH = 30
TITLE_WIDTH = 60


class Command(BaseCommand):
    help = "Scan a folder of sessions (recursively) into a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="a session file, or a folder to walk")
        parser.add_argument("--project", default="", help="project name (default: PATH's name)")
        parser.add_argument(
            "--owner", default="", help="user name (default: the first superuser, made if none)"
        )
        parser.add_argument(
            "--base-url",
            default=None,
            help="where the server answers, for the dashboard's address (default: "
            "$INSPECTOR_BASE_URL, else the address the running server serves on, else "
            f"{address.DEFAULT}, what make run serves)",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=0,
            help="local task worker processes to run the scan's tasks (0: run them here)",
        )

    def handle(
        self,
        *args: Any,
        path: str,
        project: str,
        owner: str,
        workers: int,
        base_url: str | None = None,
        **_: Any,
    ) -> None:
        self.base_url = address.base_url(base_url)
        root = Path(path).expanduser().resolve()
        if not root.exists():
            raise CommandError(f"{path} does not exist.")
        if workers < 0:
            raise CommandError("--workers takes 0 or more.")
        user = self._owner(owner)
        target = project_for(user, project or root.stem or "scan")
        if target is None:  # a blank name (--project " "): no project to scan into
            raise CommandError("The project name is blank: give one with --project.")
        job, found = folder_job(user, target, root)
        size = sum(item.size for item in found)
        self.stdout.write(
            f"Scanning {len(found):,} files ({_mb(size)}) from {root} into project "
            f"“{target.name}” (scan {job.public_id})."
        )
        progress = Progress(self.stdout)
        began = time.monotonic()
        exits: list[WorkerExit] = []
        if workers and found and isinstance(scan_file.get_backend(), DatabaseBackend):
            start(job, found)
            exits = run_workers(workers, lambda: progress.show(_fresh(job)))
        else:
            for file_id in start(job, found, enqueue=False):
                scan_file.call(file_id)
                progress.show(_fresh(job))
        # Files a worker could not finish (it was killed, the database hiccupped):
        # their tasks are idempotent, so running them here is safe.
        pending = job.files.filter(status=ScanFile.Status.PENDING)
        for file_id in pending.values_list("pk", flat=True):
            scan_file.call(file_id)
        complete_if_done(job.pk)
        job = _fresh(job)
        progress.show(job, final=True)
        self._summary(job, time.monotonic() - began, exits)

    def _owner(self, name: str) -> Any:
        if not name:
            user, created = ensure_owner()
            if created:
                self.stdout.write(f"Created the owner account '{user.get_username()}'.")
            return user
        User = get_user_model()
        try:
            return User.objects.get(**{User.USERNAME_FIELD: name})
        except User.DoesNotExist:
            raise CommandError(f"There is no user named {name!r}.") from None

    def _summary(self, job: ScanJob, seconds: float, exits: list[WorkerExit]) -> None:
        out = self.stdout.write
        summary = reports.summarize(reports.job_transcripts(job))
        rate = f"{job.done / seconds:,.1f} files/s, {job.bytes_done / 1e6 / seconds:,.1f} MB/s"
        out(f"\nDone in {seconds:,.1f} s ({rate}).")
        if exits:
            memory = ", ".join(_mb(worker.peak_bytes) for worker in exits)
            cpu = ", ".join(f"{worker.cpu_seconds:,.1f} s" for worker in exits)
            out(f"Workers: {len(exits)}, peak memory per worker: {memory}; CPU time: {cpu}.")
            for worker in exits:
                if worker.code:
                    out(self.style.WARNING(f"A worker exited with status {worker.code}."))
        rows = [
            ("files", job.total, _counts(job)),
            ("sessions", summary.sessions, _subagents(summary)),
            ("messages", summary.messages, ""),
            ("need repair", summary.needs_repair, "sessions whose history the repair changes"),
            *(
                [
                    (
                        "conversations",
                        summary.conversations,
                        f"{summary.conversations_needing_repair:,} need repair "
                        "(files of several conversations count each one)",
                    )
                ]
                if summary.conversations != summary.sessions
                else []
            ),
            ("unreadable", job.unreadable, "files no reader accepts (listed below)"),
        ]
        out("")
        for label, number, detail in rows:
            out(f"  {label:<12} {number:>8,}  {detail}".rstrip())
        out(f"\n  {'rule':<8} {'findings':>8} {'sessions':>8}  title")
        for rule in summary.rules:
            title = _clip(rule["title"], TITLE_WIDTH)
            out(f"  {rule['id']:<8} {rule['findings']:>8,} {rule['sessions']:>8,}  {title}")
        unreadable = job.files.filter(status=ScanFile.Status.UNREADABLE)
        if unreadable:
            out(f"\nUnreadable files ({len(unreadable):,}):")
            for row in unreadable:
                out(f"  {row.path}\n      {row.reason}")
        broken = reports.job_transcripts(job).filter(needs_repair=True).order_by("relative_path")
        if broken:
            out(f"\nNeed repair ({len(broken):,}):")
            for transcript in broken[:LISTED]:
                counts = ", ".join(f"{rule}: {n}" for rule, n in transcript.counts.items())
                out(f"  {transcript.relative_path or transcript.file_name}  ({counts})")
                out(f"      {self.base_url}{transcript.get_absolute_url()}")
            if len(broken) > LISTED:
                out(f"  … and {len(broken) - LISTED:,} more: the dashboard lists them all")
        elsewhere, projects = reports.also_elsewhere(job)
        if elsewhere:
            where = ", ".join(f"{name} ({files:,})" for name, files in list(projects.items())[:5])
            more = f" and {len(projects) - 5:,} more" if len(projects) > 5 else ""
            out(
                f"\nNote: {elsewhere:,} of the new files are also in other projects, which keep "
                f"theirs: {where}{more}. Each project has its own copy."
            )
        for note in job.notes:
            out(f"\nNote: {note}")
        dashboard = f"{self.base_url}/p/{job.project.slug}/"
        out(
            f"\nProject dashboard: {dashboard} (scan page: {self.base_url}{job.get_absolute_url()})"
        )


# Sessions needing repair listed by name; the dashboard has the rest.
LISTED = 50


class Progress:
    """A progress bar that redraws itself on a terminal and prints plain lines elsewhere.

    Off a terminal (CI logs, pipes) it prints a line at every tenth of the
    way and at the end, never carriage returns.
    """

    def __init__(self, out: OutputWrapper) -> None:
        self.out = out
        self.tty = out.isatty()
        self.shown_step = -1
        self.last = ""

    def show(self, job: ScanJob, final: bool = False) -> None:
        line = self.line(job)
        if self.tty:
            if line != self.last or final:
                self.out.write("\r" + line, ending="\n" if final else "")
                self.out.flush()
        else:
            step = job.percent // 10
            if step > self.shown_step or (final and line != self.last):
                self.out.write(line)
                self.shown_step = step
        self.last = line

    @staticmethod
    def line(job: ScanJob) -> str:
        filled = BAR_WIDTH * job.percent // 100
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        return (
            f"[{bar}] {job.percent:>3}%  {job.done:,}/{job.total:,} files  "
            f"{_mb(job.bytes_done)}/{_mb(job.bytes_total)}"
        )


def _fresh(job: ScanJob) -> ScanJob:
    return ScanJob.objects.select_related("project").get(pk=job.pk)


def _counts(job: ScanJob) -> str:
    parts = [
        f"{job.new:,} new",
        f"{job.updated:,} updated",
        f"{job.unchanged:,} unchanged (skipped)",
    ]
    if job.duplicate:
        parts.append(f"{job.duplicate:,} duplicates")
    parts.append(f"{job.unreadable:,} unreadable")
    return ", ".join(parts)


def _subagents(summary: reports.Summary) -> str:
    if not summary.subagents:
        return ""
    return f"{summary.subagents:,} of them subagents, {summary.linked:,} linked to their parent"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):,.1f} MB"
