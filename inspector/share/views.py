"""Share links: made and revoked by the owner, opened by anyone holding the token.

A share page is the timeline, read-only, built from ``inspector.share.content``
so a redacted link's page holds no content at all. Every token that opens
nothing (unknown, revoked, expired) gets the same 404 page, byte for byte,
after the same work: hash the token, one indexed lookup by the hash.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from functools import wraps
from typing import Any, cast

import orjson
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.decorators.debug import sensitive_variables
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from inspector.diagnosis import DiagnosisView, repaired_bytes_all, report_from
from inspector.diagnosis.select import (
    Filters,
    finding_groups,
    page_count,
    page_rows,
    select_positions,
    session_map,
)
from inspector.engine import RULES
from inspector.formats import extension_of
from inspector.redact import DETECTOR_VERSION, mask
from inspector.share.content import (
    SecretCount,
    count_secrets,
    mask_deep,
    mask_file,
    redacted_report,
    shared_groups,
    shared_rows,
    shared_summary,
)
from inspector.share.forms import RevokeForm, ShareForm
from inspector.share.models import ShareLink, hash_token
from inspector.web import export, store, words
from inspector.web.forms import TimelineForm
from inspector.web.http import HtmxRequest, SignedInRequest, attachment
from inspector.web.models import Transcript
from inspector.web.templatetags.inspector_tags import provider_label
from inspector.web.views import _bad_request, _get_transcript_for_user, _in_order

SHARE_HEADERS = {
    "Referrer-Policy": "no-referrer",
    "X-Robots-Tag": "noindex, nofollow",
    "Cache-Control": "private, no-store",
}
DOWNLOADS = {
    ShareLink.FULL: ("repaired", "canonical", "report", "html", "markdown", "original"),
    ShareLink.REDACTED: ("report", "html", "markdown"),
}
DOWNLOAD_LABELS = {
    "repaired": "Repaired file, possible secrets masked",
    "canonical": "Repaired, canonical JSON, possible secrets masked",
    "report": "Report (JSON)",
    "html": "The timeline as one HTML file, readable without this server",
    "markdown": "The diagnosis as Markdown, to paste in an issue",
    "original": "Original, possible secrets masked",
}
# Compared against when no link has the hash, so both branches do the same work.
NO_HASH = "0" * 64
SECRET_COUNT_SECONDS = 24 * 60 * 60


# --- the owner's side ------------------------------------------------------


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
@vary_on_headers("HX-Request")
def share_panel(request: SignedInRequest, public_id: str) -> HttpResponse:
    """The transcript's share panel: possible secrets, a form for a new link, its links."""
    transcript = _get_transcript_for_user(request, public_id)
    if request.method != "POST":
        return _panel(request, transcript, ShareForm())
    form = ShareForm(request.POST)
    if not form.is_valid():
        return _panel(request, transcript, form, status=400)
    link, token = ShareLink.issue(
        transcript, form.cleaned_data["mode"], form.cleaned_data["expires"]
    )
    url = request.build_absolute_uri(reverse("shared_timeline", args=[token]))
    response = _panel(request, transcript, ShareForm(), new_link=link, new_url=url)
    # The token is in this response only: no cache may keep it.
    add_never_cache_headers(response)
    return response


@login_required
@require_POST
@vary_on_headers("HX-Request")
def share_revoke(request: SignedInRequest, public_id: str, link_id: str) -> HttpResponse:
    transcript = _get_transcript_for_user(request, public_id)
    link = get_object_or_404(ShareLink, public_id=link_id, transcript=transcript)
    form = RevokeForm(request.POST)
    if not form.is_valid():
        return _bad_request(request, form)
    link.revoke()
    if request.htmx:
        return _panel(request, transcript, ShareForm())
    messages.success(request, "Revoked the link. Whoever opens it now gets “not found”.")
    if form.cleaned_data["back"] == "account":
        return redirect("account")
    return redirect("share_panel", transcript.public_id)


def _panel(
    request: HtmxRequest, transcript: Transcript, form: ShareForm, status: int = 200, **extra: Any
) -> HttpResponse:
    context = {
        "transcript": transcript,
        "form": form,
        "links": transcript.share_links.all(),
        "secrets": secrets_in(transcript),
        **extra,
    }
    template = "share/manage.html#panel" if request.htmx else "share/manage.html"
    return render(request, template, context, status=status)


def secrets_in(transcript: Transcript) -> SecretCount:
    """``count_secrets`` of the transcript's diagnosis, kept a day per engine version."""
    key = (
        f"share:secrets:{transcript.public_id}:{transcript.sha256}:{transcript.engine_version}"
        f":{DETECTOR_VERSION}"
    )
    found = cache.get_or_set(
        key,
        lambda: count_secrets(store.get_diagnosis(transcript), transcript.file_name),
        SECRET_COUNT_SECONDS,
    )
    # get_or_set is typed Any | None; under this key the cache only ever holds a SecretCount.
    return cast(SecretCount, found)


# --- the shared pages ------------------------------------------------------


