"""A record whose words sit under a field its reader does not know is never read as blank.

Each real corpus file of each shape is changed in one place: a message's
``content`` (or a part's ``text``) is renamed to a field no shape has, as
another agent's or a newer version's record would hold it. The reader must
refuse the file, or name that record as not read; reading it as a blank
message would have a repair drop it as a placeholder (MSG-1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from inspector import formats
from inspector.engine.canonical import is_blank
from inspector.formats import FORMATS, FormatError
from tests.testdata import CORPUS, files, read

# The fields words are kept under, across the shapes; each gets renamed in turn.
WORD_FIELDS = ("content", "text", "parts")
PER_SHAPE = 3  # corpus files per shape: enough to meet each of its record kinds
LARGEST = 300_000  # bytes; bigger files add time, not record kinds


def samples() -> list[tuple[str, str]]:
    chosen: dict[str, list[str]] = {name: [] for name in FORMATS}
    for path in files(CORPUS):
        data = read(path)
        if len(data) > LARGEST:
            continue
        try:
            parsed = formats.load(data)
        except FormatError:
            continue
        if len(chosen[parsed.format]) < PER_SHAPE:
            chosen[parsed.format].append(str(path.relative_to(CORPUS)))
    return [(shape, name) for shape, names in chosen.items() for name in names]


def blanks(parsed: formats.Parsed) -> int:
    return sum(
        1
        for m in parsed.messages
        if m["role"] != "tool"
        and not (m.get("metadata") or {}).get("tool_calls")
        and is_blank(m.get("content"))
    )


def renamed(value: Any, field: str) -> tuple[Any, bool]:
    """``value`` with the first ``field`` found (depth first) renamed to ``x_<field>``."""
    if isinstance(value, dict):
        if field in value:
            return {(f"x_{k}" if k == field else k): v for k, v in value.items()}, True
        for key, inner in value.items():
            changed, done = renamed(inner, field)
            if done:
                return {**value, key: changed}, True
    elif isinstance(value, list):
        for at, inner in enumerate(value):
            changed, done = renamed(inner, field)
            if done:
                return [*value[:at], changed, *value[at + 1 :]], True
    return value, False


def variants(data: bytes) -> Iterator[bytes]:
    """The file with one record's words renamed, for each record and field in turn."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        lines = data.split(b"\n")
        for at, line in enumerate(lines[:40]):
            try:
                record = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            for field in WORD_FIELDS:
                changed, done = renamed(record, field)
                if done:
                    yield b"\n".join([*lines[:at], orjson.dumps(changed), *lines[at + 1 :]])
        return
    holder = doc if isinstance(doc, list) else None
    key = None
    if isinstance(doc, dict):
        key = next((k for k, v in doc.items() if isinstance(v, list) and v), None)
        holder = doc[key] if key is not None else None
    for at, record in enumerate((holder or [])[:40]):
        for field in WORD_FIELDS:
            changed, done = renamed(record, field)
            if done:
                records = [*holder[:at], changed, *holder[at + 1 :]]
                yield orjson.dumps(records if key is None else {**doc, key: records})


@pytest.mark.parametrize(("shape", "name"), samples())
def test_words_under_an_unknown_field_are_refused_or_named_never_read_blank(shape, name):
    data = read(CORPUS / name)
    before = formats.load(data, shape)
    for variant in variants(data):
        try:
            parsed = formats.load(variant, shape)
        except FormatError:
            continue
        more_blank = blanks(parsed) > blanks(before)
        named = len(parsed.problems) > len(before.problems)
        assert not more_blank or named, "a record with its words renamed was read as blank"
        if named:
            # A record named as not read stays in the file when a repair rewrites it.
            note = {"role": "user", "content": "NOTE", "metadata": {"note": "interruption"}}
            written = FORMATS[shape].serialise([*parsed.messages, note], parsed)
            assert b"NOTE" in written and b'"x_' in written, "the unread record was dropped"


def test_every_shape_is_sampled():
    assert {shape for shape, _ in samples()} == set(FORMATS)
