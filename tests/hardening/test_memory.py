"""Diagnosing a file costs bounded memory: an estimate that holds, and a limit the server keeps."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from inspector.web.models import ApiToken, Transcript
from inspector.web.store import memory_estimate
from tests.testdata import read
from tests.web.conftest import BROKEN_CLAUDE_CODE

BENCH = Path(settings.BASE_DIR) / "bench" / "bench_memory.py"


def tiny_messages(count: int) -> bytes:
    return orjson.dumps([{"role": "user", "content": f"m{n}"} for n in range(count)])


def peak_of_diagnosing(data: bytes, tmp_path: Path) -> int:
    path = tmp_path / "input.json"
    path.write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(settings.BASE_DIR)}
    out = subprocess.run(
        [sys.executable, str(BENCH), "--one", str(path)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=settings.BASE_DIR,
    )
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["tiny messages", "a real session"])
def test_the_estimate_is_above_what_diagnosing_really_takes(tmp_path, kind):
    data = tiny_messages(100_000) if kind == "tiny messages" else read(BROKEN_CLAUDE_CODE)
    assert peak_of_diagnosing(data, tmp_path) <= memory_estimate(data)


@pytest.mark.django_db
def test_a_file_of_many_tiny_records_past_the_limit_is_refused_naming_it(owner_client, settings):
    settings.INSPECTOR_MAX_DIAGNOSIS_BYTES = 64 * 2**20
    data = tiny_messages(50_000)  # 1.7 MB, about 160 MB to diagnose
    response = owner_client.post(reverse("upload"), {"file": SimpleUploadedFile("t.json", data)})
    assert response.status_code == 400
    body = response.content.decode()
    assert "the limit is 64 MB" in body and "INSPECTOR_MAX_DIAGNOSIS_MB" in body
    assert not Transcript.objects.exists()


@pytest.mark.django_db
def test_the_api_refuses_it_too_and_a_real_session_still_goes_in(client, owner, settings):
    settings.INSPECTOR_MAX_DIAGNOSIS_BYTES = 64 * 2**20
    _, token = ApiToken.issue(owner, "ci")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    url = reverse("api_upload")
    refused = client.post(url, tiny_messages(50_000), content_type="application/json", **headers)
    assert refused.status_code == 400 and "INSPECTOR_MAX_DIAGNOSIS_MB" in refused.json()["error"]
    taken = client.post(url, read(BROKEN_CLAUDE_CODE), content_type="text/plain", **headers)
    assert taken.status_code == 201
