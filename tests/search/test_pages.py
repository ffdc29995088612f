"""The project search's pages: the box on the dashboard, the results, who may see them."""

from __future__ import annotations

import itertools
import re
from html import unescape

import pytest

from inspector.search import fulltext
from tests.search.conftest import DEPLOY, REFUND
from tests.web.conftest import BROKEN_LONG, XSS_CANONICAL, canonical, user

pytestmark = pytest.mark.django_db


def url(project, **query):
    from urllib.parse import urlencode

    return f"/p/{project.slug}/search/" + (f"?{urlencode(query)}" if query else "")


def hits_of(response):
    """(link, session name, role, snippet html) of each result on the page."""
    html = response.content.decode()
    return re.findall(
        r'<a href="([^"]+)" class="hit-link"><span class="path">([^<]*)</span>.*?'
        r'<span class="role">([^<]*)</span>.*?<p class="snippet">(.*?)</p>',
        html,
        re.S,
    )


def test_the_dashboard_has_a_search_box_that_asks_the_search_page(owner_client, project):
    html = owner_client.get(f"/p/{project.slug}/").content.decode()
    form = re.search(r'<form method="get" action="([^"]+)" class="project-search"', html)
    assert form and form.group(1) == url(project)
    assert 'name="q"' in html[form.start() : form.start() + 600]


def test_without_words_the_page_is_the_box(owner_client, project):
    response = owner_client.get(url(project))
    assert response.status_code == 200
    assert b'class="project-search"' in response.content and not hits_of(response)


def test_results_name_the_session_the_role_and_mark_the_words(owner_client, store_in, project):
    store_in(DEPLOY, "deploy.json", path="ops/deploy.json")
    store_in(REFUND, "refund.json", path="support/refund.json")
    response = owner_client.get(url(project, q="gateway"))
    assert response.status_code == 200
    results = fulltext.search(project, "gateway")
    hits = hits_of(response)
    assert len(hits) == results.count() >= 2
    heading = re.search(r"<h1>(.*?)</h1>", response.content.decode(), re.S).group(1)
    assert heading.startswith(f"{results.count()} rows in 1 session hold")
    for (href, name, role, snippet), hit in zip(hits, results, strict=True):
        assert unescape(href) == hit.href and name == "support/refund.json"
        assert role == hit.role and role in ("tool", "assistant")
        assert re.findall(r"<mark>(.*?)</mark>", snippet) and all(
            m.lower() == "gateway" for m in re.findall(r"<mark>(.*?)</mark>", snippet)
        )


def test_a_result_opens_the_timeline_on_the_row(owner_client, store_in, project):
    long = store_in(BROKEN_LONG, "long.json")
    [(href, *_)] = hits_of(owner_client.get(url(project, q='"step 250"')))
    path, key = unescape(href).split("#")
    assert path.startswith(f"/t/{long.public_id}/?page=3&")
    html = owner_client.get(path).content.decode()
    at = html.index(f'id="{key}"')
    assert "step 250" in html[at : at + 3000]


def test_the_page_of_a_transcripts_markup_is_escaped(owner_client, store_in, project):
    store_in(XSS_CANONICAL, "xss.json")
    response = owner_client.get(url(project, q="script"))
    html = response.content.decode()
    assert hits_of(response)
    assert "<script>window.__xss" not in html and "<img src=x" not in html
    assert "&lt;<mark>script</mark>&gt;window.__xss" in html


def test_many_hits_come_in_pages(owner_client, store_in, project):
    store_in(BROKEN_LONG, "long.json")
    count = fulltext.search(project, "step").count()
    assert count > 60
    first = owner_client.get(url(project, q="step"))
    second = owner_client.get(url(project, q="step", page=2))
    assert len(hits_of(first)) == 50 and 0 < len(hits_of(second)) <= 50
    assert not {h[0] for h in hits_of(first)} & {h[0] for h in hits_of(second)}
    html = first.content.decode()
    assert f"({count} rows)" in html
    assert re.search(r'href="\?q=step&amp;page=2" rel="next"', html)


