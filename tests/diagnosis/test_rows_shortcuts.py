"""The timeline's shortcuts give the rows the general code gives (``diagnosis.rows._SHORTCUTS``).

Most messages of a long session are kept as they were, with short texts and
calls nobody touched; ``rows.py`` takes a short path for each of those. Here
the same histories are laid out twice, with the shortcuts on and off, over
generated histories (the engine's property-test strategy: dangling calls,
orphans, repeated and empty ids, cut calls) and over the corpus.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from inspector import formats
from inspector.diagnosis import diagnose, rows
from tests.engine.test_properties import dumps, histories
from tests.testdata import CORPUS, files, read

EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _both(parsed: formats.Parsed, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict]:
    fast = diagnose(parsed).to_dict()
    with monkeypatch.context() as patched:
        patched.setattr(rows, "_SHORTCUTS", False)
        plain = diagnose(parsed).to_dict()
    return fast, plain


@EXAMPLES
@given(history=histories())
def test_the_shortcuts_give_the_general_rows_on_generated_histories(history):
    if not history:
        return  # no transcript to read
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast, plain = _both(formats.load(dumps(history), "canonical"), monkeypatch)
    assert fast == plain


def test_turning_the_shortcuts_off_is_seen():
    # The switch is read where the rows are made: off, the general code runs
    # (a long text is clipped there, a short one comes back as itself either way).
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    parsed = formats.load(dumps(history), "canonical")
    with pytest.MonkeyPatch.context() as monkeypatch:
        calls = []
        real = rows._render_content
        monkeypatch.setattr(rows, "_render_content", lambda c: calls.append(c) or real(c))
        diagnose(parsed)
        assert calls == []  # the short texts took the shortcut
        monkeypatch.setattr(rows, "_SHORTCUTS", False)
        diagnose(parsed)
        assert calls == ["hi", "hello"]


@pytest.mark.parametrize(
    "path",
    [p for p in files(CORPUS, "*") if p.suffix in {".jsonl", ".json", ".zst", ".log"}],
    ids=lambda p: p.name[:60],
)
def test_the_shortcuts_give_the_general_rows_on_the_corpus(path, monkeypatch):
    try:
        every = formats.load_all(read(path))
    except formats.FormatError:
        return  # not a transcript (a README, a fixture of another kind)
    for parsed in every:
        fast, plain = _both(parsed, monkeypatch)
        assert fast == plain
