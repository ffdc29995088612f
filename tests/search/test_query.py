"""The project search's query, snippets and row text, without a database.

Whatever a person types becomes words and phrases here; the query each backend
is handed is built from those words alone, so no input can be a syntax error.
"""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from inspector.search import fulltext
from inspector.search.fulltext import START, STOP, Term, highlight, marked, parse

# What a word is in the built queries: letters and digits only.
FTS5_TERM = r'"[^\W_]+(?: [^\W_]+)*"\*?'
TSQUERY_TERM = r"\('[^\W_]+'(?: <-> '[^\W_]+')*(?::\*)?\)"


def test_words_are_prefixes_and_quoted_phrases_are_exact():
    assert parse('deplo "rolled out" Views.py') == [
        Term(("deplo",), prefix=True),
        Term(("rolled", "out"), prefix=False),
        Term(("views", "py"), prefix=True),
    ]


def test_fts_operators_and_punctuation_are_only_separators():
    assert parse('NEAR(a b) OR -x col:val ^y "unclosed ph') == [
        Term(("near", "a"), prefix=True),
        Term(("b",), prefix=True),
        Term(("or",), prefix=True),
        Term(("x",), prefix=True),
        Term(("col", "val"), prefix=True),
        Term(("y",), prefix=True),
        Term(("unclosed", "ph"), prefix=False),
    ]
    assert parse('*** "" () -- \\ \'') == []


def test_repeated_terms_count_once_and_a_long_query_is_cut():
    assert parse("a a A") == [Term(("a",), prefix=True)]
    many = parse(" ".join(f"w{n}" for n in range(100)))
    assert len(many) == fulltext.MAX_TERMS
    assert parse("x" * 500) == [Term(("x" * fulltext.MAX_WORD,), prefix=True)]


@given(st.text(max_size=300))
def test_any_input_builds_queries_of_words_only(text):
    terms = parse(text)
    fts5 = fulltext.fts5_query(terms)
    tsquery = fulltext.tsquery(terms)
    if not terms:
        assert fts5 == tsquery == ""
        return
    assert re.fullmatch(f"{FTS5_TERM}(?: {FTS5_TERM})*", fts5), fts5
    assert re.fullmatch(f"{TSQUERY_TERM}(?: & {TSQUERY_TERM})*", tsquery), tsquery


def test_a_word_is_marked_where_it_stands_whole_a_prefix_where_a_word_begins():
    text = "deploy, deployment and redeploy"
    assert (
        highlight(text, [Term(("deploy",), prefix=False)])
        == f"{START}deploy{STOP}, deployment and redeploy"
    )
    assert highlight(text, [Term(("deploy",), prefix=True)]) == (
        f"{START}deploy{STOP}, {START}deployment{STOP} and redeploy"
    )


def test_a_phrase_is_marked_across_the_punctuation_between_its_words():
    text = "Read src/payments/views.py first"
    assert highlight(text, parse("views.py")) == f"Read src/payments/{START}views.py{STOP} first"
    assert START not in highlight(text, parse('"payments py"'))


def test_a_snippet_is_cut_around_the_first_match_at_word_boundaries():
    text = (
        " ".join(f"word{n}" for n in range(200)) + " needle " + " ".join("tail" for _ in range(200))
    )
    snippet = highlight(text, parse("needle"))
    assert snippet.startswith("…word") and snippet.endswith("…")
    assert f"{START}needle{STOP}" in snippet
    inner = snippet.strip("…").replace(START, "").replace(STOP, "")
    assert inner in text
    assert len(inner) <= fulltext.SNIPPET_BEFORE + fulltext.SNIPPET_AFTER + 2 * len("word199")
    first = inner.split()[0]
    assert re.fullmatch(r"word\d+", first)  # no word cut in half


def test_marked_escapes_everything_and_marks_only_between_the_markers():
    html = marked(f'<script>alert(1)</script> {START}a<b "c"{STOP} & more')
    assert html == (
        "&lt;script&gt;alert(1)&lt;/script&gt; <mark>a&lt;b &quot;c&quot;</mark> &amp; more"
    )
    # Markers out of order never leave a tag open or close one not opened.
    assert marked(f"{STOP}x{START}{START}y") == "x<mark>y</mark>"


def test_row_text_is_what_the_timeline_search_reads_secrets_masked_markers_removed():
    key = "sk-ant-api03-" + "abcdefghij" * 8
    row = {
        "key": "r4",
        "role": "assistant",
        "text": f"the key is {key} \x02not a marker\x03 \x00",
        "parts": [
            {"type": "text", "text": "the same text again", "label": ""},
            {"type": "thinking", "text": "thinking about billing", "label": "thinking"},
        ],
        "calls": [{"id": "c1", "name": "Bash", "arguments": '{\n  "command": "ls"\n}'}],
        "result": None,
    }
    text = fulltext.row_text(row)
    assert key not in text and "[masked Anthropic key" in text
    assert "\x00" not in text and START not in text and STOP not in text
    assert "not a marker" in text
    assert "thinking about billing" in text and "Bash" in text and '"command": "ls"' in text
    # A text part is the row's text: indexed once.
    assert "the same text again" not in text


def test_row_text_is_cut_at_the_body_limit():
    row = {
        "key": "r0",
        "role": "tool",
        "text": "x " * fulltext.BODY_LIMIT,
        "result": {"name": "Read"},
    }
    assert len(fulltext.row_text(row)) == fulltext.BODY_LIMIT


def test_the_timeline_box_gets_the_query_when_the_row_shows_it_else_the_longest_word():
    terms = parse("billing deploy")
    shown = f"the {START}billing{STOP} {START}deploy{STOP}ment"
    assert fulltext.timeline_query("billing  deploy", terms, shown) == "billing deploy"
    apart = f"{START}deploy{STOP} the {START}billing{STOP}"
    assert fulltext.timeline_query("billing deploy", terms, apart) == "billing"
