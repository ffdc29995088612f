"""Two shortcuts of the search, each giving the spans the full search gives.

``Rule.at_needles`` (gitleaks' rules whose pattern begins with a literal that starts
with one of their keywords, ``redact._starts_at_needle``) replaces a ``finditer`` over
each window around the needles by a ``match`` at each needle in it. ``Rule.requires``
skips a rule on a text holding none of the pieces every match of it holds. The spans
found are those of the full search, on the whole test corpus and on texts made of each
such rule's own matches among ordinary text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import redact
from inspector.redact import RULES, find_secrets
from tests.testdata import CORPUS

AT_NEEDLES = [rule for rule in RULES if rule.at_needles]
REQUIRING = [rule for rule in RULES if rule.requires]
PADDING = "ordinary words and a path /tmp/s.x, a key, ey and sk " * 12  # > redact._SMALL


@contextmanager
def windowed_search() -> Iterator[None]:
    """Every rule searched by ``finditer`` over its windows, on every text it wakes on."""
    saved = redact.RULES
    redact.RULES = tuple(dataclasses.replace(rule, at_needles=False, requires=()) for rule in saved)
    try:
        yield
    finally:
        redact.RULES = saved


def both_ways(text: str) -> tuple[list[redact.SecretMatch], list[redact.SecretMatch]]:
    shortcut = find_secrets(text)
    with windowed_search():
        return shortcut, find_secrets(text)


def test_the_shortcut_is_taken_by_many_rules_and_not_by_a_rule_reading_a_name_first():
    assert len(AT_NEEDLES) > 50
    assert not any(rule.lead for rule in AT_NEEDLES)
    kinds = {rule.kind for rule in AT_NEEDLES}
    assert {"vault-service-token", "jwt"} <= kinds
    assert "generic-api-key" not in kinds  # its name comes before the keyword


def corpus_texts() -> list[str]:
    paths = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".json", ".jsonl"))
    return [path.read_bytes().decode("utf-8", "replace") for path in paths]


def test_the_corpus_has_the_same_spans_either_way():
    texts = corpus_texts()
    assert len(texts) > 100
    found = 0
    for text in texts:
        shortcut, windowed = both_ways(text)
        assert shortcut == windowed
        found += len(shortcut)
    assert found > 0


@st.composite
def texts_of_matches(draw: st.DrawFn) -> str:
    """Ordinary text around matches of at-needle rules, some glued to each other."""
    pieces = [PADDING]
    for _ in range(draw(st.integers(1, 4))):
        rule = draw(st.sampled_from(AT_NEEDLES + REQUIRING))
        match = draw(st.from_regex(rule.pattern, fullmatch=True).filter(str.isprintable))
        glue = draw(st.sampled_from(["", " ", "\n", '"', "=", "x", "\\n"]))
        pieces += [match, glue, draw(st.sampled_from(["", PADDING[:40], PADDING]))]
    return "".join(pieces)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(texts_of_matches())
def test_texts_of_real_secret_shapes_have_the_same_spans_either_way(text):
    shortcut, windowed = both_ways(text)
    assert shortcut == windowed


@pytest.mark.parametrize("rule", AT_NEEDLES, ids=[rule.kind for rule in AT_NEEDLES])
def test_what_such_a_rule_matches_begins_with_one_of_its_needles(rule):
    sample = st.from_regex(rule.pattern, fullmatch=True)

    @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
    @given(sample)
    def check(text: str) -> None:
        match = rule.pattern.search(text)
        assert match is not None
        begins = text[match.start() :].encode("ascii", "replace").lower()
        assert begins.startswith(rule.needles)

    check()


def test_a_rule_that_requires_a_comparison_is_skipped_only_without_one():
    (rule,) = REQUIRING
    assert rule.kind == "secret keyword" and set(rule.requires) == {"==", "!=", "=!", "!!"}
    for operator in ("==", "!=", "===", "!==", "!!", "=!="):
        text = f"if ('hunter2value' {operator} password) {{}}"
        assert [m.kind for m in find_secrets(text)] == ["secret keyword"], operator
        assert both_ways(PADDING + text)[0] == both_ways(PADDING + text)[1]
    assert find_secrets("if ('hunter2value' = password) {}") == []


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.from_regex(REQUIRING[0].pattern, fullmatch=True))
def test_what_the_comparison_rule_matches_holds_a_required_pair(text):
    assert any(part in text for part in REQUIRING[0].requires)
