"""``transcript-inspector report --html`` (issue 31): the one-file timeline with no server,
read from disk in Chromium, light and dark, wide and 390 px; and ``--markdown``."""

from __future__ import annotations

import io
import re

import orjson
import pytest

from inspector import cli
from tests.web.conftest import BROKEN_CANONICAL

SECRET = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
PHONE = {"width": 390, "height": 844}
WIDE = {"width": 1280, "height": 800}


@pytest.fixture
def session(tmp_path):
    messages = orjson.loads(BROKEN_CANONICAL)
    messages[0]["content"] = f"find the ticket, key {SECRET}"
    path = tmp_path / "broken.json"
    path.write_bytes(orjson.dumps(messages))
    return path


def findings_of(session) -> int:
    from inspector import formats
    from inspector.diagnosis import diagnose

    return len(diagnose(formats.load(session.read_bytes())).findings)


def export(session, tmp_path, *options: str):
    out = io.StringIO()
    code = cli.main(["report", str(session), *options], out)
    assert code == cli.NEEDS_REPAIR  # as the text report says of a broken file
    target = tmp_path / f"export{'-'.join(options)}.html"
    target.write_text(out.getvalue())
    return target


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["wide", "390px"])
def test_the_cli_export_reads_alone_with_findings_verdicts_keys_and_its_scheme(
    browser, session, tmp_path, scheme, size
):
    path = export(session, tmp_path, "--html")
    html = path.read_text()
    assert not re.search(r"<script[^>]+src=|<link[^>]+stylesheet|<img[^>]+src=\"http", html)
    assert SECRET not in html and "[masked OpenAI key" in html
    # No server: no link to one (the rules' badges are text).
    assert not re.search(r'(href|action|src)="/', html)
    context = browser.new_context(color_scheme=scheme, viewport=size)
    page = context.new_page()
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(path.as_uri())
    assert fetched == []
    assert "This history needs repair." in page.locator(".verdict-line").inner_text()
    assert page.locator("table.verdicts tbody tr").count() == 4
    findings = page.locator(".findings li a")
    assert findings.count() == findings_of(session) >= 3
    assert findings.first.get_attribute("href").startswith("#r")
    assert findings.first.inner_text().startswith(("message ", "inserted row"))
    assert page.locator("article.row").count() >= 9
    # The page's own colours, from the file's inline styles: light or dark as the system asks.
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    red, green, blue = (int(n) for n in re.findall(r"\d+", background)[:3])
    assert not background.startswith("rgba(0, 0, 0, 0)"), "styled by the file"
    assert (red + green + blue > 600) == (scheme == "light"), background
    assert page.evaluate("document.documentElement.scrollWidth") <= size["width"]
    page.locator("body").press("j")
    page.keyboard.press("j")
    assert page.evaluate("document.querySelector('article.row.current').id") == "r1"
    page.keyboard.press("n")
    assert page.evaluate(
        "document.querySelector('article.row.current').classList.contains('has-findings')"
    )
    # A finding's link goes to its row in the file.
    findings.first.click()
    target = findings.first.get_attribute("href")
    assert page.evaluate("location.hash") == target
    context.close()


def test_the_redacted_cli_export_holds_no_content(browser, session, tmp_path):
    path = export(session, tmp_path, "--html", "--redacted")
    html = path.read_text()
    assert "find the ticket" not in html and SECRET not in html
    assert "Exported, redacted." in html and "PAIR-1" in html
    page = browser.new_page()
    page.goto(path.as_uri())
    assert page.locator("article.row").count() >= 9
    assert page.locator(".findings li").count() == findings_of(session)
    page.close()


def test_the_cli_markdown_is_the_pages_markdown(session):
    out = io.StringIO()
    assert cli.main(["report", str(session), "--markdown"], out) == cli.NEEDS_REPAIR
    text = out.getvalue()
    assert text.startswith("# Transcript diagnosis: broken.json")
    assert f"**This history needs repair.** {findings_of(session)} findings" in text
    assert "| OpenAI Chat | rejected:" in text
    assert re.findall(r"^- (message \d+|inserted row)", text, re.M)
