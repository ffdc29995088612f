"""The tables' verdict cells (``{% verdicts %}``): what each provider said, all text escaped."""

from __future__ import annotations

from django.template import engines

CELL = engines["django"].from_string("{% load inspector_tags %}{% verdicts v %}")


def test_each_provider_reads_before_and_after_with_its_reason_and_notes():
    html = CELL.render(
        {
            "v": {
                "anthropic": {"before_ok": False, "after_ok": True, "notes": []},
                "responses": {
                    "before_ok": True,
                    "after_ok": True,
                    "before_undecided": ["continues a stored response"],
                    "after_undecided": [],
                    "notes": ["images not checked"],
                },
            }
        }
    )
    first, second = html.split('</span> <span class="verdict"')
    assert 'title="Anthropic: rejected before, accepted after repair"' in first
    assert '<span class="bad">✗</span>→<span class="ok">✓</span>' in first
    assert 'aria-label="not everything was checked"' not in first
    assert (
        'title="Responses: cannot tell (continues a stored response) before, '
        'accepted after repair; images not checked"' in second
    )
    assert (
        '<span class="warn" aria-label="cannot tell">?</span>→<span class="ok">✓</span>' in second
    )
    assert 'aria-label="not everything was checked">*</span>' in second


def test_markup_in_any_text_is_escaped():
    html = CELL.render(
        {
            "v": {
                '<img src=x onerror="a()">': {
                    "before_ok": True,
                    "after_ok": True,
                    "before_undecided": ['<script>"x"</script>'],
                    "notes": ["a & <b>b</b>"],
                }
            }
        }
    )
    assert "<img" not in html and "<script" not in html and "<b>" not in html
    assert "&lt;img src=x onerror=&quot;a()&quot;&gt;" in html
    assert "cannot tell (&lt;script&gt;&quot;x&quot;&lt;/script&gt;)" in html
    assert "; a &amp; &lt;b&gt;b&lt;/b&gt;" in html


def test_no_verdicts_is_an_empty_cell():
    assert CELL.render({"v": {}}) == "" and CELL.render({"v": None}) == ""
