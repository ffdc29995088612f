from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from inspector.scan import downloads, jobs, reports, tasks
from inspector.scan.forms import ScanForm, SessionFilterForm
from inspector.scan.models import ScanFile, ScanJob
from inspector.watch.views import watched_rows
from inspector.web.http import SignedInRequest, owned_or_404
from inspector.web.http import bad_request as _bad_request
from inspector.web.models import Project
from inspector.web.store import project_for

if TYPE_CHECKING:
    from inspector.scan.reports import Session

PAGE_SIZE = 50
# The job page lists at most this many unreadable files, and this many sessions that
# need repair; the dashboard has them all.
JOB_ERRORS_SHOWN = 200
JOB_BROKEN_SHOWN = 100


def _get_project_for_user(request: HttpRequest, slug: str) -> Project:
    """The signed-in user's project, or 404 (also for anyone else's)."""
    return owned_or_404(request, Project, slug=slug)


def _get_job_for_user(request: HttpRequest, public_id: str) -> ScanJob:
    """The signed-in user's scan job, or 404 (also for anyone else's)."""
    return owned_or_404(request, ScanJob.objects.select_related("project"), public_id=public_id)


@login_required
@require_safe
def project_list(request: HttpRequest) -> HttpResponse:
    projects = reports.project_list(request.user)
    return render(request, "scan/projects.html", {"projects": projects})


@login_required
@require_safe
@vary_on_headers("HX-Request")
def project_detail(request: SignedInRequest, slug: str) -> HttpResponse:
    project = _get_project_for_user(request, slug)
    form = SessionFilterForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    sessions = form.apply(reports.sessions_of(project))
    if form.leaves_out_empty:
        sessions = sessions.exclude(message_count=0)
    number = form.cleaned_data["page"]
    context: dict[str, Any] = {"project": project, "form": form, "filtered": form.filtered}
    if request.htmx:
        context["page"] = reports.page_of(sessions, number, PAGE_SIZE)
        return render(request, "scan/project.html#sessions", context)
    # Each read once for the totals, the charts and the list of unreadable files.
    tallies = reports.project_tallies(project)
    unreadable = reports.unreadable_list(project)
    totals = reports.project_totals(project, tallies, unreadable)
    # Unfiltered, the table is the sessions with messages: the totals counted them.
    summary = totals["summary"]
    count = None if form.filtered else summary.sessions - summary.empty
    context |= {
        "page": reports.page_of(sessions, number, PAGE_SIZE, count),
        "totals": totals,
        "rule_chart": reports.rule_chart(totals["summary"]),
        "day_chart": reports.day_chart(project, tallies, unreadable),
        "unreadable": unreadable,
        # What the list of latest scans shows (not their notes' JSON).
        "jobs": project.scan_jobs.only(
            "public_id", "label", "created", "status", "done", "total", "unreadable"
        )[:5],
        "scan_form": ScanForm(initial={"project": project.name}),
        "watched": watched_rows(project),
    }
    return render(request, "scan/project.html", context)


@login_required
@require_safe
def project_csv(request: HttpRequest, slug: str) -> HttpResponse | StreamingHttpResponse:
    def rows(sessions: Iterator[Session]) -> Iterator[str]:
        return downloads.sessions_csv(sessions, request.build_absolute_uri)

    return _sessions_download(request, slug, 500, rows, "text/csv; charset=utf-8", "{}.csv")


@login_required
@require_safe
def project_zip(request: HttpRequest, slug: str) -> HttpResponse | StreamingHttpResponse:
    zipped = downloads.repaired_zip
    return _sessions_download(request, slug, 100, zipped, "application/zip", "{}-repaired.zip")


def _sessions_download(
    request: HttpRequest,
    slug: str,
    chunk_size: int,
    body: Callable[[Iterator[Session]], Iterator[str] | Iterator[bytes]],
    content_type: str,
    name: str,
) -> HttpResponse | StreamingHttpResponse:
    """The project's sessions the query's filters choose, streamed through ``body`` as ``name``
    (``{}`` the project's slug); the 400 page for a bad filter."""
    project = _get_project_for_user(request, slug)
    form = SessionFilterForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    sessions = form.apply(reports.sessions_of(project)).iterator(chunk_size=chunk_size)
    response = StreamingHttpResponse(body(sessions), content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, name.format(project.slug))
    return response


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def scan_new(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return render(request, "scan/new.html", {"form": ScanForm()})
    form = ScanForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "scan/new.html", {"form": form}, status=400)
    project = project_for(request.user, form.cleaned_data["project"])
    assert project is not None  # the form requires a name, and strips it
    if form.zip_upload is not None:
        job = jobs.zip_job(request.user, project, form.zip_upload)
    else:
        job = jobs.upload_job(request.user, project, form.cleaned_data["files"])
    return redirect(job)


@login_required
@require_safe
@vary_on_headers("HX-Request")
def job_detail(request: SignedInRequest, public_id: str) -> HttpResponse:
    job = _get_job_for_user(request, public_id)
    errors = job.files.filter(status=ScanFile.Status.UNREADABLE)[:JOB_ERRORS_SHOWN]
    context: dict[str, Any] = {"job": job, "errors": errors, "summary": None}
    if job.is_finished:
        transcripts = reports.job_transcripts(job)
        context["summary"] = reports.summarize(transcripts)
        context["broken"] = reports.needing_repair(transcripts)[:JOB_BROKEN_SHOWN]
        context["elsewhere"], context["elsewhere_projects"] = reports.also_elsewhere(job)
    template = "scan/job.html#progress" if request.htmx else "scan/job.html"
    return render(request, template, context)


@login_required
@require_POST
def job_retry(request: HttpRequest, public_id: str) -> HttpResponse:
    job = _get_job_for_user(request, public_id)
    if job.is_finished:
        messages.info(request, "This scan has finished; there is nothing to send again.")
    else:
        count = tasks.retry_pending(job)
        messages.success(request, f"Sent {count:,} unfinished file(s) to the workers again.")
    return redirect(job)
