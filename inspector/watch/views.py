"""The live panel of a watched project, and "Repair in place" for its sessions."""

from __future__ import annotations

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


def can_repair_here(row: WatchedFile) -> bool:
    """Only on the machine that holds the file, and only inside its watched folder."""
    inside = row.folder.file_path(row.relative_path) is not None
    return inside and row.folder.host == ingest.this_host()


def watched_rows(project: Project) -> list[tuple[WatchedFile, bool]]:
    """Each watched session of the project, and whether it can be repaired from this server."""
    return [(row, can_repair_here(row)) for row in watched_files(project)]


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
    path = row.folder.file_path(row.relative_path)
    if path is None or row.folder.host != ingest.this_host():
        raise Http404("That file is not in a folder watched on this machine.")
    folders = [(agent, root) for agent, root in sessions.roots()]
    outcome = fix.fix(path, sessions.agent_for(path, folders))
    if outcome.status == "fixed":
        ingest.ingest(row.folder, path, path.read_bytes())
        messages.success(
            request, f"Repaired {row.relative_path} in place; the original is at {outcome.backup}."
        )
    elif outcome.status == "clean":
        messages.info(request, f"{row.relative_path} needs no repair; nothing was changed.")
    else:
        messages.error(request, f"{row.relative_path}: {outcome.reason}")
    return redirect("scan:project", slug=project.slug)
