"""Issue 31: the prompt cache's reads and writes, per message, per session and (in
``tests/web/test_cache_totals.py``) per project, from every shape whose files record them."""

from __future__ import annotations

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.formats import kimi_code, pi, qwen
from tests.testdata import CORPUS, read

KIMI = CORPUS / "kimi-code" / "derived__agent-core-basic-test__tool-turn.wire.jsonl"
QWEN = CORPUS / "qwen" / "derived__qwen-writer-healthy.jsonl"
PI = CORPUS / "pi" / "openclaw-openclaw__8555a0a4-0b79-459d-939c-e17cdbbf4fe2.first-18-lines.jsonl"


def test_kimi_code_steps_say_what_they_read_from_the_cache_and_wrote_into_it():
    data = read(KIMI).replace(
        b'"inputCacheRead":0,"inputCacheCreation":0',
        b'"inputCacheRead":300,"inputCacheCreation":7',
        1,
    )
    facts = kimi_code.timeline_facts(formats.load(data, "kimi-code"))[1]
    # inputOther 11 + the cache's 300 and 7: all that the model read.
    assert (facts["tokens_in"], facts["cache_read"], facts["cache_write"]) == (318, 300, 7)


def test_qwen_replies_say_what_of_the_prompt_came_from_the_cache():
    data = read(QWEN).replace(b'"cachedContentTokenCount":0', b'"cachedContentTokenCount":9000', 1)
    facts = qwen.timeline_facts(formats.load(data, "qwen"))[1]
    assert (facts["tokens_in"], facts["cache_read"], facts["cache_write"]) == (11873, 9000, None)


def test_pi_replies_carry_cache_reads_and_writes_and_the_session_adds_them_up():
    parsed = formats.load(read(PI), "pi")
    facts = [f for f in pi.timeline_facts(parsed) if f and f["tokens_in"]]
    # The reply whose usage is input 12310, cacheRead 1536, cacheWrite 0.
    assert [(f["tokens_in"], f["cache_read"], f["cache_write"]) for f in facts][:1] == [
        (12310 + 1536, 1536, 0)
    ]
    timing = diagnose(parsed).meta["timing"]
    assert timing["cache_read"] == sum(f["cache_read"] for f in facts) > 1536
    assert timing["cache_write"] == 0


def test_a_count_that_is_not_a_number_is_no_count():
    data = read(KIMI).replace(b'"inputCacheRead":0', b'"inputCacheRead":true', 1)
    facts = kimi_code.timeline_facts(formats.load(data, "kimi-code"))[1]
    assert facts["cache_read"] is None