def test_someone_elses_project_is_not_found_and_anonymous_signs_in(
    client, other_client, store_in, project
):
    store_in(DEPLOY, "deploy.json")
    assert other_client.get(url(project, q="billing")).status_code == 404
    response = client.get(url(project, q="billing"))
    assert response.status_code == 302 and response["Location"].startswith("/login/?next=")


def test_the_other_users_own_project_of_the_same_name_shows_only_theirs(
    other_client, other_user, store_in, project
):
    from inspector.web.store import project_for

    store_in(DEPLOY, "deploy.json")
    theirs = project_for(other_user, "Payments")
    assert theirs.slug == project.slug
    store_in(canonical(user("billing, mallory's")), "m.json", theirs, other_user)
    hits = hits_of(other_client.get(url(theirs, q="billing")))
    assert [name for _, name, _, _ in hits] == ["m.json"]


@pytest.mark.parametrize("query", ['"', "NEAR(", "a AND OR", "*", "x:*", "'&|!", "((("])
def test_syntax_is_never_an_error(owner_client, store_in, project, query):
    store_in(DEPLOY, "deploy.json")
    assert owner_client.get(url(project, q=query)).status_code == 200


def test_no_word_at_all_says_so(owner_client, project):
    response = owner_client.get(url(project, q="*** ---"))
    assert response.status_code == 200 and b"holds no word to look for" in response.content


def test_bad_parameters_are_a_bad_request(owner_client, project):
    assert owner_client.get(url(project, q="x" * 201)).status_code == 400
    assert owner_client.get(url(project, q="x", page="zero")).status_code == 400


def test_sessions_not_indexed_yet_are_indexed_by_the_search(owner_client, store_in, project):
    from inspector.search.models import SearchIndexed, SearchRow

    store_in(DEPLOY, "deploy.json")
    SearchIndexed.objects.all().delete()
    SearchRow.objects.all().delete()
    response = owner_client.get(url(project, q="billing"))
    assert len(hits_of(response)) == fulltext.search(project, "billing").count() > 0
    assert b"not indexed yet" not in response.content


def test_a_search_out_of_time_says_how_many_sessions_it_did_not_search(
    owner_client, store_in, project, monkeypatch
):
    from inspector.search import views
    from inspector.search.models import SearchIndexed

    store_in(DEPLOY, "deploy.json")
    store_in(REFUND, "refund.json")
    SearchIndexed.objects.filter(transcript__file_name="refund.json").delete()
    monkeypatch.setattr(views, "CATCH_UP_SECONDS", 0.0)
    response = owner_client.get(url(project, q="billing"))
    assert b"1 session of this project is not indexed yet" in response.content
    monkeypatch.undo()
    response = owner_client.get(url(project, q="billing"))
    assert b"not indexed yet" not in response.content


def test_a_search_that_finds_nothing_says_so(owner_client, store_in, project):
    """Issue 31: no hit at all used to give an empty page under the query's heading."""
    store_in(DEPLOY, "deploy.json", path="ops/deploy.json")
    response = owner_client.get(url(project, q="zebracorn"))
    html = response.content.decode()
    assert response.status_code == 200 and not hits_of(response)
    assert "No row of this project's sessions holds these words." in html
    assert "0 rows hold “zebracorn”" in html


def test_the_box_alone_says_no_more_than_the_box(owner_client, project):
    html = owner_client.get(url(project)).content.decode()
    assert "holds these words" not in html and "rows hold" not in html


