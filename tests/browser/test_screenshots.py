"""Screenshots of the main screens, light and dark, for docs/ (issue 18).

Skipped unless asked for, so a test run never rewrites the repository:

    INSPECTOR_SCREENSHOTS=docs .venv/bin/pytest tests/browser/test_screenshots.py
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests.scan.conftest import PROJECTS
from tests.testdata import read
from tests.web.conftest import BROKEN_CLAUDE_CODE

OUT = os.environ.get("INSPECTOR_SCREENSHOTS", "")
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not OUT, reason="set INSPECTOR_SCREENSHOTS=<folder> to make them"),
]


def test_screenshots_of_the_main_screens(signed_in_page, owner):
    from django.core.management import call_command

    from inspector.web.store import project_for, store_upload

    # A dashboard with sessions on many days: the corpus's Claude Code projects, scanned.
    call_command(
        "scan", str(PROJECTS), project="claude-code", owner=owner.username, stdout=io.StringIO()
    )
    transcript, _ = store_upload(
        owner,
        read(BROKEN_CLAUDE_CODE),
        BROKEN_CLAUDE_CODE.name,
        project=project_for(owner, "claude-code"),
    )
    project = transcript.project
    folder = Path(OUT)
    folder.mkdir(parents=True, exist_ok=True)
    page = signed_in_page
    page.set_viewport_size({"width": 1280, "height": 900})
    screens = {
        "timeline": f"/t/{transcript.public_id}/",
        "rule": "/rules/PAIR-1/",
        "dashboard": f"/p/{project.slug}/",
    }
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for name, path in screens.items():
            page.goto(path)
            page.wait_for_load_state("networkidle")
            page.screenshot(path=str(folder / f"{name}-{scheme}.png"))
    page.emulate_media(color_scheme="light")
    page.goto(screens["timeline"])
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(folder / "timeline.png"))
