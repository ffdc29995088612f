"""The spec and its seed documents are served from the repository, and rule pages link to them."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from inspector.engine import RULES, providers
from tests.testdata import SEEDS, SPEC


def test_spec_page_renders_the_repositorys_spec_with_an_id_on_every_section(client):
    response = client.get(reverse("spec"))
    assert response.status_code == 200
    html = response.content.decode()
    sections = re.findall(r"^## (\d+)\. ", SPEC.read_text(), re.M)
    assert len(sections) >= 7
    for number in sections:
        assert re.search(rf'<h2 id="{number}-[a-z0-9_-]+">{number}\. ', html), number
    # Rendered, not shown as Markdown source; the spec's own words are there.
    assert "<table>" in html and "| id | rule |" not in html
    assert "repair_history" in html


def test_spec_page_lists_and_serves_every_seed_document(client):
    html = client.get(reverse("spec")).content.decode()
    for seed in sorted(SEEDS.glob("*.txt")):
        link = reverse("spec_seed", args=[seed.name])
        assert f'href="{link}"' in html
        response = client.get(link)
        assert response.status_code == 200
        assert response["Content-Type"] == "text/plain; charset=utf-8"
        assert response.content == seed.read_bytes()


@pytest.mark.parametrize("name", ["nope.txt", "..%2FSPEC.md", "SPEC.md", ".."])
def test_only_listed_seed_documents_are_served(client, name):
    assert client.get(f"/spec/seeds/{name}").status_code == 404


@pytest.mark.parametrize("rule", RULES.values(), ids=lambda rule: rule.id)
def test_rule_page_links_to_its_section_of_the_spec_and_to_its_sources(client, rule):
    html = client.get(reverse("rule", args=[rule.id])).content.decode()
    spec_html = client.get(reverse("spec")).content.decode()
    if rule.spec:
        assert re.fullmatch(r"§\d+(, steps? .+)?", rule.spec), rule.spec
        number = rule.spec[1:].split(",")[0]
        anchor = re.search(rf'<h2 id="({number}-[a-z0-9_-]+)">', spec_html).group(1)
    else:  # one of the project's own rules, listed after the spec on its page
        anchor = "rules-of-our-own"
        assert f'<h2 id="{anchor}">' in spec_html and f"| {rule.id} |" not in spec_html
        assert f"<td>{rule.id}</td>" in spec_html.split(anchor)[1]
    assert f'href="/spec/#{anchor}"' in html
    for source in (rule.source, *rule.other_sources):
        if source.startswith("seeds/"):
            link = reverse("spec_seed", args=[source.removeprefix("seeds/")])
            assert f'href="{link}"' in html
            assert client.get(link).status_code == 200
        else:
            assert f'href="{source}"' in html


@pytest.mark.parametrize("rule", [r for r in RULES.values() if r.claims], ids=lambda r: r.id)
def test_a_refusal_only_claimed_is_said_on_the_rule_page(client, rule):
    html = client.get(reverse("rule", args=[rule.id])).content.decode()
    assert "Reported, not refused" in html
    for claim, where in rule.claims:
        assert escape(claim) in html and escape(where) in html


def test_the_anthropic_check_does_not_refuse_what_is_only_claimed():
    body = {
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t" * 70, "name": "a", "input": {}},
                    {"type": "text", "text": "after the call"},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t" * 70}]},
        ]
    }
    assert providers.check("anthropic", body).state == providers.ACCEPTED