def test_past_the_count_limit_the_first_rows_are_listed_in_order_and_the_page_says_more(
    owner_client, store_in, project, monkeypatch
):
    store_in(BROKEN_LONG, "long.json", path="b/long.json")
    store_in(DEPLOY, "deploy.json", path="a/deploy.json")
    every = list(fulltext.search(project, "step"))  # under the default limit: all of them
    assert len(every) > 12
    monkeypatch.setattr(fulltext, "COUNT_LIMIT", 12)
    results = fulltext.search(project, "step")
    assert results.count() == 12 and results.more and results.sessions == 0
    assert [hit.href for hit in results] == [hit.href for hit in every[:12]]
    response = owner_client.get(url(project, q="step"))
    heading = re.search(r"<h1>(.*?)</h1>", response.content.decode(), re.S).group(1)
    assert heading.startswith("More than 12 rows hold")
    assert [unescape(h[0]) for h in hits_of(response)] == [hit.href for hit in every[:12]]
    # At the limit exactly, nothing is left out: the count is the rows'.
    monkeypatch.setattr(fulltext, "COUNT_LIMIT", len(every))
    results = fulltext.search(project, "step")
    assert results.count() == len(every) and not results.more and results.sessions == 1


def test_past_the_count_limit_a_query_few_in_the_index_lists_the_same_rows_as_the_walk(
    store_in, project, monkeypatch
):
    # On PostgreSQL a query the planner expects in few rows of the whole index reads its
    # pages by the GIN index and sorts them (GIN_PAGE_ROWS); the walk in name order reads
    # the others. Both list the same first rows in the same order, on every page.
    store_in(BROKEN_LONG, "long.json", path="b/long.json")
    store_in(DEPLOY, "deploy.json", path="a/deploy.json")
    store_in(BROKEN_LONG, "long2.json", path="c/long.json")
    monkeypatch.setattr(fulltext, "COUNT_LIMIT", 30)
    pages = {}
    for rows in (0, 10**9):
        monkeypatch.setattr(fulltext, "GIN_PAGE_ROWS", rows)
        results = fulltext.search(project, "step")
        assert results.count() == 30 and results.more and results.sessions == 0
        pages[rows] = [[hit.href for hit in results[at : at + 7]] for at in range(0, 30, 7)]
        assert [href for page in pages[rows] for href in page] == [h.href for h in results]
    assert pages[0] == pages[10**9]
    names = [hit.session_name for page in (fulltext.search(project, "step"),) for hit in page]
    assert names == sorted(names)


@pytest.mark.parametrize(
    "query",
    [
        "step",
        "ste",
        "step 1",
        "st the",
        "the billing",
        '"rolled out" deplo',
        '"successfully rolled out"',
        '"a tool result for call"',
        '"the tool"',
        "zebracorn",
    ],
)
def test_every_way_of_reading_a_query_lists_the_same_rows(store_in, project, monkeypatch, query):
    # On PostgreSQL a count reads the exact words first (past the limit of those, the
    # query is past it), a query few in the index reads GIN for its terms but the common
    # prefixes and checks those on the rows, GIN leaves out the words in most rows (of a
    # phrase too) and checks them on the rows it read, and the rest is the planner's: with
    # the thresholds at both ends the rows listed, their order and the counts are the same.
    store_in(BROKEN_LONG, "long.json", path="b/long.json")
    store_in(DEPLOY, "deploy.json", path="a/deploy.json")
    store_in(BROKEN_LONG, "long2.json", path="c/long.json")
    monkeypatch.setattr(fulltext, "COUNT_LIMIT", 30)
    seen = []
    ends = ((0, 0), (10**9, 0), (0, 10**9), (10**9, 10**9))
    for (page_rows, count_rows), share in itertools.product(ends, (0.0, 1.0)):
        monkeypatch.setattr(fulltext, "GIN_PAGE_ROWS", page_rows)
        monkeypatch.setattr(fulltext, "GIN_COUNT_ROWS", count_rows)
        monkeypatch.setattr(fulltext, "GIN_COMMON_SHARE", share)
        results = fulltext.search(project, query)
        pages = [[hit.href for hit in results[at : at + 7]] for at in range(0, 30, 7)]
        seen.append((results.count(), results.more, results.sessions, pages))
    assert all(found == seen[0] for found in seen)
