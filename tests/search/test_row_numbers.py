"""Issue 31: one row numbering everywhere. A row is "message N" (N its message in the
file, from 1) or an "inserted row" alike in the timeline's gutter, its findings, the
project search, the timeline's own search, the CLI report, the Markdown and HTML exports
and a share page. The project search used to say "row 3" (the row's place in the
annotated view, from 0) for the row the timeline calls #4."""

from __future__ import annotations

import io
import re
from html import unescape

import pytest

from inspector import cli
from inspector.share.models import ShareLink
from tests.search.test_pages import hits_of, url
from tests.web.conftest import assistant, call, canonical, result, user

pytestmark = pytest.mark.django_db

# A repair inserts a row before the ticket's user turn (c1 has no result), so from there on
# a row's place in the annotated view and its message number part ways.
NUMBERED = canonical(
    user("find the ticket"),
    assistant(call("c1"), content="Looking."),
    user("stop, try the zebracorn ticket"),
    assistant(call("c2", "fetch"), content="Fetching the zebracorn."),
    result("c2", "zebracorn ticket 7"),
    result("nope", "stray zebracorn result"),
    assistant(content="Done with the zebracorn."),
)


def gutter(html: str) -> dict[str, str]:
    """Each row's anchor key and the number its gutter shows ("#4" or "new")."""
    return dict(
        re.findall(
            r'<article id="(r\d+)".*?<a class="anchor" href="#r\d+"[^>]*>([^<]*)</a>', html, re.S
        )
    )


def findings_list(html: str) -> list[tuple[str, str]]:
    """Each finding's link target and the words naming its row."""
    return re.findall(r'<li><a href="[^"]*#(r\d+)">((?:message \d+|inserted row)[^<]*)</a>', html)


@pytest.fixture
def numbered(store_in, project):
    return store_in(NUMBERED, "numbered.json", path="ops/numbered.json")


def test_every_place_numbers_a_row_as_the_timeline_does(owner_client, numbered, project, tmp_path):
    timeline = owner_client.get(numbered.get_absolute_url()).content.decode()
    shown = gutter(timeline)
    assert "new" in shown.values(), "the repair inserted a row"
    # A row's place (its key) and its number differ past the inserted row.
    assert any(v != "new" and v != f"#{int(k[1:]) + 1}" for k, v in shown.items())
    label = {k: ("inserted row" if v == "new" else f"message {v[1:]}") for k, v in shown.items()}

    # The findings beside the timeline.
    listed = findings_list(timeline)
    assert listed
    for key, words in listed:
        assert words.split(",")[0] == label[key]

    # The project search: every hit names its row as the timeline does.
    hits = owner_client.get(url(project, q="zebracorn"))
    names = re.findall(
        r'class="hit-link"><span class="path">[^<]*</span> · ([^<]*)</a>', hits.content.decode()
    )
    keys = [unescape(href).rsplit("#", 1)[1] for href, *_ in hits_of(hits)]
    assert len(names) == len(keys) >= 4
    assert names == [label[key] for key in keys]

    # The same with a regular expression.
    regex = owner_client.get(url(project, q="zebra[a-z]+", regex="on")).content.decode()
    assert (
        re.findall(r'class="hit-link"><span class="path">[^<]*</span> · ([^<]*)</a>', regex)
        == names
    )

    # The timeline's own search, as a page of links (no JavaScript).
    own = owner_client.get(f"/t/{numbered.public_id}/search/?q=zebracorn").content.decode()
    own_hits = re.findall(r'<a href="[^"]*#(r\d+)">([^<]*)</a>', own)
    assert own_hits and all(words == label[key] for key, words in own_hits)

    # The Markdown export and the one-file HTML export.
    markdown = owner_client.get(f"/t/{numbered.public_id}/download/markdown/").content.decode()
    exported = owner_client.get(f"/t/{numbered.public_id}/download/html/").content.decode()
    assert gutter(exported) == shown
    for key, words in findings_list(exported):
        assert words.split(",")[0] == label[key]
    finding_words = [words.split(",")[0] for _, words in listed]
    assert re.findall(r"^- (message \d+|inserted row)", markdown, re.M) == finding_words

    # A share page, full and redacted.
    for mode in (ShareLink.FULL, ShareLink.REDACTED):
        _, token = ShareLink.issue(numbered, mode, "7")
        shared = owner_client.get(f"/s/{token}/").content.decode()
        assert gutter(shared) == shown, mode
        assert [w.split(",")[0] for _, w in findings_list(shared)] == finding_words, mode

    # The CLI report, from the same bytes.
    path = tmp_path / "numbered.json"
    path.write_bytes(NUMBERED)
    out = io.StringIO()
    cli.main(["report", str(path)], out)
    printed = re.findall(r"^  \S+\s+(message \d+|inserted row)", out.getvalue(), re.M)
    assert printed == finding_words
