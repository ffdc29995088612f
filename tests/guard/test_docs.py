"""The guard's examples in the README and docs/guard.md run, and send what they say."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest

from inspector.engine.providers import check
from tests.testdata import DOCS, REPO
from transcript_inspector import PROVIDERS, guard


def _examples() -> list[tuple[str, str]]:
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Guard library") : readme.index("## Sharing")]
    found = []
    for where, text in (("README", section), ("docs/guard.md", (DOCS / "guard.md").read_text())):
        for number, block in enumerate(re.findall(r"```python\n(.*?)```", text, re.S)):
            # The examples with a body written out: the others show names only.
            if re.search(r"body = \{|guard\(\s*\{", block):
                found.append((f"{where}#{number}", block))
    return found


EXAMPLES = _examples()


def _sink(**body: Any) -> dict[str, Any]:
    return body


@pytest.mark.parametrize(("where", "code"), EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_an_example_runs_and_sends_an_accepted_body(where: str, code: str) -> None:
    create = SimpleNamespace(create=_sink)
    client = SimpleNamespace(chat=SimpleNamespace(completions=create), responses=create)
    scope: dict[str, Any] = {
        "guard": guard,
        "client": client,
        "anthropic_client": SimpleNamespace(messages=create),
    }
    exec(code, scope)
    guarded = scope["guarded"]
    (provider,) = [p for p in PROVIDERS if f'"{p}"' in code]
    assert guarded.changed
    model = "gemini-2.5-flash" if provider == "gemini" else None
    assert check(provider, guarded.body, model=model).accepted, where


def test_every_provider_has_an_example_in_both_places() -> None:
    for where in ("README", "docs/guard.md"):
        shown = {
            p
            for name, code in EXAMPLES
            if name.startswith(where)
            for p in PROVIDERS
            if f'"{p}"' in code
        }
        assert shown == set(PROVIDERS), where
