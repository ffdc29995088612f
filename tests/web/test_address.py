"""The links the commands print point where the server answers, not always at port 8000."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest
from django.core.management import call_command

from inspector.web import address

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _own_record(settings, tmp_path, monkeypatch):
    settings.INSPECTOR_ADDRESS_FILE = tmp_path / "serving.json"
    monkeypatch.setenv(address.VARIABLE, "")  # restored after the test, whatever record sets


def signin_link(*args: str) -> str:
    out = io.StringIO()
    call_command("signin_link", *args, stdout=out)
    return out.getvalue().strip()


def a_finished_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_link_opens_on_the_running_servers_address():
    assert signin_link().startswith("http://127.0.0.1:8000/signin/")
    address.record("http://127.0.0.1:9123")  # what serve --port 9123 does as it starts
    assert signin_link().startswith("http://127.0.0.1:9123/signin/")
    os.environ[address.VARIABLE] = ""  # another terminal: only the record says where
    assert signin_link().startswith("http://127.0.0.1:9123/signin/")
    address.forget()  # serve stopped
    assert signin_link().startswith("http://127.0.0.1:8000/signin/")


def test_a_server_that_is_gone_is_not_linked_to(settings):
    settings.INSPECTOR_ADDRESS_FILE.write_text(
        f'{{"url": "http://127.0.0.1:9555", "pid": {a_finished_pid()}}}'
    )
    assert signin_link().startswith("http://127.0.0.1:8000/signin/")


def test_an_option_then_the_variable_win_over_the_record(monkeypatch):
    address.record("http://127.0.0.1:9123")
    monkeypatch.setenv(address.VARIABLE, "https://inspector.example/")
    assert signin_link().startswith("https://inspector.example/signin/")
    assert signin_link("--base-url", "http://localhost:7000/").startswith(
        "http://localhost:7000/signin/"
    )


def test_scan_prints_the_dashboard_at_the_running_servers_address(owner, tmp_path):
    from tests.testdata import CORPUS, read

    folder = tmp_path / "sessions"
    folder.mkdir()
    source = next((CORPUS / "claude-code" / "broken").glob("*.jsonl"))
    (folder / source.name).write_bytes(read(source))
    os.environ[address.VARIABLE] = ""
    address.record("http://127.0.0.1:9123")
    os.environ[address.VARIABLE] = ""
    out = io.StringIO()
    call_command("scan", str(folder), project="mine", owner=owner.username, stdout=out)
    printed = out.getvalue()
    assert "Project dashboard: http://127.0.0.1:9123/p/mine/" in printed, printed
    assert ":8000" not in printed


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8001"),
        ("0.0.0.0", "http://127.0.0.1:8001"),
        ("::", "http://[::1]:8001"),
        ("::1", "http://[::1]:8001"),
        ("localhost", "http://localhost:8001"),
    ],
)
def test_a_server_bound_to_every_address_is_opened_on_the_loopback_one(host, url):
    assert address.url_for(host, 8001) == url
