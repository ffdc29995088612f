"""What a scan and a project add up to: summaries, the sessions table, and chart geometry.

The charts are drawn by the templates as SVG from the numbers here (no chart
library, no inline styles: positions are SVG attributes, colours CSS classes).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from django.core.paginator import Page, Paginator
from django.db import connections
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    OuterRef,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from inspector.diagnosis import REPAIR_RULES
from inspector.engine import RULES
from inspector.scan.models import ScanFile, ScanJob
from inspector.web import tally
from inspector.web.models import TOKEN_COLUMNS, Project, Transcript

if TYPE_CHECKING:
    from typing import TypedDict

    from django_stubs_ext import WithAnnotations

    class SessionDate(TypedDict):
        date: datetime

    # A project's transcript as ``sessions_of`` gives it: with ``date`` annotated.
    Session = WithAnnotations[Transcript, SessionDate]

STORED = (
    ScanFile.Status.NEW,
    ScanFile.Status.UPDATED,
    ScanFile.Status.UNCHANGED,
    ScanFile.Status.DUPLICATE,
)
# The day chart shows at most this many days, the latest ones.
MAX_DAYS = 366
BAR_WIDTH = 320  # px of the longest bar in the rule chart
DAY_HEIGHT = 120  # px of the tallest day in the day chart


@dataclass(slots=True)
class Summary:
    """Sessions, messages and findings of a set of transcripts."""

    sessions: int = 0
    subagents: int = 0
    linked: int = 0
    messages: int = 0
    needs_repair: int = 0
    empty: int = 0  # files with no messages: nothing to read or repair
    # A file may hold many conversations (tau-bench results, captures): each counts here.
    conversations: int = 0
    conversations_needing_repair: int = 0
    findings: dict[str, int] = field(default_factory=dict)
    # What the sessions' files record of the tokens (``diagnosis.rows.totals``): read and
    # written, and of those read, the ones from the prompt cache and into it.
    tokens_in: int = 0
    tokens_out: int = 0
    cache_read: int = 0
    cache_write: int = 0
    size: int = 0  # bytes of the files, as uploaded
    sessions_per_rule: dict[str, int] = field(default_factory=dict)

    @property
    def rules(self) -> list[dict[str, Any]]:
        """Every repair rule (and any other rule found), with its counts, in catalogue order."""
        ids = list(REPAIR_RULES) + sorted(set(self.findings) - set(REPAIR_RULES))
        return [
            {
                "id": rule,
                "title": getattr(RULES.get(rule), "title", ""),
                "findings": self.findings.get(rule, 0),
                "sessions": self.sessions_per_rule.get(rule, 0),
            }
            for rule in ids
        ]

    @property
    def total_findings(self) -> int:
        return sum(self.findings.values())


def summarize(transcripts: QuerySet[Transcript]) -> Summary:
    """The totals of ``transcripts``, added up by the database.

    GROUP BY and sums over the rows' columns and their ``counts``: a big
    project's dashboard spent seconds reading every summary into Python
    (``bench/bench_scale.py``). ``summarize_rows`` is the same in Python, from
    the rows' JSON, for other databases (and the tests' reference).
    """
    vendor = connections[transcripts.db].vendor
    if vendor not in _FINDINGS_SQL:
        return summarize_rows(transcripts)
    transcripts = transcripts.order_by()
    # The row's own columns, kept from its meta on write (``Transcript.fill_columns``);
    # a file holding a list of conversations counts each (``conversations``), any
    # other file one.
    listed = Q(conversations__gt=0)
    # Counts of a column the index holds (never null), not of the key: PostgreSQL then
    # reads an index alone (``transcript_project_totals_idx``), not the wide rows.
    every = "needs_repair"
    plain = transcripts.aggregate(
        total_sessions=Count("*"),
        total_messages=Sum("message_count", default=0),
        total_empty=Count(every, filter=Q(message_count=0)),
        total_needs_repair=Count(every, filter=Q(needs_repair=True)),
        total_subagents=Count(every, filter=Q(subagent=True)),
        total_linked=Count(every, filter=Q(parent__isnull=False)),
        total_listed=Count(every, filter=listed),
        total_listed_repair=Count(every, filter=listed & Q(needs_repair=True)),
        total_size=Sum("size", default=0),
        total_conversations=Sum("conversations", default=0),
        total_conversations_repair=Sum("conversations_repair", default=0),
        **{f"total_{name}": Sum(name, default=0) for name in TOKEN_COLUMNS},
    )
    summary = Summary(
        sessions=plain["total_sessions"],
        subagents=plain["total_subagents"],
        linked=plain["total_linked"],
        messages=plain["total_messages"],
        needs_repair=plain["total_needs_repair"],
        empty=plain["total_empty"],
        conversations=plain["total_sessions"]
        - plain["total_listed"]
        + int(plain["total_conversations"]),
        conversations_needing_repair=plain["total_needs_repair"]
        - plain["total_listed_repair"]
        + int(plain["total_conversations_repair"]),
        tokens_in=int(plain["total_tokens_in"]),
        tokens_out=int(plain["total_tokens_out"]),
        cache_read=int(plain["total_cache_read"]),
        cache_write=int(plain["total_cache_write"]),
        size=int(plain["total_size"]),
    )
    if not summary.sessions:
        return summary
    with connections[transcripts.db].cursor() as cursor:
        sql, params = _inner_sql(transcripts, "counts")
        cursor.execute(_FINDINGS_SQL[vendor].replace("ROWS", sql), params)
        for rule, findings, sessions in cursor.fetchall():
            summary.findings[rule] = _number(findings)
            # NULL where every session has the rule at 0 (the FILTER kept no row).
            summary.sessions_per_rule[rule] = int(sessions or 0)
    summary.sessions_per_rule = {r: n for r, n in summary.sessions_per_rule.items() if n}
    return summary


def _inner_sql(transcripts: QuerySet[Transcript], column: str) -> tuple[str, Any]:
    """The SQL of ``transcripts``' one ``column``, to aggregate over."""
    query = transcripts.values(column).query
    return query.get_compiler(using=transcripts.db).as_sql()


