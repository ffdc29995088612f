"""Every credential shape, in every field, through every door of a full share."""

from __future__ import annotations

import re

import orjson
import pytest
from django.urls import reverse
from django.utils.html import escape

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.share.content import count_secrets, full_row
from tests.diagnosis.test_redact import SHAPES
from tests.share.test_share_pages import cc_record, every_response, share_url

pytestmark = pytest.mark.django_db

WRITTEN = [written for written, _ in SHAPES.values()]
CORES = {name: core for name, (_, core) in SHAPES.items()}
ALL = "\n".join(WRITTEN)
LABEL = re.compile(r"\[masked [^\],]+, \d+ chars\]")


def canonical_with_every_field() -> bytes:
    """Every shape in user text, assistant text, thinking, arguments and results."""
    env = dict(zip(CORES, WRITTEN, strict=True))
    arguments_as_objects = {"command": ALL, "env": env}
    arguments_as_string = orjson.dumps({"script": ALL, "config": orjson.dumps({"s": ALL}).decode()})
    return orjson.dumps(
        [
            {"role": "user", "content": ALL},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": ALL},
                    {"type": "text", "text": ALL},
                ],
                "metadata": {
                    "tool_calls": [
                        {"tool_call_id": "c1", "name": "run", "arguments": arguments_as_objects},
                        {
                            "tool_call_id": "c2",
                            "name": "run",
                            "arguments": arguments_as_string.decode(),
                        },
                    ]
                },
            },
            {"role": "tool", "content": ALL, "metadata": {"tool_call_id": "c1"}},
            {
                "role": "tool",
                "content": [{"type": "text", "text": ALL}],
                "metadata": {"tool_call_id": "c2"},
            },
            {"role": "assistant", "content": "done"},
        ]
    )


def openai_chat_with_string_arguments() -> bytes:
    arguments = orjson.dumps({"command": ALL, "body": orjson.dumps({"env": ALL}).decode()})
    return orjson.dumps(
        {
            "messages": [
                {"role": "system", "content": ALL},
                {"role": "user", "content": ALL},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "shell", "arguments": arguments.decode()},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": ALL},
            ]
        }
    )


def claude_code_cut_mid_line() -> bytes:
    """A session whose last line was cut off in the middle of a tool result full of keys."""
    records = [
        cc_record("user", "u1", None, ALL),
        cc_record(
            "assistant",
            "u2",
            "u1",
            [
                {"type": "thinking", "thinking": ALL, "signature": "sig"},
                {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": ALL}},
            ],
        ),
        cc_record(
            "user",
            "u3",
            "u2",
            [{"type": "tool_result", "tool_use_id": "toolu_01", "content": ALL}],
        ),
    ]
    lines = [orjson.dumps(record) for record in records]
    return b"\n".join(lines[:-1]) + b"\n" + lines[-1][: len(lines[-1]) * 3 // 4]


TRANSCRIPTS = {
    "canonical": canonical_with_every_field,
    "openai-chat": openai_chat_with_string_arguments,
    "claude-code, cut mid-line": claude_code_cut_mid_line,
}


def assert_no_core(bodies: dict[str, bytes]) -> None:
    for where, body in bodies.items():
        text = body.decode("utf-8", "replace")
        for name, core in CORES.items():
            assert core not in text, f"{name} in {where}"
            assert escape(core) not in text, f"{name}, escaped, in {where}"


@pytest.mark.parametrize("make", TRANSCRIPTS.values(), ids=TRANSCRIPTS.keys())
def test_no_shape_survives_any_page_fragment_or_download_of_a_full_share(
    client, store_for, make_link, make
):
    transcript = store_for(make(), "session.json")
    _, token = make_link("full", for_transcript=transcript)
    bodies = every_response(client, token, "full")
    assert_no_core(bodies)
    assert LABEL.search(bodies["page annotated"].decode())


@pytest.mark.parametrize("make", TRANSCRIPTS.values(), ids=TRANSCRIPTS.keys())
def test_masked_downloads_still_load_as_what_they_were(client, store_for, make_link, make):
    data = make()
    transcript = store_for(data, "session.json")
    _, token = make_link("full", for_transcript=transcript)
    bodies = every_response(client, token, "full")
    before = formats.load(data)
    original = formats.load(bodies["download original"])
    assert original.format == before.format
    assert len(original.messages) == len(before.messages)
    assert len(original.problems) == len(before.problems)
    assert formats.load(bodies["download repaired"]).format == before.format
    assert formats.load(bodies["download canonical"]).format == "canonical"
    assert orjson.loads(bodies["download report"])["format"] == before.format


@pytest.mark.parametrize(("name", "shape"), SHAPES.items(), ids=SHAPES.keys())
def test_a_shape_in_the_file_name_is_masked_in_title_and_downloads(
    client, store_for, make_link, name, shape
):
    written, core = shape
    transcript = store_for(canonical_with_every_field()[:-1] + b"]", f"{written}.json")
    _, token = make_link("full", for_transcript=transcript)
    page = client.get(share_url(token)).content.decode()
    assert core not in page and escape(core) not in page
    for kind in ("repaired", "canonical", "report", "original"):
        response = client.get(reverse("shared_download", args=[token, kind]))
        assert core not in response["Content-Disposition"]


@pytest.mark.parametrize("make", TRANSCRIPTS.values(), ids=TRANSCRIPTS.keys())
def test_the_owners_count_is_the_number_of_spans_a_full_share_masks(make):
    diagnosis = diagnose(formats.load(make()))
    count = count_secrets(diagnosis, "notes.json")
    masked = sum(len(LABEL.findall(orjson.dumps(full_row(row)).decode())) for row in diagnosis.rows)
    assert count.total == masked > len(SHAPES)
    assert count.rows


def test_the_panel_names_secrets_hidden_in_json_arguments(owner_client, store_for):
    arguments = orjson.dumps({"body": orjson.dumps({"password": "Sup3r-S3cretVal"}).decode()})
    data = orjson.dumps(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "",
                "metadata": {
                    "tool_calls": [
                        {"tool_call_id": "c1", "name": "post", "arguments": arguments.decode()}
                    ]
                },
            },
            {"role": "tool", "content": "ok", "metadata": {"tool_call_id": "c1"}},
        ]
    )
    transcript = store_for(data, "plain.json")
    page = owner_client.get(reverse("share_panel", args=[transcript.public_id])).content.decode()
    assert "No possible secrets found" not in page
    assert "1 possible secret" in page
