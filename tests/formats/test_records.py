"""The record-log writer base (``formats/records.py``), through a shape as small as one can be.

``_Toy`` is the base's docstring example made whole: a log of
``{"role", "text"}`` lines among lines of other records. What it shows is
what every record-log shape gets from the base: untouched lines byte for
byte, a changed line in its place, new lines after the line before them, a
dropped message's line gone, a moved one where it now stands, and the
role-change policy deciding which repaired message keeps a line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from inspector.formats.base import FormatError, Parsed
from inspector.formats.jsonl import read_jsonl
from inspector.formats.private import Message
from inspector.formats.records import DROP, SRC, LogState, RecordWriter


@dataclass(slots=True)
class _State(LogState):
    origin: list[int]  # message -> its record


def _parse(data: bytes) -> Parsed:
    read = read_jsonl(data)
    messages: list[Message] = []
    origin: list[int] = []
    for rec, record in enumerate(read.records):
        value = record.value
        if isinstance(value, dict) and "role" in value:
            metadata = {SRC: len(messages)}
            messages.append({"role": value["role"], "content": value["text"], "metadata": metadata})
            origin.append(rec)
    state = _State(data, read.records, read.final_newline, read.crlf, origin)
    return Parsed("toy", messages, problems=read.problems, state=state)


def _line(m: Message) -> dict[str, Any]:
    return {"role": m["role"], "text": m["content"]}


class _Toy(RecordWriter[_State]):
    STATE = _State
    ROLE_CHANGES = {"tool": ("user",)}  # an orphan result's line becomes its note
    UNGLUES = True

    def __init__(self, state: _State, before: list[Message]) -> None:
        super().__init__(state, before)
        self.at = -1  # the last original line kept in its place

    def on_original(self, m: Message, src: int, moved: bool) -> None:
        rec = self.state.origin[src]
        if m != self.before[src]:
            self.changed[rec] = _line(m)
        if moved:  # its line goes where the message now stands
            self.changed[rec] = DROP
            self.insert(self.at, m)
        else:
            self.at = rec

    def on_new(self, m: Message) -> None:
        self.insert(self.at, m)

    def on_dropped(self, src: int) -> None:
        self.changed[self.state.origin[src]] = DROP

    def new_record(self, item: Any) -> Any:
        return _line(item)


class _Strict(_Toy):
    ROLE_CHANGES = {}
    KEEPS_UNREADABLE = False


LOG = (
    b'{"kind": "header"}\n'
    b'{"role":"user",   "text":"hi"}\n'
    b'{"role": "assistant", "text": "calling"}\n'
    b'{"role": "tool", "text": "result"}\n'
    b"not json\n"
    b'{"kind": "footer"}\n'
)


def _note(text: str) -> Message:
    return {"role": "user", "content": text, "metadata": {}}


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def test_an_unchanged_history_gives_the_files_own_bytes() -> None:
    parsed = _parse(LOG)
    assert _Toy.serialise(list(parsed.messages), parsed) == LOG


def test_an_unchanged_history_of_glued_lines_is_written_one_record_a_line() -> None:
    data = b'{"role": "user", "text": "a"}{"role": "assistant", "text": "b"}\n'
    parsed = _parse(data)
    assert _Toy.serialise(parsed.messages, parsed) == (
        b'{"role": "user", "text": "a"}\n{"role": "assistant", "text": "b"}\n'
    )


def test_a_changed_message_rewrites_only_its_own_line() -> None:
    parsed = _parse(LOG)
    user, reply, result = parsed.messages
    changed = {**reply, "content": "called"}
    out = _lines(_Toy.serialise([user, changed, result], parsed))
    before = _lines(LOG)
    assert out[2] == orjson.dumps({"role": "assistant", "text": "called"})
    assert out[:2] + out[3:] == before[:2] + before[3:]


def test_a_new_message_goes_right_after_the_line_of_the_message_before_it() -> None:
    parsed = _parse(LOG)
    user, reply, result = parsed.messages
    out = _lines(_Toy.serialise([user, _note("first"), _note("second"), reply, result], parsed))
    assert out[2:4] == [
        orjson.dumps({"role": "user", "text": "first"}),
        orjson.dumps({"role": "user", "text": "second"}),
    ]
    assert out[1] == _lines(LOG)[1] and out[4] == _lines(LOG)[2]


def test_a_new_first_message_goes_before_every_line() -> None:
    parsed = _parse(LOG)
    out = _lines(_Toy.serialise([_note("lead"), *parsed.messages], parsed))
    assert out[0] == orjson.dumps({"role": "user", "text": "lead"})
    assert out[1:] == _lines(LOG)


def test_a_dropped_message_loses_its_line_and_the_other_records_stay() -> None:
    parsed = _parse(LOG)
    user, _, result = parsed.messages
    out = _Toy.serialise([user, result], parsed)
    assert b"calling" not in out
    assert b'{"kind": "header"}' in out and b'{"kind": "footer"}' in out


def test_a_moved_message_is_written_where_it_now_stands() -> None:
    parsed = _parse(LOG)
    user, reply, result = parsed.messages
    out = _lines(_Toy.serialise([user, result, reply], parsed))
    assert out[2] == _lines(LOG)[3]  # the result, in place
    assert out[3] == orjson.dumps({"role": "assistant", "text": "calling"})  # after it


def test_the_role_change_policy_decides_which_message_keeps_a_line() -> None:
    data = LOG.replace(b'{"role": "tool"', b'{"kind": "between"}\n{"role": "tool"')
    parsed = _parse(data)
    user, reply, result = parsed.messages
    note = {**result, "role": "user", "content": "[orphan result]"}
    written = orjson.dumps({"role": "user", "text": "[orphan result]"})
    # tool -> user is allowed: the note takes the result's line, after the record between.
    kept = _lines(_Toy.serialise([user, reply, note], parsed))
    assert kept[3:5] == [b'{"kind": "between"}', written]
    # Without the policy the note is a new message, right after the reply's line, and
    # the result a dropped one.
    strict = _lines(_Strict.serialise([user, reply, note], parsed))
    assert strict[3:5] == [written, b'{"kind": "between"}']
    assert b'"text": "result"' not in b"\n".join(strict)


def test_a_second_copy_of_a_message_is_a_new_one() -> None:
    parsed = _parse(LOG)
    user, reply, result = parsed.messages
    out = _lines(_Toy.serialise([user, user, reply, result], parsed))
    assert out[1] == _lines(LOG)[1]
    assert out[2] == orjson.dumps({"role": "user", "text": "hi"})


def test_unreadable_lines_stay_unless_the_shape_leaves_them_out() -> None:
    parsed = _parse(LOG)
    user, reply, _ = parsed.messages
    assert b"not json" in _Toy.serialise([user, reply], parsed)
    assert b"not json" not in _Strict.serialise([user, reply], parsed)


def test_new_lines_end_as_the_files_lines_do() -> None:
    data = LOG.replace(b"\n", b"\r\n")
    parsed = _parse(data)
    out = _Toy.serialise([*parsed.messages, _note("end")], parsed)
    # After the last message's line (the result), before the lines that follow it.
    note = orjson.dumps({"role": "user", "text": "end"})
    assert b'"text": "result"}\r\n' + note + b"\r\nnot json\r\n" in out


def test_another_shapes_parse_is_refused() -> None:
    parsed = _parse(LOG)
    other = Parsed("toy", parsed.messages, state={"data": LOG})
    with pytest.raises(FormatError, match="serialise needs the Parsed"):
        _Toy.serialise([], other)