def _number(value: Any) -> int:
    """A sum from the database as Python's: PostgreSQL's numeric comes as a Decimal."""
    return int(value) if value == int(value) else value


# Findings per rule, and the sessions with any: each distinct ``counts`` object once
# (a big project has a few thousand among tens of thousands of sessions), key by key,
# weighted by how many sessions have it. The counts are read from an index of them
# (``transcript_project_counts_idx``) on PostgreSQL, not from the wide rows.
_FINDINGS_SQL = {
    "postgresql": (
        "SELECT e.key, SUM((e.value)::numeric * s.n), SUM(s.n) FILTER (WHERE (e.value)::numeric"
        " <> 0) FROM (SELECT r.counts, COUNT(*) AS n FROM (ROWS) AS r GROUP BY r.counts) AS s,"
        " LATERAL jsonb_each(CASE WHEN jsonb_typeof(s.counts) = 'object'"
        " THEN s.counts ELSE '{}'::jsonb END) AS e"
        " WHERE jsonb_typeof(e.value) = 'number' GROUP BY e.key"
    ),
    "sqlite": (
        "SELECT e.key, SUM(e.value * s.n), SUM((e.value <> 0) * s.n)"
        " FROM (SELECT r.counts, COUNT(*) AS n FROM (ROWS) AS r GROUP BY r.counts) AS s,"
        " json_each(CASE WHEN json_type(s.counts) = 'object' THEN s.counts ELSE '{}' END) AS e"
        " WHERE e.type IN ('integer', 'real') GROUP BY e.key"
    ),
}


def _add_conversations(summary: Summary, needs_repair: bool, listed: Any) -> None:
    if isinstance(listed, list) and listed:
        summary.conversations += len(listed)
        summary.conversations_needing_repair += sum(bool(c["needs_repair"]) for c in listed)
    else:
        summary.conversations += 1
        summary.conversations_needing_repair += needs_repair


