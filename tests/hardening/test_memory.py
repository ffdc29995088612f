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


sys.path.insert(0, str(BENCH.parent))
from bench_memory import claude_code_session, kinds  # noqa: E402

KINDS = kinds(200_000)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_the_estimate_holds_for_every_kind_of_record(tmp_path, kind):
    # Arrays, numbers, strings, deep or flat: none takes more than the estimate says.
    data = KINDS[kind]
    assert peak_of_diagnosing(data, tmp_path) <= memory_estimate(data)


@pytest.mark.slow
@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["lines of []", "lines of 0", 'one array of "x"'])
def test_files_of_values_the_old_estimate_missed_are_refused_before_the_limit(
    kind, settings, owner_client
):
    # The old estimate counted `{` alone: these took 120 times their size.
    settings.INSPECTOR_MAX_DIAGNOSIS_BYTES = 64 * 2**20
    data = KINDS[kind]
    assert memory_estimate(data) > settings.INSPECTOR_MAX_DIAGNOSIS_BYTES
    response = owner_client.post(reverse("upload"), {"file": SimpleUploadedFile("t.json", data)})
    assert response.status_code == 400
    assert "INSPECTOR_MAX_DIAGNOSIS_MB" in response.content.decode()


@pytest.mark.django_db
def test_braces_inside_strings_are_not_counted_as_structure():
    # Code in a tool result is full of `{`, `[` and `,`: they are text, not JSON values.
    code = "fn f() { if x { [a, b, {c: d}] } }, " * 1000
    data = orjson.dumps([{"role": "user", "content": code}])
    plain = orjson.dumps([{"role": "user", "content": "x" * len(code)}])
    assert memory_estimate(data) == memory_estimate(plain)


@pytest.mark.django_db
def test_the_quick_count_refuses_exactly_what_the_exact_estimate_refuses(settings):
    # check_memory counts `{`, `[`, `,` and line breaks everywhere first, strings included,
    # and takes the file when even that is under the limit; only then does the exact count
    # decide. Code full of braces in a string: over the limit by the quick count, under it
    # by the exact one, so taken; lines of `{}` over it by both, so refused.
    from inspector.web.store import TooBigToDiagnose, _every_mark, check_memory

    code = orjson.dumps([{"role": "user", "content": "{[a,b]}," * 200_000}])
    objects = b"{}\n" * 200_000
    settings.INSPECTOR_MAX_DIAGNOSIS_BYTES = (memory_estimate(code) + memory_estimate(objects)) // 2
    assert memory_estimate(code, _every_mark(code)) > settings.INSPECTOR_MAX_DIAGNOSIS_BYTES
    assert memory_estimate(code) < settings.INSPECTOR_MAX_DIAGNOSIS_BYTES
    check_memory(code)
    assert memory_estimate(objects) > settings.INSPECTOR_MAX_DIAGNOSIS_BYTES
    with pytest.raises(TooBigToDiagnose):
        check_memory(objects)
    for data in (code, objects, KINDS["lines of []"], b"x" * 1000):
        assert memory_estimate(data, _every_mark(data)) >= memory_estimate(data)


@pytest.mark.slow
@pytest.mark.django_db
def test_a_real_session_of_brace_heavy_code_under_the_limit_is_taken(owner_client, settings):
    # A generated Claude Code session as dense as real ones, its texts full of code.
    session = claude_code_session(12 * 2**20).replace(b"the", b"{[a,b]}")
    assert memory_estimate(session) < settings.INSPECTOR_MAX_DIAGNOSIS_BYTES
    upload = SimpleUploadedFile("s.jsonl", session)
    assert owner_client.post(reverse("upload"), {"file": upload}).status_code == 302


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
