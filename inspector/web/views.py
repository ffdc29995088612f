from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import orjson
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model, login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import TooManyFilesSent, ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import BooleanField, ExpressionWrapper, Q
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, UnreadablePostError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_str
from django.utils.http import urlsafe_base64_decode
from django.views import defaults
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from inspector.diagnosis import diagnose_all, repaired_bytes_all, report_all, report_from
from inspector.diagnosis.select import (
    Filters,
    example_rows,
    finding_groups,
    page_count,
    page_rows,
    search,
    select_positions,
    session_map,
)
from inspector.engine import RULES
from inspector.formats import extension_of
from inspector.local import agents, databases
from inspector.web import events, export, spec, store, words
from inspector.web.forms import (
    ApiUploadForm,
    SearchForm,
    TimelineForm,
    TokenForm,
    TranscriptFilterForm,
    UploadForm,
    check_size,
    too_many_files,
)
from inspector.web.http import SignedInRequest, attachment, owned_or_404
from inspector.web.http import bad_request as _bad_request
from inspector.web.models import ApiToken, Transcript, hash_token
from inspector.web.render import timing_words
from inspector.web.signin import signin_tokens
from inspector.web.templatetags.inspector_tags import provider_label

if TYPE_CHECKING:
    from django.contrib.auth.models import User

log = logging.getLogger(__name__)

LIST_PAGE_SIZE = 50
DOWNLOADS = (
    "repaired", "in-place", "canonical", "report", "markdown", "html", "html-redacted", "original",
)  # fmt: skip


def _get_transcript_for_user(request: HttpRequest, public_id: str) -> Transcript:
    """The signed-in user's transcript, or 404 (also for anyone else's)."""
    return owned_or_404(request, Transcript.objects.select_related("project"), public_id=public_id)


# --- pages -----------------------------------------------------------------


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    if request.user.is_authenticated:
        return _upload_page(request, UploadForm())
    return render(request, "inspector/home.html")


def _upload_page(
    request: HttpRequest, form: UploadForm, status: int = 200, attempts: list | None = None
) -> HttpResponse:
    limit = settings.INSPECTOR_MAX_UPLOAD_BYTES
    context = {"form": form, "max_upload": limit, "attempts": attempts or []}
    return render(request, "inspector/upload.html", context, status=status)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def upload(request: HttpRequest) -> HttpResponse:
    """The upload form; upload.js sends it with ``Accept: application/json`` to show progress.

    Sent so, a stored upload answers with where to go instead of a redirect,
    which the script would follow on its own (and so show the page's notes,
    such as 'the same transcript', to no one).
    """
    if request.method != "POST":
        return _upload_page(request, UploadForm())
    form = UploadForm(request.POST, request.FILES)
    if form.is_valid():
        database = form.database()
        if database is not None:
            return _upload_database(request, form, database)
        data, name = form.transcript_bytes()
        try:
            transcript, created = store.store_upload(
                request.user,
                data,
                name,
                project=store.project_for(request.user, form.cleaned_data["project"]),
                format=form.cleaned_data["format"] or "auto",
            )
        except store.UnreadableTranscript as error:
            named = name if form.cleaned_data.get("file") is not None else "The pasted text"
            form.add_error(None, f"{named}: {error}")
            return _upload_page(request, form, status=400, attempts=error.attempts)
        if not created:
            messages.info(
                request,
                f"{name} is the same transcript as {transcript.file_name}, uploaded "
                f"{transcript.created:%Y-%m-%d %H:%M}: the bytes are identical, so here it is.",
            )
        return _opened(request, transcript, created)
    return _upload_page(request, form, status=400)


def _opened(request: HttpRequest, transcript: Transcript, created: bool) -> HttpResponse:
    """The stored upload's timeline: where to go (upload.js), or a redirect there."""
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"location": transcript.get_absolute_url(), "created": created})
    return redirect(transcript)


class RefusedDatabase(Exception):
    """An uploaded database of which nothing was stored; ``str()`` says why, in the user's
    words; ``bug``: the reason is a bug of ours (logged), not the database's."""

    def __init__(self, message: str, *, bug: bool = False) -> None:
        super().__init__(message)
        self.bug = bug