def summarize_rows(transcripts: QuerySet[Transcript]) -> Summary:
    """``summarize`` row by row in Python: for a database it has no SQL for."""
    summary = Summary()
    findings: Counter[str] = Counter()
    per_rule: Counter[str] = Counter()
    rows = transcripts.annotate(
        sidechain=ExpressionWrapper(Q(meta__sidechain=True), output_field=BooleanField())
    ).values_list(
        "message_count", "needs_repair", "counts", "parent_id", "sidechain",
        "meta__conversation_list", "meta__timing", "size",
    )  # fmt: skip
    for messages, needs_repair, counts, parent_id, sidechain, listed, timing, size in rows.iterator(
        chunk_size=500
    ):
        summary.sessions += 1
        summary.size += size
        if isinstance(timing, dict):
            summary.tokens_in += _count(timing.get("tokens_in"))
            summary.tokens_out += _count(timing.get("tokens_out"))
            summary.cache_read += _count(timing.get("cache_read"))
            summary.cache_write += _count(timing.get("cache_write"))
        _add_conversations(summary, needs_repair, listed)
        summary.messages += messages
        summary.empty += not messages
        summary.needs_repair += needs_repair
        summary.subagents += bool(sidechain)
        summary.linked += parent_id is not None
        findings.update(counts or {})
        per_rule.update(rule for rule, count in (counts or {}).items() if count)
    summary.findings, summary.sessions_per_rule = dict(findings), dict(per_rule)
    return summary


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def needing_repair(transcripts: QuerySet[Transcript]) -> QuerySet[Transcript]:
    """Those of ``transcripts`` that need repair, in the order of their paths."""
    return transcripts.filter(needs_repair=True).order_by("relative_path", "file_name", "pk")


def job_transcripts(job: ScanJob) -> QuerySet[Transcript]:
    """The distinct transcripts a job's files stand for (now, after replacements)."""
    files = job.files.filter(status__in=STORED, transcript__isnull=False)
    return Transcript.objects.filter(pk__in=files.values("transcript"))


def also_elsewhere(job: ScanJob) -> tuple[int, dict[str, int]]:
    """Of the job's new files, how many other projects of the owner hold too, and per project.

    Each project keeps its own transcript of the same bytes: these are new in
    this project and still in those.
    """
    fresh = job.files.filter(status__in=(ScanFile.Status.NEW, ScanFile.Status.UPDATED))
    twins = Transcript.objects.filter(
        owner=job.owner_id, project__isnull=False, sha256__in=fresh.values("sha256")
    ).exclude(project=job.project_id)
    per_project = dict(
        twins.values_list("project__name")
        .annotate(files=Count("sha256", distinct=True))
        .order_by("-files", "project__name")
        .values_list("project__name", "files")
    )
    return twins.values("sha256").distinct().count(), per_project


def sessions_of(project: Project) -> QuerySet[Session]:
    """The project's transcripts, each with ``date``: when its session began, else its upload."""
    return (
        Transcript.objects.filter(owner=project.owner_id, project=project)
        .annotate(date=SESSION_DATE)
        .select_related("parent")
    )


# When a transcript's session began, as its latest scan read it, else its upload: the
# column the scan keeps (``scan.models.refresh_scan_started``), so the dashboard sorts
# and filters by date through an index (``transcript_project_date_idx``) instead of
# looking up every session's scan files.
SESSION_DATE = Coalesce("scan_started", "created")


def page_of(
    sessions: QuerySet[Session], number: Any, per_page: int, count: int | None = None
) -> Page[Session]:
    """The page ``number`` of ``sessions``, in their order, each row whole.

    The count and the order read the sessions' keys alone (an index of them on
    PostgreSQL: ``transcript_project_table_idx``), then the page's rows are read
    whole by their ids: sorting a big project's whole rows, JSON summaries and
    all, took most of a dashboard's time (``bench/bench_scale.py``). ``count``:
    how many ``sessions`` there are, when the caller has it (the dashboard's
    totals), instead of counting them again.
    """
    paginator = Paginator(sessions.values_list("pk", flat=True), per_page)
    if count is not None:
        paginator.count = count
    page = paginator.get_page(number)
    ids = list(page.object_list)
    rows = {row.pk: row for row in sessions.filter(pk__in=ids).order_by()}
    # A row deleted meanwhile is left out; the paginator's numbers stay the keys'.
    found = [rows[pk] for pk in ids if pk in rows]
    return Page(found, page.number, cast("Paginator[Session]", page.paginator))


def needing_repair_beside(transcript: Transcript) -> dict[str, Transcript | None] | None:
    """The project's sessions that need repair just before and after this one, by date.

    In the dashboard's dates and order (``sessions_of``).
    """
    project = transcript.project
    if project is None:
        return None
    sessions = sessions_of(project).filter(needs_repair=True)
    here = sessions_of(project).filter(pk=transcript.pk).values_list("date", flat=True)
    date = here.first()
    if date is None:
        return None
    earlier = Q(date__lt=date) | Q(date=date, pk__lt=transcript.pk)
    later = Q(date__gt=date) | Q(date=date, pk__gt=transcript.pk)
    previous = sessions.filter(earlier).order_by("-date", "-pk").first()
    following = sessions.filter(later).order_by("date", "pk").first()
    if previous is None and following is None:
        return None
    return {"previous": previous, "next": following}


