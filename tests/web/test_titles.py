"""Sessions are titled by their first prompt in every table (issue 31), not only by file names."""

from __future__ import annotations

import pytest
from django.urls import reverse

from inspector import diagnosis, formats
from tests.web.conftest import assistant, call, canonical, user

pytestmark = pytest.mark.django_db

PROMPT = "Why does the <b>deploy</b> script fail on Fridays?"


def session(first: str = PROMPT) -> bytes:
    return canonical(
        user("<command-name>/clear</command-name>"),  # an agent's wrapper, not typed words
        user(first),
        assistant(call("c1"), content="Looking."),  # never answered: needs repair
        user("and?"),
    )


def test_the_first_prompt_is_in_the_diagnosis():
    (parsed,) = formats.load_all(session(), "auto")
    assert diagnosis.diagnose(parsed).meta["first_prompt"] == PROMPT
    long = "word " * 100
    (parsed,) = formats.load_all(session(long), "auto")
    title = diagnosis.diagnose(parsed).meta["first_prompt"]
    assert title.endswith("…") and len(title) <= diagnosis.TITLE_CHARS
    assert "\n" not in title and "  " not in title


def test_tables_title_each_session_by_its_first_prompt_escaped(owner_client, owner):
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "work")
    transcript, _ = store_upload(owner, session(), "4c02af27.json", project=project)
    escaped = "Why does the &lt;b&gt;deploy&lt;/b&gt; script fail on Fridays?"
    pages = [
        reverse("transcript_list"),
        reverse("scan:project", args=[project.slug]),
        transcript.get_absolute_url(),
    ]
    for page in pages:
        html = owner_client.get(page).content.decode()
        assert escaped in html, page
        assert "<b>deploy</b>" not in html, page
    listed = owner_client.get(reverse("transcript_list")).content.decode()
    assert f'<a href="{transcript.get_absolute_url()}" class="title"' in listed
