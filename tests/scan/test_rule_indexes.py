"""The sessions table filtered by a rule is read from that rule's own index (PostgreSQL).

Migration ``web 0010`` makes a partial index per rule (``counts ? 'PAIR-1'``); the
planner uses one only for a query whose condition implies the index's, so the
query the filter form makes must name the rule as a literal, the way the index
does. For every rule the filter offers, the count and a page of the filtered table
(in the date orders) are planned as a scan of that index alone (with the other ways
to read the table turned off, as a big project's statistics turn them off: an empty
test table would otherwise be read whole).
"""

from __future__ import annotations

import re

import pytest
from django.db import connection, transaction
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from inspector.diagnosis import REPAIR_RULES
from inspector.scan import reports
from inspector.scan.forms import SessionFilterForm
from inspector.web.models import Project, Transcript

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="the rules' indexes are PostgreSQL's"
    ),
]


def _plan(sql: str) -> str:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_bitmapscan = off")
        cursor.execute("EXPLAIN " + sql)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize("rule", REPAIR_RULES)
@pytest.mark.parametrize(
    "query", ["rule={}", "rule={}&sort=date", "rule={}&needs_repair=yes&sort=-date&page=40"]
)
def test_the_rule_filter_reads_the_rules_own_index(owner, rule, query):
    project = Project.objects.create(owner=owner, name="p", slug="p")
    for n, counts in enumerate([{rule: 2}, {rule: 1, "PAIR-2": 1}, {}]):
        Transcript.objects.create(
            owner=owner, project=project, file_name=f"{n}.jsonl", format="claude-code", size=9,
            sha256=f"{n:064x}", message_count=4, counts=counts, needs_repair=bool(counts),
        )  # fmt: skip
    form = SessionFilterForm(QueryDict(query.format(rule)))
    assert form.is_valid(), form.errors
    sessions = form.apply(reports.sessions_of(project)).exclude(message_count=0)
    # What the table asks, as it was sent: the count, then the page's keys in its order.
    with CaptureQueriesContext(connection) as asked:
        reports.page_of(sessions, form.cleaned_data["page"], 50)
    assert len(asked.captured_queries) == 3  # and the page's rows, by their keys
    index = "transcript_rule_" + rule.lower().replace("-", "_") + "_idx"
    # The default order may walk the index of that order instead, as it does at scale
    # (the rule in most of the sessions it reads first): only the count is the rule's.
    checked = asked.captured_queries[:1] if "sort" not in query else asked.captured_queries[:2]
    for query_sent in checked:
        plan = _plan(query_sent["sql"])
        assert re.search(rf"Index Only Scan (Backward )?using {index} ", plan), plan