def store_database(
    user: Any, chunks: Iterable[bytes], name: str, *, project: Any, format: str
) -> tuple[str, list[tuple[Transcript, bool]], list[tuple[str, str]]]:
    """An agent's database uploaded on its own (the form's or the API's): each of its
    sessions stored as its own transcript, as a zip's are (``<name>/<sessionID>``), read
    read-only from a private temporary copy. Gives the database's kind, what was stored
    (each with whether it is new) and each session that could not be read with why.

    Raises ``RefusedDatabase`` when nothing was stored: a database that cannot be read, or
    of which no session can.
    """
    limit = settings.INSPECTOR_MAX_UPLOAD_BYTES
    try:
        kind, sessions = databases.read_sessions(chunks, max_session_bytes=limit)
    except databases.Unreadable as error:
        raise RefusedDatabase(f"{name}: {error} Nothing was stored.") from None
    except Exception as error:  # a reader bug: said as one, the private copy gone all the same
        log.exception("reading the uploaded database %s failed", name)
        raise RefusedDatabase(
            f"{name}: reading this database failed ({type(error).__name__}); this is a bug in "
            "Transcript Inspector and has been logged. Nothing was stored.",
            bug=True,
        ) from None
    unread = [(session.name, session.reason) for session in sessions if session.reason]
    stored: list[tuple[Transcript, bool]] = []
    for session in sessions:
        if session.reason:
            continue
        try:
            stored.append(
                store.store_upload(
                    user, session.data, session.name, project=project, format=format,
                    relative_path=f"{name}/{session.name}",
                )
            )  # fmt: skip
        except store.UnreadableTranscript as error:  # stored nothing: this session only
            unread.append((session.name, str(error)))
    if not stored:
        why = "; ".join(f"{session}: {reason}" for session, reason in unread)
        raise RefusedDatabase(
            f"{name}: {databases.AGENTS[kind]}'s {kind}, but "
            + (f"no session in it could be read ({why})." if why else "it holds no session.")
            + " Nothing was stored."
        )
    return kind, stored, unread


def _upload_database(request: HttpRequest, form: UploadForm, upload: UploadedFile) -> HttpResponse:
    """An agent's database uploaded on its own (``store_database``). A database of which
    nothing was stored is refused with its reasons. One session opens as any upload does;
    several are listed with their verdicts, and the sessions that could not be read with why.
    """
    name = upload.name or "database"
    project = store.project_for(request.user, form.cleaned_data["project"])
    try:
        kind, stored, unread = store_database(
            request.user, upload.chunks(), name, project=project,
            format=form.cleaned_data["format"] or "auto",
        )  # fmt: skip
    except RefusedDatabase as refused:
        form.add_error(None, str(refused))
        return _upload_page(request, form, status=400)
    if len(stored) == 1 and not unread:
        return _opened(request, *stored[0])
    context: dict[str, Any] = {"name": name, "kind": kind, "agent": databases.AGENTS[kind]}
    context |= {"project": project, "stored": stored, "unread": unread}
    return render(request, "inspector/upload_database.html", context)


@login_required
@require_safe
@vary_on_headers("HX-Request")
def transcript_list(request: SignedInRequest) -> HttpResponse:
    form = TranscriptFilterForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    transcripts = Transcript.objects.filter(owner=request.user).select_related("project")
    if form.cleaned_data["format"]:
        transcripts = transcripts.filter(format=form.cleaned_data["format"])
    if form.cleaned_data["needs_repair"]:
        transcripts = transcripts.filter(needs_repair=form.cleaned_data["needs_repair"] == "yes")
    transcripts = transcripts.order_by(*form.ORDERS[form.cleaned_data["sort"]])
    page = Paginator(transcripts, LIST_PAGE_SIZE).get_page(form.cleaned_data["page"])
    context = {"form": form, "page": page, "filtered": form.has_changed()}
    template = "inspector/list.html#results" if request.htmx else "inspector/list.html"
    return render(request, template, context)


