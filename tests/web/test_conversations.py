"""A file of many conversations on the web: all diagnosed, listed, each opened, all repaired."""

from __future__ import annotations

import orjson
import pytest
from django.urls import reverse

from inspector import formats
from inspector.diagnosis import diagnose_all
from inspector.web.models import Transcript
from tests.testdata import CORPUS, read
from tests.web.test_upload import post_file

TAU = CORPUS / "openai-chat" / "sierra-research-tau-bench__gpt-4o-airline.json"


@pytest.fixture
def tau(owner_client) -> Transcript:
    tasks = orjson.loads(read(TAU))[:12]
    data = orjson.dumps(tasks)
    response = post_file(owner_client, data, "airline.json")
    assert response.status_code == 302, response.content[:500]
    return Transcript.objects.get(file_name="airline.json")


def expected(tau: Transcript) -> list:
    return diagnose_all(formats.load_all(orjson.dumps(orjson.loads(read(TAU))[:12])))


def test_every_conversation_is_diagnosed_and_the_row_counts_them_all(tau):
    diagnoses = expected(tau)
    listed = tau.meta["conversation_list"]
    assert len(listed) == 12
    assert [item["needs_repair"] for item in listed] == [d.needs_repair for d in diagnoses]
    assert tau.needs_repair == any(d.needs_repair for d in diagnoses)
    assert tau.counts == {"ID-1": sum(d.counts.get("ID-1", 0) for d in diagnoses)}
    assert tau.message_count == sum(d.message_count for d in diagnoses)


def test_the_timeline_lists_them_with_their_verdicts_and_opens_any_one(owner_client, tau):
    url = reverse("timeline", args=[tau.public_id])
    html = owner_client.get(url).content.decode()
    broken = sum(item["needs_repair"] for item in tau.meta["conversation_list"])
    assert "This file holds 12 conversations" in html and f"{broken} need" in html
    for item in tau.meta["conversation_list"][1:]:
        assert f"?conversation={item['key']}" in html
    target = next(item for item in tau.meta["conversation_list"] if item["needs_repair"])
    page = owner_client.get(url, {"conversation": target["key"]})
    assert page.status_code == 200
    text = page.content.decode()
    assert "ID-1" in text and 'class="active"' in text
    assert owner_client.get(url, {"conversation": 99}).status_code == 404


def test_the_repaired_download_and_the_report_cover_every_conversation(owner_client, tau):
    repaired = owner_client.get(reverse("download", args=[tau.public_id, "repaired"]))
    every = formats.load_all(repaired.content)
    assert len(every) == 12 and not any(d.needs_repair for d in diagnose_all(every))
    report = orjson.loads(
        owner_client.get(reverse("download", args=[tau.public_id, "report"])).content
    )
    assert report["conversations"] == 12
    assert report["conversations_needing_repair"] == sum(d.needs_repair for d in expected(tau))
    canonical = orjson.loads(
        owner_client.get(reverse("download", args=[tau.public_id, "canonical"])).content
    )
    assert len(canonical) == 12
