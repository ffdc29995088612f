"""Issue 18, point 6: the words a user reads on rule pages and the timeline's filters."""

from __future__ import annotations

import html as htmllib
import re

import pytest
from django.urls import reverse

from inspector.diagnosis import REPAIR_RULES
from inspector.engine import RULES
from inspector.web.words import PLAIN

pytestmark = pytest.mark.django_db


def text_of(html: str) -> str:
    return htmllib.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)))


@pytest.mark.parametrize("rule_id", REPAIR_RULES)
def test_a_rule_page_says_what_went_wrong_what_the_repair_does_and_what_to_do(client, rule_id):
    html = client.get(reverse("rule", args=[rule_id])).content.decode()
    text = text_of(html)
    plain = PLAIN[rule_id]
    assert f"{rule_id} {plain.title}" in text
    for label, words in (
        ("What went wrong", plain.wrong),
        ("What the repair does", plain.repair),
        ("What to do", plain.todo),
    ):
        assert f"{label} {words}" in text
    # A rule of the spec says where it is defined; one of the project's own says it is ours.
    heading = "In the spec" if RULES[rule_id].spec else "The rule"
    assert heading in text and RULES[rule_id].title in text


def test_spec_terms_on_a_rule_page_are_explained_there(client):
    html = client.get(reverse("rule", args=["PAIR-1"])).content.decode()
    assert "<dt>span</dt>" in html
    assert "where that call's results belong" in text_of(html)
    text = text_of(client.get(reverse("rule", args=["MEM-3"])).content.decode())
    assert "the repair added for a call that never got one" in text  # "healed"


@pytest.mark.parametrize("rule", RULES.values(), ids=lambda rule: rule.id)
def test_sources_are_named_in_words_not_file_names(client, rule):
    html = client.get(reverse("rule", args=[rule.id])).content.decode()
    source = re.search(r'<p class="source">(.*?)</p>', html, re.S).group(1)
    assert "seeds/" not in text_of(source) and ".txt" not in text_of(source)
    assert "Where it comes from:" in source


def test_the_shape_menu_names_the_canonical_form_in_words(owner_client):
    html = owner_client.get(reverse("upload")).content.decode()
    assert "FlowDrop" not in html
    assert "Canonical JSON (the spec's own message list)" in html.replace("&#x27;", "'")


def test_the_rule_menu_offers_only_the_rules_found_with_their_counts(owner_client, transcript):
    html = owner_client.get(reverse("timeline", args=[transcript.public_id])).content.decode()
    menu = re.search(r'<select name="rule"[^>]*>(.*?)</select>', html, re.S).group(1)
    offered = re.findall(r'<option value="([^"]*)"[^>]*>([^<]*)</option>', menu)
    assert [value for value, _ in offered] == ["", "PAIR-1", "PAIR-3", "ID-1"]
    assert ("PAIR-1", "PAIR-1 A tool call never got its result (1)") in offered


def test_a_rule_not_found_here_still_filters_and_says_so(owner_client, transcript):
    response = owner_client.get(reverse("timeline", args=[transcript.public_id]), {"rule": "MSG-1"})
    assert response.status_code == 200
    assert '<option value="MSG-1" selected>MSG-1 (none here)</option>' in response.content.decode()


def test_the_context_filter_says_what_it_does(owner_client, transcript):
    html = owner_client.get(reverse("timeline", args=[transcript.public_id])).content.decode()
    assert "Show only the rows with findings, and" in html
    assert "rows before and after each" in html
