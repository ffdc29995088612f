"""This machine's sessions in Chromium (issue 31, point 6): listed with their verdicts,
what needs repair first, opened in one click; refused, and saying why, to anyone but the
owner; light and dark, wide and 390 px."""

from __future__ import annotations

import pytest

from tests.conftest import signed_in_cookie
from tests.local.conftest import Home, agent_home  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 800}


@pytest.fixture
def owner_page(page, live_server, django_user_model, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    me = django_user_model.objects.create_superuser(username="me", password="pass-me-123")
    page.context.add_cookies([signed_in_cookie(me, live_server.url)])
    return page


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["wide", "390px"])
def test_the_owner_lists_this_machines_sessions_and_opens_one(
    owner_page,
    agent_home: Home,  # noqa: F811 -- the fixture imported above
    scheme,
    size,
):
    page = owner_page
    page.emulate_media(color_scheme=scheme)
    page.set_viewport_size(size)
    page.goto("/machine/")
    rows = page.locator("table.machine tbody tr")
    assert rows.count() == len(agent_home.all())
    summary = page.locator("main strong").first.inner_text()
    assert summary == f"{len(agent_home.broken)} of {len(agent_home.all())} need repair."
    verdicts = rows.locator("td:nth-child(3) .chip").all_inner_texts()
    broken = len(agent_home.broken)
    assert verdicts[:broken] == ["needs repair"] * broken, "what needs repair comes first"
    assert "needs repair" not in verdicts[broken:]
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    first = rows.first
    path = first.locator(".path").inner_text()
    with page.expect_navigation():
        first.get_by_role("button", name="Open").click()
    assert "/t/" in page.url
    assert page.locator("h1").inner_text() == path.rsplit("/", 1)[-1]
    assert "This history needs repair." in page.locator(".verdict-line").inner_text()
    assert page.csp_violations == []


def test_anyone_but_the_owner_is_told_why(signed_in_page, agent_home: Home):  # noqa: F811
    page = signed_in_page
    response = page.goto("/machine/")
    assert response.status == 403
    said = page.locator("[role=alert]").inner_text()
    assert "only for the owner" in said and "Upload or scan the sessions instead." in said
    assert page.locator("table.machine").count() == 0