@login_required
@require_safe
@vary_on_headers("HX-Request")
def timeline(request: SignedInRequest, public_id: str) -> HttpResponse:
    transcript = _get_transcript_for_user(request, public_id)
    diagnosis = store.get_page_diagnosis(transcript)
    rules = RULES
    rule_ids = list(rules) + [rule for rule in diagnosis.counts if rule not in rules]
    titles = {rule_id: words.title(rule, rule_id) for rule_id, rule in rules.items()}
    form = TimelineForm(
        request.GET, rule_ids=rule_ids, present=_in_order(diagnosis.counts), titles=titles
    )
    if not form.is_valid():
        return _bad_request(request, form)
    data = form.cleaned_data
    filters = Filters(
        data["view"], data["rule"], data["role"], data["around"], data["branch"],
        data["conversation"],
    )  # fmt: skip
    if filters.branch:
        branch = store.get_branch_diagnosis(transcript, filters.branch)
        if branch is None:
            raise Http404("This session has no branch ending there.")
        diagnosis = branch
    if filters.conversation is not None:
        conversation = store.get_conversation_diagnosis(transcript, filters.conversation)
        if conversation is None:
            raise Http404("This file has no such conversation.")
        diagnosis = conversation
    positions = select_positions(diagnosis, filters)
    pages = page_count(positions)
    page = data["page"] or 1
    if page > pages:
        raise Http404(
            f"This view of the timeline has {pages:,} page{'s' if pages != 1 else ''} of rows; "
            f"there is no page {page:,}."
        )
    rows = page_rows(diagnosis, positions, page)
    context = {
        "transcript": transcript,
        "filters": filters,
        "rows": rows,
        "subagent_links": _subagent_links(transcript, diagnosis, rows),
        "page": page,
        "pages": pages,
        "next_query": filters.query(page=page + 1) if page < pages else None,
    }
    if request.htmx:
        return render(request, "inspector/timeline.html#rows", context)
    context |= {
        "form": form,
        "diagnosis": diagnosis,
        "healthy": _healthy(diagnosis),
        "search_url": reverse("transcript_search", args=[transcript.public_id]),
        "search_filters": filters.query(),
        "timing": timing_words(diagnosis.meta.get("timing")),
        "session_map": session_map(diagnosis, positions, filters, page),
        "row_total": len(positions),
        "groups": finding_groups(diagnosis, positions, filters, page, titles),
        "views": [
            (view, filters.query(view=view)) for view in ("annotated", "original", "repaired")
        ],
        "resume": _resume_hint(transcript),
        "in_place": _in_place(transcript),
        **events.timeline_context(transcript),  # what the apps above add (scan: neighbours)
        "parent": _parent_session(transcript),
        "branch_links": True,
        "conversations": conversation_list(transcript, filters.conversation),
        "conversations_broken": sum(
            item["needs_repair"] for item in transcript.meta.get("conversation_list") or []
        ),
    }
    return render(request, "inspector/timeline.html", context)


def conversation_list(transcript: Transcript, current: int | None) -> list[dict[str, Any]]:
    """The file's conversations as the timeline lists them, the one on screen marked."""
    listed = transcript.meta.get("conversation_list") or []
    shown = (
        current
        if current is not None
        else transcript.meta.get("conversation", transcript.meta.get("exchange"))
    )
    return [{**item, "current": item["key"] == shown} for item in listed]