def timeline_neighbours(
    sender: type[Transcript], transcript: Transcript, **kwargs: object
) -> dict[str, Any]:
    """The timeline's links to those sessions (``web.events.timeline_shown``, ``apps.ready``)."""
    return {"neighbours": needing_repair_beside(transcript)}


def unreadable_files(project: Project) -> QuerySet[ScanFile]:
    """The project's paths whose latest scan could not read them."""
    later = ScanFile.objects.filter(
        project=project, path=OuterRef("path"), id__gt=OuterRef("id")
    ).exclude(status=ScanFile.Status.PENDING)
    return (
        ScanFile.objects.filter(project=project, status=ScanFile.Status.UNREADABLE)
        .exclude(Exists(later))
        .select_related("job")
        .order_by("path")
    )


class Unreadable(NamedTuple):
    """One of ``unreadable_files`` as the dashboard shows it; ``job``: its scan's public id."""

    path: str
    reason: str
    started: datetime | None
    finished: datetime | None
    job: str


def unreadable_list(project: Project) -> list[Unreadable]:
    """``unreadable_files(project)``, what the dashboard shows of each (its table, the day
    chart): a big project lists hundreds, and a model of each file and of its job, the job's
    notes' JSON and all, took 4-5 ms of a dashboard's Python (``bench/bench_scale.py``)."""
    fields = ("path", "reason", "started", "finished", "job__public_id")
    return [Unreadable(*row) for row in unreadable_files(project).values_list(*fields)]


def project_list(owner: Any) -> list[Project]:
    """The owner's projects by name, each with ``sessions`` and ``needing_repair``: its
    transcripts'.

    From the tallies the database keeps (``web.tally``) where it keeps them, else
    counted here.
    """
    # By name, as the model orders projects (a query that groups ignores that order).
    projects = Project.objects.filter(owner=owner).order_by("name", "pk")
    if not tally.available(projects.db):
        return list(
            projects.annotate(
                sessions=Count("transcripts", distinct=True),
                needing_repair=Count(
                    "transcripts", filter=Q(transcripts__needs_repair=True), distinct=True
                ),
            )
        )
    found = list(projects.only("name", "slug", "created"))
    totals = tally.totals_per_project(
        (project.pk for project in found), ("sessions", "needs_repair"), projects.db
    )
    for project in found:
        counted = totals.get(project.pk, {})
        project.sessions = int(counted.get("sessions", 0))  # type: ignore[attr-defined]
        project.needing_repair = int(counted.get("needs_repair", 0))  # type: ignore[attr-defined]
    return found


def project_summary(project: Project, tallies: dict[tally.Key, Any] | None = None) -> Summary:
    """``summarize(sessions_of(project))``, from the database's tallies where it keeps them.

    ``tallies``: the project's, when the caller has read them (``project_tallies``).
    """
    if tallies is None:
        tallies = project_tallies(project)
    if tallies is None:
        return summarize(sessions_of(project))
    return summary_of_tallies(tallies)


def project_tallies(project: Project) -> dict[tally.Key, Any] | None:
    """The project's tallies (``web.tally``), or ``None`` where the database keeps none."""
    if not tally.available(Transcript.objects.db):
        return None
    return tally.project_tallies(project.pk, project.owner_id)


def summary_of_tallies(tallies: dict[tally.Key, Any]) -> Summary:
    """A ``Summary`` from a project's tallies (``web.tally``): what ``summarize`` adds up."""
    plain = {
        key: int(value) for (key, rule, day), value in tallies.items() if day is None and not rule
    }
    summary = Summary(
        sessions=plain.get("sessions", 0),
        subagents=plain.get("subagents", 0),
        linked=plain.get("linked", 0),
        messages=plain.get("messages", 0),
        needs_repair=plain.get("needs_repair", 0),
        empty=plain.get("empty", 0),
        conversations=plain.get("sessions", 0)
        - plain.get("listed", 0)
        + plain.get("conversations", 0),
        conversations_needing_repair=plain.get("needs_repair", 0)
        - plain.get("listed_repair", 0)
        + plain.get("conversations_repair", 0),
        tokens_in=plain.get("tokens_in", 0),
        tokens_out=plain.get("tokens_out", 0),
        cache_read=plain.get("cache_read", 0),
        cache_write=plain.get("cache_write", 0),
        size=plain.get("size", 0),
    )
    if not summary.sessions:
        return summary
    per_rule: dict[str, dict[str, Any]] = {}
    for (key, rule, _), value in tallies.items():
        if rule:
            per_rule.setdefault(rule, {})[key] = value
    for rule in sorted(per_rule):
        counted = per_rule[rule]
        if counted.get("rule_rows", 0) > 0:  # in some session's counts, if only as 0
            summary.findings[rule] = _number(counted.get("findings", 0))
        if counted.get("rule_sessions", 0):
            summary.sessions_per_rule[rule] = int(counted["rule_sessions"])
    return summary


