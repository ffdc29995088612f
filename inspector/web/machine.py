"""This machine's sessions: the agents' folders of the machine the server runs on, with
their verdicts (what ``transcript-inspector list`` shows), each opened in one click
without a scan first.

Only for the owner (the first superuser) and only on a local server: the request comes
from this machine's loopback address to a loopback host name. Anyone else is told so.
A session is opened by its path, which must be one the listing itself found: nothing
else on the disk can be read through this page.
"""

from __future__ import annotations

from ipaddress import ip_address
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.http.request import split_domain_port
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from inspector.local import sessions
from inspector.web import store
from inspector.web.http import SignedInRequest

# The newest this many sessions are listed (and diagnosed, the first time).
LIMIT = 200
_LOOPBACK_NAMES = {"localhost", "127.0.0.1", "[::1]"}


def _local_owner(request: HttpRequest) -> bool:
    try:
        remote = ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    host, _ = split_domain_port(request.get_host())
    return bool(request.user.is_superuser) and remote.is_loopback and host in _LOOPBACK_NAMES


def _refused(request: HttpRequest) -> HttpResponse:
    return render(request, "inspector/machine.html", {"refused": True}, status=403)


def _found() -> tuple[list[sessions.Session], list[str]]:
    found, warnings = sessions.find(sessions.roots())
    return found[:LIMIT], warnings


@login_required
@require_safe
def machine_sessions(request: SignedInRequest) -> HttpResponse:
    if not _local_owner(request):
        return _refused(request)
    found, warnings = _found()
    cache = sessions.VerdictCache()
    try:
        listed = [(session, cache.verdict(session)) for session in found]
    finally:
        cache.save()
    listed.sort(key=lambda item: not item[1].needs_repair)  # what is wrong first, newest first
    context = {
        "listed": listed,
        "warnings": warnings,
        "limit": LIMIT,
        "broken": sum(verdict.needs_repair for _, verdict in listed),
    }
    return render(request, "inspector/machine.html", context)


@login_required
@require_POST
def machine_open(request: SignedInRequest) -> HttpResponse:
    if not _local_owner(request):
        return _refused(request)
    asked = request.POST.get("path", "")
    found, _ = _found()
    session = next((s for s in found if str(s.path) == asked), None)
    if session is None:
        messages.error(request, "That session is not among this machine's sessions any more.")
        return redirect("machine")
    try:
        data = sessions.session_bytes(session.path)
        transcript, _ = store.store_upload(
            request.user,
            data,
            Path(session.path).name,
            format=session.agent.format if session.agent.format else "auto",
        )
    except (OSError, store.UnreadableTranscript) as error:
        messages.error(request, f"{session.path}: {error}")
        return redirect("machine")
    return redirect(transcript)
