from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from inspector.scan.views import _bad_request, _get_project_for_user
from inspector.search import fulltext, pattern
from inspector.search.forms import ProjectSearchForm
from inspector.web.http import SignedInRequest

PAGE_SIZE = 50
# A search indexes the project's unindexed sessions (stored before the search
# existed, or by another engine version) for about this long before it answers.
CATCH_UP_SECONDS = 2.0


@login_required
@require_safe
def project_search(request: SignedInRequest, slug: str) -> HttpResponse:
    """The rows of every session of the project that hold the words (or match the regular
    expression), in the sessions of the days asked for, each linked to its row."""
    project = _get_project_for_user(request, slug)
    form = ProjectSearchForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    data = form.cleaned_data
    query, regex = data["q"], data["regex"]
    dated = bool(data["since"] or data["until"])
    context: dict[str, Any] = {
        "project": project,
        "form": form,
        "query": query,
        "regex": regex,
        "dated": dated,
        "available": True,
        "search_more": regex or dated,
    }
    if not query:
        return render(request, "search/results.html", context)
    chosen = fulltext.backend()
    if chosen is None:
        context["available"] = False
        return render(request, "search/results.html", context)
    left = fulltext.catch_up(project, CATCH_UP_SECONDS)
    sessions = pattern.within(project, data["since"], data["until"])
    results: fulltext.Results | pattern.PatternResults
    if regex:
        try:
            results = pattern.PatternResults(project, query, chosen, sessions)
        except pattern.BadPattern as error:
            context["pattern_error"] = str(error)
            return render(request, "search/results.html", context, status=400)
    else:
        results = fulltext.Results(project, query, chosen, pattern.within_sql(sessions))
    page = Paginator(results, PAGE_SIZE).get_page(data["page"])
    context |= {
        "results": results,
        "page": page,
        "words": regex or bool(results.terms),
        "cut": getattr(results, "cut", False),
        "not_indexed": left,
    }
    return render(request, "search/results.html", context)