def project_totals(
    project: Project,
    tallies: dict[tally.Key, Any] | None = None,
    unreadable: list[Unreadable] | None = None,
) -> dict[str, Any]:
    """The dashboard's totals; ``tallies`` and ``unreadable`` the project's, if read already."""
    summary = project_summary(project, tallies)
    return {
        "summary": summary,
        "size": summary.size,
        "unreadable": unreadable_files(project).count() if unreadable is None else len(unreadable),
    }


# --- charts ----------------------------------------------------------------


def rule_chart(summary: Summary) -> dict[str, Any]:
    """Horizontal bars, one per rule: findings, scaled to the largest."""
    rules = summary.rules
    top = max((rule["findings"] for rule in rules), default=0)
    bars = []
    for index, rule in enumerate(rules):
        width = round(BAR_WIDTH * rule["findings"] / top) if top else 0
        bars.append(
            rule
            | {
                "y": index * 26,
                "text_y": index * 26 + 15,
                "width": max(width, 1 if rule["findings"] else 0),
                "label_x": 96 + max(width, 1) + 6,
            }
        )
    return {"bars": bars, "height": len(bars) * 26, "width": 96 + BAR_WIDTH + 90}


def session_day(when: Any, first_timestamp: Any) -> date:
    """The day a session is drawn on: its own first timestamp, else the scan's date or upload's."""
    day = _first_day(first_timestamp)
    return timezone.localdate(when) if day is None else day


