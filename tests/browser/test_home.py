from __future__ import annotations

import pytest

from tests.browser.waits import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def test_home_page_runs_htmx_under_the_csp(page):
    response = page.goto("/")
    assert response.status == 200
    assert "Content-Security-Policy" in {k.title(): v for k, v in response.headers.items()}
    wait_until(page, "typeof window.htmx !== 'undefined'")
    assert page.evaluate("window.htmx.version").startswith("2.")
    assert page.csp_violations == []


def test_signin_link_signs_the_owner_in(page):
    from inspector.web.signin import ensure_owner, signin_path

    owner, _ = ensure_owner()
    page.goto(signin_path(owner))
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/")
    assert owner.get_username() in page.locator("header.site").inner_text()
