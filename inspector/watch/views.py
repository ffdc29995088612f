"""The live panel of a watched project, and "Repair in place" for its sessions."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from inspector.local import fix, sessions
from inspector.watch import ingest
from inspector.watch.models import WatchedFile
from inspector.web.models import Project

PANEL_ROWS = 50


def _project(request: HttpRequest, slug: str) -> Project:
    return get_object_or_404(Project, owner=request.user, slug=slug)


def watched_files(project: Project) -> list[WatchedFile]:
    """The project's watched sessions: the ones that broke most recently first."""
    rows = WatchedFile.objects.filter(folder__project=project, folder__owner=project.owner_id)
    return list(rows.select_related("folder", "transcript")[:PANEL_ROWS])


# Where Repair in place keeps its backups when fix's usual place is outside the watched folder
# (OpenCode keeps them beside ``storage/``): hidden, so the watcher never reads them.
IN_PLACE_BACKUPS = ".transcript-inspector-backups"


@dataclass(frozen=True, slots=True)
class InPlace:
    """What Repair in place of one row would do: fix ``path``, backups in ``backup_dir``
    (``None``: fix's usual place), or ``why`` it cannot, in words for the panel."""

    path: Path | None
    backup_dir: Path | None = None
    why: str = ""


def in_place(row: WatchedFile) -> InPlace:
    """Repair in place only on the machine that holds the file, and only if every folder
    fix would write (the session's whole store and its backups) is inside the watched one."""
    if row.folder.host != ingest.this_host():
        return InPlace(None, why=f"The file is on {row.folder.host}; repair it there.")
    path = row.folder.file_path(row.relative_path)
    if path is None:
        return InPlace(None, why="The file is not inside the watched folder.")
    watched = Path(row.folder.path).resolve()
    store, *backups = fix.confinement(path).roots
    if not store.is_relative_to(watched):
        return InPlace(
            None,
            why=f"Repairing it would also write {store}, outside the watched folder: watch "
            f"{store} to repair it here, or run transcript-inspector fix {path}.",
        )
    if all(b.is_relative_to(watched) for b in backups):
        return InPlace(path)
    return InPlace(path, watched / IN_PLACE_BACKUPS)


def can_repair_here(row: WatchedFile) -> bool:
    """The panel offers the button, and the POST acts, only for these rows."""
    return row.needs_repair and in_place(row).path is not None


def watched_rows(project: Project) -> list[tuple[WatchedFile, InPlace]]:
    """Each watched session of the project, and whether it can be repaired from this server."""
    return [(row, in_place(row)) for row in watched_files(project)]


@login_required
@require_safe
def panel(request: HttpRequest, slug: str) -> HttpResponse:
    project = _project(request, slug)
    context = {"project": project, "rows": watched_rows(project)}
    return render(request, "watch/panel.html", context)


@login_required
@require_POST
def repair_in_place(request: HttpRequest, slug: str, row_id: int) -> HttpResponse:
    project = _project(request, slug)
    row = get_object_or_404(
        WatchedFile.objects.select_related("folder"), pk=row_id, folder__project=project
    )
    if not can_repair_here(row):  # the panel offers no button for it
        raise Http404("That session is not one Repair in place can fix from here.")
    plan = in_place(row)
    path = plan.path
    assert path is not None
    folders = [(agent, root) for agent, root in sessions.roots()]
    outcome = fix.fix(path, sessions.agent_for(path, folders), backup_dir=plan.backup_dir)
    if outcome.status == "fixed":
        ingest.ingest(row.folder, path, sessions.session_bytes(path))
        undo = f"transcript-inspector fix --undo {path}"
        if plan.backup_dir is not None:
            undo += f" --backup-dir {plan.backup_dir}"
        messages.success(
            request,
            f"Repaired {row.relative_path} in place; the original is at {outcome.backup} "
            f"(undo: {undo}).",
        )
    elif outcome.status == "clean":
        messages.info(request, f"{row.relative_path} needs no repair; nothing was changed.")
    else:
        messages.error(request, f"{row.relative_path}: {outcome.reason}")
    return redirect("scan:project", slug=project.slug)