def _first_day(first_timestamp: Any) -> date | None:
    """The day of a session's own first timestamp, if it is one."""
    if isinstance(first_timestamp, str):
        try:
            moment = datetime.fromisoformat(first_timestamp)
        except ValueError:
            return None
        return timezone.localdate(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    return None


def day_chart(
    project: Project,
    tallies: dict[tally.Key, Any] | None = None,
    unreadable: list[Unreadable] | None = None,
) -> dict[str, Any] | None:
    """Stacked bars per day: sessions needing repair, clean ones, and unreadable files.

    Files with no messages are left out (the dashboard says how many in one
    line): a folder's empty files, all dated the day of the scan, would
    otherwise dwarf every day of real sessions. With its axes: a few session
    counts up the side, a few dates along the bottom. ``tallies`` and
    ``unreadable``: the project's, if the caller read them already.
    """
    days: dict[date, Counter[str]] = {}
    sessions = Transcript.objects.filter(owner=project.owner_id, project=project).exclude(
        message_count=0
    )
    if _in_utc() and (tallies is not None or tally.available(sessions.db)):
        # The tallies count the sessions per UTC day of ``first_at`` (``web.tally``).
        if tallies is None:
            tallies = tally.project_tallies(project.pk, project.owner_id)
        dated = 0
        for (key, _, day), value in tallies.items():
            if day is not None and key in _DAY_TALLIES:
                days.setdefault(day, Counter())[_DAY_TALLIES[key]] += int(value)
                dated += int(value)
        # The sessions with messages that the tallies date by ``first_at`` are all of them
        # (most projects' every one): no other is left to date here, and none is read.
        listed = tallies.get(("sessions", "", None), 0) - tallies.get(("empty", "", None), 0)
        if int(listed) != dated:
            _count_days(sessions.exclude(_DATED), days)
    else:
        _count_days(_days_of_columns(sessions, days), days)
    moments = (
        unreadable_files(project).values_list("started", "finished")
        if unreadable is None
        else [(file.started, file.finished) for file in unreadable]
    )
    for started, finished in moments:
        at = started or finished
        if at is not None:
            days.setdefault(timezone.localdate(at), Counter())["unreadable"] += 1
    if not days:
        return None
    first, last = min(days), max(days)
    hidden = max(0, (last - first).days + 1 - MAX_DAYS)
    first = max(first, last - timedelta(days=MAX_DAYS - 1))
    span = (last - first).days + 1
    step = max(3, min(24, 720 // span))
    top = max(sum(counts.values()) for day, counts in days.items() if day >= first)
    bars = []
    for offset in range(span):
        day = first + timedelta(days=offset)
        counts = days.get(day)
        if not counts:
            continue
        x, y = offset * step, DAY_HEIGHT
        parts = []
        for key in DAY_KINDS:
            height = round(DAY_HEIGHT * counts[key] / top) if counts[key] else 0
            if counts[key] and height < 1:
                height = 1
            if height:
                y -= height
                parts.append({"kind": key, "y": y, "height": height})
        bars.append(
            {
                "day": day,
                "x": x,
                "width": max(step - 1, 1),
                "parts": parts,
                **{key: counts[key] for key in DAY_KINDS},
            }
        )
    # A few days still get room for their dates and the axis's words.
    width = max(span * step, MIN_DAY_WIDTH)
    return {
        "bars": bars,
        "width": width,
        "height": DAY_HEIGHT,
        "first": first,
        "last": last,
        "top": top,
        "hidden_days": hidden,
        "y_ticks": [
            {"value": value, "y": DAY_HEIGHT - round(DAY_HEIGHT * value / top)}
            for value in sorted({0, top // 2, top})
        ],
        "x_ticks": _date_ticks(first, span, step),
    }


def _count_days(sessions: QuerySet[Transcript], days: dict[date, Counter[str]]) -> None:
    """Add ``sessions`` to ``days``, each on its ``session_day``, row by row."""
    rows = sessions.annotate(began=SESSION_DATE).values_list(
        "began", "needs_repair", "meta__timing__first"
    )
    for when, needs_repair, first in rows:
        key = "repair" if needs_repair else "clean"
        days.setdefault(session_day(when, first), Counter())[key] += 1


# Sessions dated by their ``first_at`` column in SQL: years Python's dates hold in
# any time zone (the others, if any, are dated in Python, as before).
_EARLIEST = datetime(1900, 1, 1, tzinfo=UTC)
_LATEST = datetime(2200, 1, 1, tzinfo=UTC)


def _days_of_columns(
    sessions: QuerySet[Transcript], days: dict[date, Counter[str]]
) -> QuerySet[Transcript]:
    """Add to ``days`` the sessions with a ``first_at``, per day in the current time zone.

    Returns the others, for ``_count_days``: no first timestamp (dated by their
    scan), or one that does not read as a date. The column is kept on write
    (``Transcript.fill_columns``): reading every session's meta was most of a
    big project's day chart.
    """
    per_day = (
        sessions.filter(_DATED)
        .order_by()
        .annotate(day=TruncDate("first_at"))
        .values_list("day", "needs_repair")
        .annotate(n=Count("*"))  # not of the key: read from the index alone
    )
    for day, needs_repair, count in per_day:
        days.setdefault(day, Counter())["repair" if needs_repair else "clean"] += count
    return sessions.exclude(_DATED)


_DATED = Q(first_at__gte=_EARLIEST, first_at__lt=_LATEST)
_DAY_TALLIES = {"day_repair": "repair", "day_clean": "clean"}


def _in_utc() -> bool:
    """Whether the current time zone's days are UTC's, which the tallies count in."""
    return timezone.get_current_timezone_name() in ("UTC", "Etc/UTC")


DAY_KINDS = ("repair", "clean", "unreadable")
MIN_DAY_WIDTH = 320
# At most this many dates along the bottom of the day chart.
DATE_LABELS = 6


def _date_ticks(first: date, span: int, step: int) -> list[dict[str, Any]]:
    """Dates to label under the day chart: evenly spaced, the first and the last among them."""
    count = min(DATE_LABELS, span)
    offsets = sorted({round(i * (span - 1) / max(count - 1, 1)) for i in range(count)})
    ticks = []
    for offset in offsets:
        x = offset * step + step / 2
        anchor = "start" if offset == 0 else "end" if offset == span - 1 else "middle"
        ticks.append({"day": first + timedelta(days=offset), "x": x, "anchor": anchor})
    return ticks
