from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from inspector.scan.views import _bad_request, _get_project_for_user
from inspector.search import fulltext
from inspector.search.forms import ProjectSearchForm
from inspector.web.http import SignedInRequest

PAGE_SIZE = 50
# A search indexes the project's unindexed sessions (stored before the search
# existed, or by another engine version) for about this long before it answers.
CATCH_UP_SECONDS = 2.0


@login_required
@require_safe
def project_search(request: SignedInRequest, slug: str) -> HttpResponse:
    """The rows of every session of the project that hold the words, each linked to its row."""
    project = _get_project_for_user(request, slug)
    form = ProjectSearchForm(request.GET)
    if not form.is_valid():
        return _bad_request(request, form)
    query = form.cleaned_data["q"]
    context = {"project": project, "form": form, "query": query, "available": True}
    if query:
        left = fulltext.catch_up(project, CATCH_UP_SECONDS)
        results = fulltext.search(project, query)
        if results is None:
            context["available"] = False
        else:
            page = Paginator(results, PAGE_SIZE).get_page(form.cleaned_data["page"])
            context |= {
                "results": results,
                "page": page,
                "words": bool(results.terms),
                "not_indexed": left,
            }
    return render(request, "search/results.html", context)
