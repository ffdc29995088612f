"""Every shape in the registry keeps the contract ``formats.base`` states.

One test per shape and clause, parametrized over ``formats.FORMATS`` (as
Pygments' tests loop over every registered lexer): a shape added to the
registry is held to all of it without being named here. The clauses: the
required names and signatures, the optional hooks' signatures, a ``sniff``
that answers a float in [0, 1] for any bytes, and a corpus file of the
shape (``tests/data/corpus/<NAME>/``) that it reads and writes back byte for
byte when nothing in it is wrong.
"""

from __future__ import annotations

import inspect
import os
import re
import types
import typing
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inspector import formats
from inspector.diagnosis import repair_parsed
from inspector.engine.providers import PROVIDERS
from inspector.formats.base import HOOKS, Shape
from tests.formats.registry import corpus_of
from tests.testdata import CORPUS, read

NAMES = list(formats.FORMATS)
REQUIRED = ("sniff", "parse", "serialise")
# Examples of bytes each sniffer is given (``make fuzz``: many more).
SNIFFS = {"ci": 100, "dev": 30, "fuzz": 5000}[os.environ.get("HYPOTHESIS_PROFILE", "ci")]
# How many of a shape's smallest files are written back (the corpus test reads them all).
WRITTEN_BACK = 3
# The optional hooks that are keywords of ``parse`` (the others are functions).
PARSE_KEYWORDS = {
    hook for hook, protocol in HOOKS.items() if hook in inspect.signature(protocol.parse).parameters
}


def signature(function: Callable[..., Any], skip_self: bool) -> list[tuple[Any, ...]]:
    """A function's parameters (name, kind, default, type) and return type, types resolved."""
    hints = typing.get_type_hints(function)
    params = list(inspect.signature(function).parameters.values())[1 if skip_self else 0 :]
    return [(p.name, p.kind, p.default, hints.get(p.name)) for p in params] + [
        ("return", None, None, hints.get("return"))
    ]


def declared(protocol: type, name: str) -> list[tuple[Any, ...]]:
    return signature(getattr(protocol, name), skip_self=True)


@pytest.mark.parametrize("name", NAMES)
def test_the_shape_has_the_required_names(name: str) -> None:
    module = formats.FORMATS[name]
    assert isinstance(module, types.ModuleType)
    assert module.NAME == name
    assert module.PROVIDER in PROVIDERS
    assert isinstance(module.LABEL, str) and module.LABEL.strip() == module.LABEL != ""
    assert re.fullmatch(r"[a-z0-9]+", module.EXTENSION), module.EXTENSION
    for function in REQUIRED:
        assert callable(getattr(module, function, None)), f"{name} has no {function}"
    # ``parse`` takes the bytes and, besides, only the keywords of optional hooks.
    parse = signature(module.parse, skip_self=False)
    assert parse[0] == declared(Shape, "parse")[0]
    assert parse[-1] == declared(Shape, "parse")[-1]
    assert {p[0] for p in parse[1:-1]} <= PARSE_KEYWORDS
    for function in ("sniff", "serialise"):
        assert signature(getattr(module, function), skip_self=False) == declared(Shape, function)


@pytest.mark.parametrize("name", NAMES)
def test_the_optional_hooks_it_has_are_the_ones_declared(name: str) -> None:
    module = formats.FORMATS[name]
    parse = {p[0]: p for p in signature(module.parse, skip_self=False)}
    for hook, protocol in HOOKS.items():
        if hook in PARSE_KEYWORDS:
            if hook in parse:
                assert parse[hook] == {p[0]: p for p in declared(protocol, "parse")}[hook]
        elif hasattr(module, hook):
            assert signature(getattr(module, hook), skip_self=False) == declared(protocol, hook)
    if hasattr(module, "ORDER"):
        assert isinstance(module.ORDER, int)
    if hasattr(module, "BLANK_IS_WRITTEN"):
        assert module.BLANK_IS_WRITTEN is True
    assert formats.has_hook(module, "parse_all") == formats.has_hook(module, "serialise_all")
    if formats.has_hook(module, "to_wire"):
        assert formats.WIRE_FORMATS.get(name) is module


# Bytes a sniffer meets: anything, and the starts of real files of every shape, cut anywhere.
HEADS = [read(path)[: formats.HEAD_BYTES] for name in NAMES for path in corpus_of(name)[:1]]
ANY_BYTES = st.one_of(
    st.binary(max_size=2048),
    st.sampled_from(HEADS).flatmap(
        lambda head: st.integers(0, len(head)).map(lambda end: head[:end])
    ),
    st.text(alphabet='{}[]":,\n tuserolcnapimdgxy0123456789', max_size=400).map(str.encode),
)


@pytest.mark.parametrize("name", NAMES)
def test_sniff_answers_a_float_in_0_to_1_for_any_bytes(name: str) -> None:
    sniff = formats.FORMATS[name].sniff

    @settings(max_examples=SNIFFS, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ANY_BYTES)
    def sniffs(head: bytes) -> None:
        score = sniff(head)
        assert isinstance(score, float) and 0.0 <= score <= 1.0, (score, head[:80])

    sniffs()


def check_written_back(name: str) -> list[str]:
    """The shape's smallest corpus files without a problem, each written back byte for
    byte as read, and as repaired when the repair changed nothing; their names."""
    module = formats.FORMATS[name]
    paths = corpus_of(name)
    assert paths, (
        f"no corpus file of {name}: add a real one under tests/data/corpus/{name}/ "
        "with its row in tests/data/corpus/README.md"
    )
    checked = []
    for path in paths:
        data = read(path)
        parsed = formats.load(data, name) if data.strip() else None
        if parsed is None or parsed.problems:
            continue
        assert module.serialise(parsed.messages, parsed) == data, path
        repair = repair_parsed(parsed)
        if not repair.actions:
            assert module.serialise(repair.messages, parsed) == data, path
        checked.append(path.name)
        if len(checked) == WRITTEN_BACK:
            break
    assert checked, f"no corpus file of {name} reads without a problem"
    return checked


@pytest.mark.parametrize("name", NAMES)
def test_a_corpus_file_of_the_shape_is_written_back_byte_for_byte(name: str) -> None:
    assert check_written_back(name)


def test_a_shape_without_a_corpus_file_fails_the_contract(monkeypatch) -> None:
    """What a new shape meets before its corpus file is added."""
    name = "not-yet-in-the-corpus"
    assert not (CORPUS / name).exists()
    monkeypatch.setitem(formats.FORMATS, name, formats.FORMATS["canonical"])
    with pytest.raises(AssertionError, match="no corpus file of not-yet-in-the-corpus"):
        check_written_back(name)