def shared(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The same 404 for every token that opens nothing, and the privacy headers on all."""

    @wraps(view)
    def wrapper(request: HttpRequest, token: str, **kwargs: Any) -> HttpResponse:
        try:
            response = view(request, token, **kwargs)
        except Http404:
            # No context at all: no CSRF token, no nonce, so every such page is the same bytes.
            response = HttpResponse(_not_found_page(), status=404)
        for header, value in SHARE_HEADERS.items():
            response[header] = value
        return response

    return sensitive_variables("token")(wrapper)


def _not_found_page() -> str:
    return render_to_string("share/not_found.html")


@sensitive_variables("token", "digest")
def _live_link(token: str) -> ShareLink:
    """The live link whose token this is, or ``Http404``.

    Constant in the token: its hash is computed first and looked up whole in
    the unique index; the stored hash is compared with ``compare_digest``.
    """
    digest = hash_token(token)
    link = ShareLink.objects.select_related("transcript").filter(token_hash=digest).first()
    matches = hmac.compare_digest(link.token_hash if link is not None else NO_HASH, digest)
    if link is None or not matches or not link.is_live():
        raise Http404
    return link


@shared
@require_safe
@vary_on_headers("HX-Request")
def shared_timeline(request: HtmxRequest, token: str) -> HttpResponse:
    link = _live_link(token)
    diagnosis = store.get_page_diagnosis(link.transcript)
    titles = {rule_id: words.title(rule, rule_id) for rule_id, rule in RULES.items()}
    form = TimelineForm(
        request.GET,
        rule_ids=_rule_ids(diagnosis),
        present=_in_order(diagnosis.counts),
        titles=titles,
    )
    if not form.is_valid():
        return _bad_request(request, form)
    data = form.cleaned_data
    filters = Filters(data["view"], data["rule"], data["role"], data["around"])
    positions = select_positions(diagnosis, filters)
    pages = page_count(positions)
    page = data["page"] or 1
    if page > pages:
        raise Http404
    redacted = link.mode == ShareLink.REDACTED
    context = {
        "filters": filters,
        "rows": shared_rows(page_rows(diagnosis, positions, page), redacted),
        "page": page,
        "pages": pages,
        "next_query": filters.query(page=page + 1) if page < pages else None,
    }
    if request.htmx:
        return render(request, "inspector/timeline.html#rows", context)
    if request.method == "GET":  # a HEAD reads nothing
        link.record_view()
    titles = {rule_id: rule.title for rule_id, rule in RULES.items()}
    groups = finding_groups(diagnosis, positions, filters, page, titles)
    context |= _page_context(link, token, diagnosis) | {
        "form": form,
        "row_total": len(positions),
        "groups": shared_groups(groups, link.mode == ShareLink.REDACTED),
        "session_map": session_map(diagnosis, positions, filters, page),
        "views": [(v, filters.query(view=v)) for v in ("annotated", "original", "repaired")],
    }
    return render(request, "share/timeline.html", context)


def _page_context(link: ShareLink, token: str, diagnosis: DiagnosisView) -> dict[str, Any]:
    """What the header and sidebar of a shared page show; never the link's transcript row."""
    redacted = link.mode == ShareLink.REDACTED
    transcript = link.transcript
    return {
        "share": {"redacted": redacted, "expires": link.expires, "created": link.created},
        "title": "A shared transcript" if redacted else mask(transcript.file_name),
        "size": transcript.size,
        "summary": shared_summary(diagnosis, redacted),
        "downloads": [
            (kind, DOWNLOAD_LABELS[kind], reverse("shared_download", args=[token, kind]))
            for kind in DOWNLOADS[link.mode]
        ],
    }


@shared
@require_safe
def shared_download(request: HttpRequest, token: str, kind: str) -> HttpResponse:
    link = _live_link(token)
    if kind not in DOWNLOADS[link.mode]:
        raise Http404
    transcript = link.transcript

    def made() -> tuple[bytes, str]:
        if kind == "html":  # masked or redacted as this link's own page is
            redacted = link.mode == ShareLink.REDACTED
            data = export.standalone_html(request, transcript, redacted).encode()
            return data, "shared-transcript.html" if redacted else "shared-transcript.masked.html"
        if kind == "markdown":  # the owner's Markdown, of this link's (masked or redacted) report
            redacted = link.mode == ShareLink.REDACTED
            diagnosis = store.get_diagnosis(transcript)
            if redacted:
                report, name = redacted_report(diagnosis), "A shared transcript"
            else:
                report, name = mask_deep(report_from(diagnosis)), mask(transcript.file_name)
            text = export.markdown(name, report, provider_label)
            return text.encode(), f"shared-transcript.{'redacted' if redacted else 'masked'}.md"
        if link.mode == ShareLink.REDACTED:
            report = redacted_report(store.get_diagnosis(transcript))
            data = orjson.dumps(report, option=orjson.OPT_INDENT_2)
            return data, "shared-transcript.redacted-report.json"
        return _full_download(transcript, kind)

    return attachment(made)


def _full_download(transcript: Transcript, kind: str) -> tuple[bytes, str]:
    """The owner's download of that kind, every possible secret masked inside it."""
    file_name = mask(transcript.file_name)
    stem, dot, extension = file_name.rpartition(".")
    if not dot:
        stem, extension = file_name, extension_of(transcript.format)
    if kind == "original":
        return mask_file(store.read_raw(transcript)), file_name
    if kind == "report":
        report = mask_deep(report_from(store.get_diagnosis(transcript)))
        return orjson.dumps(report, option=orjson.OPT_INDENT_2), f"{stem}.report.json"
    shape = "source" if kind == "repaired" else "canonical"
    data = mask_file(repaired_bytes_all(store.load_every_of(transcript), shape))
    if shape == "source":
        return data, f"{stem}.repaired.{extension}"
    return data, f"{stem}.repaired.json"


def _rule_ids(diagnosis: DiagnosisView) -> list[str]:
    return list(RULES) + [rule for rule in diagnosis.counts if rule not in RULES]
