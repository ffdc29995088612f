"""A scan counts each conversation of a file that holds several."""

from __future__ import annotations

import re

import orjson

from inspector import formats
from inspector.diagnosis import diagnose_all
from inspector.scan import reports
from tests.testdata import CORPUS, read


def test_a_scan_counts_every_conversation_and_how_many_need_repair(run_scan, tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    tasks = orjson.dumps(
        orjson.loads(
            read(CORPUS / "openai-chat" / "sierra-research-tau-bench__gpt-4o-airline.json")
        )[:12]
    )
    (root / "airline.json").write_bytes(tasks)
    single = read(CORPUS / "codex" / "kvsankar-agent-history__codex_with_escalation.jsonl")
    (root / "rollout.jsonl").write_bytes(single)
    job, output = run_scan(root, project="results")
    broken = sum(d.needs_repair for d in diagnose_all(formats.load_all(tasks)))
    summary = reports.summarize(reports.job_transcripts(job))
    assert summary.sessions == 2
    assert summary.conversations == 13
    assert summary.conversations_needing_repair == broken + 1
    assert re.search(rf"conversations +13  {broken + 1} need repair", output), output