def _in_order(counts: dict[str, int]) -> dict[str, int]:
    """Findings per rule, the rules in the catalogue's order."""
    order = {rule_id: n for n, rule_id in enumerate(RULES)}
    return dict(sorted(counts.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def _healthy(diagnosis: Any) -> bool:
    """Nothing to repair, nothing unreadable, and every provider accepts it as uploaded."""
    return (
        not diagnosis.needs_repair
        and not diagnosis.problems
        and all(not verdict["before"] for verdict in diagnosis.providers.values())
    )


def _subagent_links(
    transcript: Transcript, diagnosis: Any, rows: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """Task call id -> the address of the owner's transcript of the subagent that answered it."""
    answered = diagnosis.meta.get("subagents") or {}
    if not answered:
        return {}
    on_page = {
        call["id"]: answered[call["id"]]
        for row in rows
        for call in row.get("calls") or ()
        if call.get("id") in answered
    }
    if not on_page:
        return {}
    found = (
        Transcript.objects.filter(
            owner=transcript.owner_id, meta__agent_id__in=set(on_page.values())
        )
        .annotate(here=_in_project_of(transcript))
        # A session kept in several projects: the copy in this one wins (comes last).
        .order_by("here", "pk")
        .values_list("public_id", "meta__agent_id")
    )
    where = {agent: reverse("timeline", args=[public_id]) for public_id, agent in found}
    return {call: where[agent] for call, agent in on_page.items() if agent in where}


def _parent_session(transcript: Transcript) -> Transcript | None:
    """The session a subagent's transcript was started from, when the owner has it."""
    if not transcript.meta.get("sidechain"):
        return None
    if transcript.parent_id is not None:
        return transcript.parent
    session = transcript.meta.get("parent_session")
    if not session:
        return None
    return (
        Transcript.objects.filter(owner=transcript.owner_id, meta__session_id=session)
        .exclude(meta__sidechain=True)
        .exclude(pk=transcript.pk)
        .annotate(here=_in_project_of(transcript))
        .order_by("-here", "pk")  # the parent's copy in this project, if it has one
        .first()
    )


def _in_project_of(transcript: Transcript) -> ExpressionWrapper:
    """True for a transcript of ``transcript``'s project (the same session may be in several)."""
    same = Q(project=transcript.project_id) if transcript.project_id else Q(project__isnull=True)
    return ExpressionWrapper(same, output_field=BooleanField())


@login_required
@require_safe
def transcript_search(request: HttpRequest, public_id: str) -> HttpResponse:
    """Every row of the view that holds the words: JSON for the search box, else a page of links."""
    transcript = _get_transcript_for_user(request, public_id)
    diagnosis = store.get_page_diagnosis(transcript)
    form = SearchForm(request.GET, rule_ids=list(RULES) + list(diagnosis.counts))
    if not form.is_valid():
        return _bad_request(request, form)
    data = form.cleaned_data
    filters = Filters(data["view"], data["rule"], data["role"], data["around"], data["branch"])
    if filters.branch:
        branch = store.get_branch_diagnosis(transcript, filters.branch)
        if branch is None:
            raise Http404("This session has no branch ending there.")
        diagnosis = branch
    count, hits = search(diagnosis, select_positions(diagnosis, filters), data["q"])
    timeline_url = reverse("timeline", args=[transcript.public_id])
    for hit in hits:
        query = urlencode(filters.query(page=hit["page"], q=data["q"]))
        hit["href"] = f"{timeline_url}?{query}#{hit['key']}"
    if "application/json" in request.headers.get("Accept", ""):
        return JsonResponse({"query": data["q"], "count": count, "hits": hits})
    context = {"transcript": transcript, "query": data["q"], "count": count, "hits": hits}
    return render(request, "inspector/search.html", context)


def _in_place(transcript: Transcript) -> dict[str, str] | None:
    """Where the repaired session goes so its agent resumes it, and the name it needs there."""
    cwd = str(transcript.meta.get("cwd") or "")
    target = agents.in_place_target(
        transcript.format, transcript.session_id, cwd, transcript.file_name
    )
    if target is None:
        return None
    name, path = target
    agent = agents.BY_FORMAT[transcript.format]
    commands = f"cp {path} {path}.bak\nmv ~/Downloads/{name} {path}"
    home = f"~/{agent.default_home}"
    return {"name": name, "path": path, "commands": commands, "env": agent.env, "home": home}


def _resume_hint(transcript: Transcript) -> dict[str, str] | None:
    if transcript.format not in agents.IN_PLACE_FORMATS:
        return None
    agent = agents.BY_FORMAT[transcript.format]
    session = transcript.session_id or "<session id>"
    cwd = str(transcript.meta.get("cwd") or "") or None
    command = agent.resume_command(session, cwd=cwd)
    return {"tool": agent.label, "command": command, "session": session}


@login_required
@require_safe
def download(request: HttpRequest, public_id: str, kind: str) -> HttpResponse:
    transcript = _get_transcript_for_user(request, public_id)
    if kind not in DOWNLOADS:
        raise Http404("No such download.")
    if kind in ("html", "html-redacted"):  # the timeline as one file, for this address
        redacted = kind == "html-redacted"
        stem = transcript.file_name.rpartition(".")[0] or transcript.file_name
        name = f"{stem}{'.redacted' if redacted else ''}.diagnosis.html"
        return attachment(
            lambda: (export.standalone_html(request, transcript, redacted).encode(), name)
        )
    return attachment(lambda: _download(transcript, kind))


def _download(transcript: Transcript, kind: str) -> tuple[bytes, str]:
    stem, dot, extension = transcript.file_name.rpartition(".")
    if not dot:
        stem, extension = transcript.file_name, extension_of(transcript.format)
    in_place = _in_place(transcript) if kind == "in-place" else None
    if kind == "in-place" and in_place is None:
        raise Http404("Only an agent's own session files are put in place.")
    if kind == "original":
        data, name = store.read_raw(transcript), transcript.file_name
    elif kind == "report" and transcript.meta.get("conversation_list"):
        every = store.load_every_of(transcript)
        report = report_all(every, diagnose_all(every))
        data, name = orjson.dumps(report, option=orjson.OPT_INDENT_2), f"{stem}.report.json"
    elif kind == "report":
        report = report_from(store.get_diagnosis(transcript))
        data, name = orjson.dumps(report, option=orjson.OPT_INDENT_2), f"{stem}.report.json"
    elif kind == "markdown":
        report = report_from(store.get_diagnosis(transcript))
        text = export.markdown(transcript.file_name, report, provider_label)
        data, name = text.encode(), f"{stem}.diagnosis.md"
    else:
        shape = "canonical" if kind == "canonical" else "source"
        data = repaired_bytes_all(store.load_every_of(transcript), shape)
        name = f"{stem}.repaired.{extension}" if shape == "source" else f"{stem}.repaired.json"
        if in_place is not None:
            name = in_place["name"]  # the agent's own name for it, to replace the original
    return data, name


@login_required
@require_POST
def delete(request: HttpRequest, public_id: str) -> HttpResponse:
    transcript = _get_transcript_for_user(request, public_id)
    name = transcript.file_name
    transcript.delete()
    messages.success(request, f"Deleted {name} and its stored bytes.")
    return redirect("transcript_list")


@require_safe
def rule_list(request: HttpRequest) -> HttpResponse:
    rules = [
        (rule, words.title(rule, rule_id), words.PLAIN.get(rule_id))
        for rule_id, rule in RULES.items()
    ]
    return render(request, "inspector/rules.html", {"rules": rules})


@require_safe
def rule_detail(request: HttpRequest, rule_id: str) -> HttpResponse:
    rules = RULES
    rule = rules.get(rule_id)
    if rule is None:
        raise Http404("No rule has that id.")
    related = [rules[other] for other in rule.related if other in rules]
    breaking = None
    if request.user.is_authenticated:
        breaking = Transcript.objects.filter(owner=request.user, counts__has_key=rule_id)[:50]
    plain = words.PLAIN.get(rule.id)
    context = {
        "rule": rule,
        "plain": plain,
        "plain_title": words.title(rule, rule.id),
        "terms": words.terms_in(rule.title, rule.summary, rule.explanation),
        "related": [(other, words.title(other, other.id)) for other in related],
        "breaking": breaking,
        "before": example_rows(rule.example_before),
        "appended": example_rows(list(rule.example_appended)),
        "after": example_rows(rule.example_after),
        "sources": [_source_link(source) for source in (rule.source, *rule.other_sources)],
        "spec_anchor": spec.section_anchor(rule.spec) if rule.spec else spec.OUR_OWN,
    }
    return render(request, "inspector/rule.html", context)


def _source_link(source: str) -> tuple[str, str]:
    """(words, address) of a rule's source: a seed file is served under /spec/seeds/."""
    if source.startswith("seeds/"):
        name = source.removeprefix("seeds/")
        return words.source_words(source), reverse("spec_seed", args=[name])
    return words.source_words(source), source


@require_safe
def spec_page(request: HttpRequest) -> HttpResponse:
    context = {"spec": spec.spec(), "seeds": spec.seed_names()}
    return render(request, "inspector/spec.html", context)


@require_safe
def spec_seed(request: HttpRequest, name: str) -> HttpResponse:
    path = spec.seed_path(name)
    if path is None:
        raise Http404("No seed document has that name.")
    return HttpResponse(path.read_bytes(), content_type="text/plain; charset=utf-8")


@login_required
@require_safe
def account(request: SignedInRequest) -> HttpResponse:
    tokens = ApiToken.objects.filter(user=request.user)
    return render(request, "inspector/account.html", {"tokens": tokens, "form": TokenForm()})


@never_cache
@login_required
@require_POST
def token_create(request: SignedInRequest) -> HttpResponse:
    form = TokenForm(request.POST)
    new_token = None
    if form.is_valid():
        # Shown in this response only: the database keeps just its hash.
        _, new_token = ApiToken.issue(request.user, form.cleaned_data["name"])
        form = TokenForm()
    tokens = ApiToken.objects.filter(user=request.user)
    context = {"tokens": tokens, "form": form, "new_token": new_token}
    return render(request, "inspector/account.html", context, status=200 if new_token else 400)


@login_required
@require_POST
def token_revoke(request: HttpRequest, public_id: str) -> HttpResponse:
    token = get_object_or_404(ApiToken, public_id=public_id, user=request.user)
    token.delete()
    messages.success(request, f"Revoked the token {token}. Programs using it are refused now.")
    return redirect("account")


# --- API -------------------------------------------------------------------


def _json(data: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(orjson.dumps(data), content_type="application/json", status=status)


def _api_user(request: HttpRequest) -> Any:
    """The user whose token is in ``Authorization: Bearer <token>``, or ``None``."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    rows = ApiToken.objects.select_related("user").filter(token_hash=hash_token(token.strip()))
    row = rows.first()
    if row is None or not row.user.is_active:
        return None
    ApiToken.objects.filter(pk=row.pk).update(last_used=timezone.now())
    return row.user


def _unauthorized() -> HttpResponse:
    response = _json({"error": "Send a valid API token: Authorization: Bearer <token>."}, 401)
    response["WWW-Authenticate"] = 'Bearer realm="inspector"'
    return response


def api_view(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """An API view: token-authenticated, so exempt from CSRF (no cookies are read),
    and a method it does not take is a JSON 405, like every other API error."""
    allowed = sorted({*methods, *(["HEAD"] if "GET" in methods else [])})

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in allowed:
                response = _json(
                    {"error": f"{request.method} is not allowed here: use {', '.join(allowed)}."},
                    405,
                )
                response["Allow"] = ", ".join(allowed)
                return response
            return view(request, *args, **kwargs)

        return csrf_exempt(wrapper)

    return decorate


@api_view("POST")
def api_upload(request: HttpRequest) -> HttpResponse:
    user = _api_user(request)
    if user is None:
        return _unauthorized()
    form = ApiUploadForm(request.GET)
    if not form.is_valid():
        return _json({"error": "Bad query parameters.", "fields": _messages(form)}, 400)
    limit = settings.INSPECTOR_MAX_UPLOAD_BYTES
    length = request.headers.get("Content-Length") or "0"
    if not length.isascii() or not length.isdigit():
        return _json({"error": f"Content-Length must be a number of bytes, not {length!r}."}, 400)
    if int(length) > limit + 64 * 1024:
        return _json({"error": f"The upload is larger than the limit of {limit:,} bytes."}, 413)
    try:
        data, name = _api_body(request)
    except UnreadablePostError:
        # The client went away mid-body: nothing to store, and not our error.
        return _json({"error": "The request body could not be read completely."}, 400)
    try:
        check_size(len(data))
    except ValidationError as error:
        return _json({"error": " ".join(error.messages)}, 413)
    name = form.cleaned_data["name"] or name
    project = store.project_for(user, form.cleaned_data["project"])
    format = form.cleaned_data["format"] or "auto"
    if databases.is_sqlite(data):  # an agent's database, whatever it is called
        return _api_database(request, user, data, name, project, format)
    try:
        transcript, created = store.store_upload(user, data, name, project=project, format=format)
    except store.UnreadableTranscript as error:
        return _json({"error": str(error)}, 400)
    return _json(_api_summary(request, transcript, created), 201 if created else 200)


def _api_database(
    request: HttpRequest, user: Any, data: bytes, name: str, project: Any, format: str
) -> HttpResponse:
    """An agent's database sent to the API: each session stored as the upload form stores
    it (``store_database``), answered with the database, each stored session's summary and
    each unread session's reason; 201 if any is new. Nothing stored: 400 with why (500 for
    a bug of ours)."""
    try:
        kind, stored, unread = store_database(user, [data], name, project=project, format=format)
    except RefusedDatabase as refused:
        return _json({"error": str(refused)}, 500 if refused.bug else 400)
    body = {
        "database": {"name": name, "kind": kind, "agent": databases.AGENTS[kind]},
        "transcripts": [_api_summary(request, t, created) for t, created in stored],
        "unread": [{"session": session, "reason": reason} for session, reason in unread],
    }
    return _json(body, 201 if any(created for _, created in stored) else 200)


def _messages(form: Form) -> dict[str, list[str]]:
    """A form's errors as plain JSON: each field's messages, in words."""
    return {field: [str(message) for message in errors] for field, errors in form.errors.items()}


def api_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404 for the whole site: JSON under /api/, the plain page elsewhere."""
    if request.path.startswith("/api/"):
        return _json({"error": "No such API address."}, 404)
    return not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """400 for the whole site: too many files names the limit; JSON under /api/."""
    if isinstance(exception, TooManyFilesSent):
        message = too_many_files()
    else:
        message = "The request could not be read: it is malformed or breaks a limit."
    if request.path.startswith("/api/"):
        return _json({"error": message}, 400)
    return render(request, "inspector/refused.html", {"message": message}, status=400)


def api_server_error(request: HttpRequest) -> HttpResponse:
    """500 for the whole site: JSON under /api/, the plain page elsewhere."""
    if request.path.startswith("/api/"):
        return _json({"error": "The server failed on this request; it has been logged."}, 500)
    return defaults.server_error(request)


def _api_body(request: HttpRequest) -> tuple[bytes, str]:
    if request.content_type == "multipart/form-data":
        upload = next(iter(request.FILES.values()), None)
        if not isinstance(upload, UploadedFile):  # None: no file in the body
            return b"", "upload"
        return b"".join(upload.chunks()), upload.name or "upload"
    return request.body, "upload"


def _api_summary(request: HttpRequest, transcript: Transcript, created: bool) -> dict[str, Any]:
    return {
        "id": transcript.public_id,
        "url": request.build_absolute_uri(transcript.get_absolute_url()),
        "created": created,
        "summary": {
            "file_name": transcript.file_name,
            "format": transcript.format,
            "messages": transcript.message_count,
            "needs_repair": transcript.needs_repair,
            "counts": transcript.counts,
            "problems": transcript.problems,
            "providers": {
                name: {"before_ok": v["before_ok"], "after_ok": v["after_ok"]}
                for name, v in transcript.verdicts.items()
            },
        },
    }


@api_view("GET")
def api_transcript(request: HttpRequest, public_id: str) -> HttpResponse:
    user = _api_user(request)
    if user is None:
        return _unauthorized()
    transcript = Transcript.objects.filter(owner=user, public_id=public_id).first()
    if transcript is None:
        return _json({"error": "No transcript of yours has that id."}, 404)
    url = request.build_absolute_uri(transcript.get_absolute_url())
    header = {"id": transcript.public_id, "url": url, "file_name": transcript.file_name}
    try:
        with store.depth_guarded():
            return _json(header | report_from(store.get_diagnosis(transcript)))
    except store.UnreadableTranscript as error:
        return _json({"error": str(error)}, 400)


# --- foundation ------------------------------------------------------------


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Every 404 as a page of the site, with the reason when it is one of ours.

    Django's own messages ("No Transcript matches the given query.") name
    models, not what the reader asked for; they get the general sentence.
    """
    reason = exception.args[0] if exception is not None and exception.args else ""
    if not isinstance(reason, str) or "matches the given query" in reason:
        reason = ""
    back = request.path if request.GET else ""
    return render(request, "404.html", {"reason": reason, "back": back}, status=404)


@never_cache
@require_safe
def healthz(request: HttpRequest) -> HttpResponse:
    """200 when the database answers a query, 503 otherwise (for load balancers)."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any database failure means unhealthy
        return JsonResponse({"status": "error", "database": type(error).__name__}, status=503)
    return JsonResponse({"status": "ok", "database": connection.vendor})


def _user_from_uid(uidb64: str) -> User | None:
    User = get_user_model()
    try:
        pk = force_str(urlsafe_base64_decode(uidb64))
        return User.objects.get(pk=pk)
    except (ValueError, TypeError, OverflowError, User.DoesNotExist):
        return None


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def signin_link(request: HttpRequest, uidb64: str, token: str) -> HttpResponse:
    """A one-time link signs in on POST; GET only shows the button.

    Mail scanners and link previews fetch URLs with GET; if GET signed in,
    they would burn the single use before the person clicks.
    """
    user = _user_from_uid(uidb64)
    if user is None or not user.is_active or not signin_tokens.check_token(user, token):
        return render(request, "registration/signin_link.html", {"valid": False}, status=400)
    if request.method == "POST":
        if not signin_tokens.consume(user, token):
            # Another request used the link first, between our check and now.
            return render(request, "registration/signin_link.html", {"valid": False}, status=400)
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("home")
    return render(request, "registration/signin_link.html", {"valid": True, "account": user})
