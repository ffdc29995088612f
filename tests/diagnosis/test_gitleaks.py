"""gitleaks' rule set loads whole, and what each rule finds is masked."""

from __future__ import annotations

import re
import tomllib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import gitleaks
from inspector.redact import RULES, mask

LOADED = gitleaks.load()
BY_ID = {rule.id: rule for rule in LOADED}


def test_every_rule_with_a_pattern_loads_and_is_used():
    with gitleaks.RULES_FILE.open("rb") as handle:
        config = tomllib.load(handle)
    with_pattern = [rule["id"] for rule in config["rules"] if "regex" in rule]
    assert len(with_pattern) > 200
    assert sorted(BY_ID) == sorted(with_pattern)
    used = {rule.kind for rule in RULES}
    assert set(with_pattern) <= used
    assert all(rule.keywords for rule in LOADED)


@pytest.mark.parametrize(
    ("go", "python"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{32})", r"\b(p8e-(?i:[a-z0-9]{32}))"),
        (r"dp\.pt\.(?i)[a-z0-9]{43}", r"dp\.pt\.(?i:[a-z0-9]{43})"),
        (r"(?i)abc(?:x|$)", r"(?i)abc(?:x|$)"),
        (r"(?:[^\w-]|\z)", r"(?:[^\w-]|\Z)"),
        (r"[[:x]", r"[\[:x]"),
    ],
)
def test_go_syntax_is_translated(go, python):
    assert gitleaks.python_regex(go) == python
    re.compile(python)


@st.composite
def a_finding(draw: st.DrawFn) -> tuple[str, str, str]:
    """A rule, a text its pattern matches whole, and the secret gitleaks would report in it."""
    rule = draw(st.sampled_from(LOADED))
    text = draw(st.from_regex(rule.pattern, fullmatch=True).filter(lambda t: t.isprintable()))
    match = rule.pattern.fullmatch(text)
    assert match is not None
    groups = [rule.group] if rule.group else list(range(1, rule.pattern.groups + 1)) or [0]
    secret = next((match.group(g) for g in groups if match.group(g)), match.group(0))
    # What gitleaks reports: a keyword in the text, and past the rule's entropy and allowlists.
    reported = any(k in text.lower() for k in rule.keywords) and rule.valid(secret, text)
    draw(st.just(None).filter(lambda _: reported and len(secret.strip()) >= 8))
    return rule.id, text, secret


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(a_finding())
def test_what_a_gitleaks_rule_finds_is_masked(finding):
    rule_id, text, secret = finding
    masked = mask(f"output:\n{text}\nend")
    assert secret not in masked, (rule_id, text)
