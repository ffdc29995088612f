"""Search and dashboards at team scale: 100,000 transcripts and 1,000,000 indexed messages.

Makes a throw-away database on the PostgreSQL server at --postgres (loopback,
named pgscale_<pid>, or --prefix's), migrates it, and fills the app's own tables the
way scans fill them: a few big projects (40k, 25k, 20k sessions) and many small ones; one
owner; each transcript with its summary (findings per rule, verdicts per
provider, shape, message count, meta with its first prompt and timing) modelled
on what the diagnosis of generated Claude Code sessions stores; the scan files
that date each session over nine months; and the search index (one row per
timeline row, masked text, a tsvector with its GIN index, as migration 0002 of
search makes it). The rows go in with COPY, the indexes after, so it builds in
minutes; the COPY fires the triggers that keep each project's tallies (migration
``web 0009``, ``inspector.web.tally``), as every write of the app does.

Then it asks the pages through Django's test Client, signed in as the owner
(middleware, views, templates: the real request path), many times each, and
prints p50/p95 per request against the 200 ms target: the project dashboard
(whole page and its htmx table; filtered by verdict, rule, shape, dates; every
order; a deep page), the project list, the per-day chart alone, the CSV
download's first bytes, and the project search (common words, rare words,
phrases, prefixes, several words, no match, a deep page). The database is
dropped at the end, whatever happened. Nothing here asserts a time.

    python bench/bench_scale.py                          # full scale (make bench-scale)
    python bench/bench_scale.py --transcripts 10000 --messages 100000 --requests 10
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import orjson

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from gen import claude_code_session  # noqa: E402 -- after the path above

TARGET_MS = 200.0
BIG_PROJECTS = (("platform", 0.40), ("web-app", 0.25), ("data-pipeline", 0.20))
SMALL_PROJECTS = 150  # share the remaining 15% of the sessions
DAYS = 270  # sessions spread over about nine months
NOW = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)


# --- the database -----------------------------------------------------------


@contextmanager
def throwaway_database(
    server: str, reuse: str = "", keep: bool = False, prefix: str = "pgscale_"
) -> Iterator[str]:
    """A new database ``<prefix><pid>`` (or ``reuse``, left by a ``keep`` run), dropped at the
    end unless ``keep``."""
    import psycopg

    parts = urlsplit(server)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("--postgres must be on this machine (loopback)")
    if not prefix.endswith("_") or not prefix[:-1].isidentifier():
        raise SystemExit("--prefix is a name and an underscore (pgscale_, dash_)")
    name = reuse or f"{prefix}{os.getpid()}"
    if not name.startswith(prefix):
        raise SystemExit(f"--reuse takes a database this benchmark made ({prefix}...)")
    admin = urlunsplit(parts._replace(path="/postgres"))
    if not reuse:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        from django.db import connections

        connections.close_all()
        if keep:
            print(f"kept database {name} (--reuse {name}; dropdb -h 127.0.0.1 -U postgres {name})")
        else:
            with psycopg.connect(admin, autocommit=True) as connection:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            print(f"dropped database {name}", flush=True)


def setup_django(url: str, var_dir: Path) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["INSPECTOR_VAR_DIR"] = str(var_dir)
    os.environ["INSPECTOR_MEDIA_ROOT"] = str(var_dir / "media")
    # Nothing is queued here; the immediate backend keeps the task tables out of it.
    os.environ["TASKS_BACKEND"] = "immediate"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inspector.settings")
    import logging

    import django

    django.setup()
    logging.getLogger("axes").setLevel(logging.WARNING)  # force_login's "successful login"


# --- what the rows hold -----------------------------------------------------

COMMON = (
    "the to a of and in is it that for this with on be file test not are as we can "
    "function error if should use from run now will code so have an at by but value "
    "check return need line let me add or all one change update fix first import "
    "module path build config call result data new type time output issue when make "
    "see also only here which then there more look test_ parser session record tool "
    "message user assistant request response server client database query index page "
    "view model field string list dict json bytes number true false none null class "
    "method argument option default settings environment variable install package "
    "version release branch commit merge review deploy deployed deployment deploying "
    "pipeline worker queue task job retry timeout cache memory disk network api key"
).split()
SYLLABLES = (
    "ka ri to mo ne su la vi de po an el or um is ta ko mi ra zu be gel fon tar "
    "lin ser vox qua pre dis com ex trans sub inter ment tion able ing ed er ly ize"
).split()
ROLES = ("user", "assistant", "tool")
PROMPTS = (
    "fix the failing test in {path}",
    "why does {name} raise an error when the config is empty",
    "add a retry to the {name} worker and a test for it",
    "refactor {path} so the parser reads the session once",
    "review the deployment pipeline for {name}",
    "the build is broken after the merge: look at {path}",
    "write the migration for {name} and update the docs",
    "profile the query in {path}, it is slow on the big project",
)
MASKED = (
    "[masked OpenAI key, 48 chars]",
    "[masked GitHub token, 40 chars]",
    "[masked AWS access key, 20 chars]",
)


class Words:
    """A vocabulary with Zipf-like frequencies: common words, then a long tail of identifiers."""

    def __init__(self, rng: random.Random, tail: int = 60_000) -> None:
        seen = set(COMMON)
        words = list(COMMON)
        while len(words) < len(COMMON) + tail:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
            if rng.random() < 0.15:
                word += str(rng.randint(1, 99))
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(words))]
        total = 0.0
        self.cumulative = []
        for weight in weights:
            total += weight
            self.cumulative.append(total)
        self.rng = rng

    def some(self, count: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cumulative, k=count)

    def path(self) -> str:
        a, b = self.some(2)
        return f"src/{a}/{b.replace('test_', 'test')}.py"


def body(words: Words, role: str) -> str:
    rng = words.rng
    if role == "user":
        prompt = rng.choice(PROMPTS).format(path=words.path(), name=words.some(1)[0])
        return prompt + ". " + " ".join(words.some(rng.randint(5, 25)))
    if role == "assistant":
        text = " ".join(words.some(rng.randint(12, 45)))
        if rng.random() < 0.3:
            command = rng.choice(("pytest -q", "git diff", "make build", "grep -rn"))
            text += f'\nBash\n{{"command": "{command} {words.path()}"}}'
        return text
    lines = [" ".join(words.some(rng.randint(4, 12))) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.1:
        lines.append(f'Traceback: File "{words.path()}", line {rng.randint(1, 900)}')
    if rng.random() < 0.01:
        lines.append(f"export API_KEY={rng.choice(MASKED)}")
    return "\n".join(lines)


def templates() -> list[dict[str, Any]]:
    """Summaries the app stores, from diagnosing generated sessions (damaged and not)."""
    from inspector.diagnosis import diagnose_file
    from inspector.web.models import Transcript
    from inspector.web.store import _apply_summary

    found = []
    for seed in range(1, 9):
        row = Transcript()
        _apply_summary(
            row, diagnose_file(claude_code_session(12_000, seed=seed, damaged=seed % 2 == 0))
        )
        found.append({"verdicts": row.verdicts, "meta": row.meta, "needs_repair": row.needs_repair})
    return found


RULE_WEIGHTS = {"PAIR-1": 40, "PAIR-2": 12, "PAIR-3": 3, "ID-1": 10, "ID-2": 4, "MSG-1": 15,
                "INT-1": 8, "INT-2": 2, "LINE-1": 6}  # fmt: skip


def message_counts(rng: random.Random, transcripts: int, messages: int) -> list[int]:
    """Rows per transcript, long-tailed, 2% empty files, summing to ``messages``."""
    raw = [0 if rng.random() < 0.02 else rng.lognormvariate(1.8, 0.9) for _ in range(transcripts)]
    scale = messages / sum(raw)
    counts = [max(1, round(value * scale)) if value else 0 for value in raw]
    difference = messages - sum(counts)
    step = 1 if difference > 0 else -1
    index = 0
    while difference:
        if counts[index] > 1 or (step > 0 and counts[index]):
            counts[index] += step
            difference -= step
        index = (index + 1) % transcripts
    return counts


# --- building ---------------------------------------------------------------


def build(transcripts: int, messages: int, seed: int = 33) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from inspector.diagnosis import ENGINE_VERSION
    from inspector.scan.models import ScanJob
    from inspector.web.models import (
        LIST_COLUMNS,
        META_COLUMNS,
        Project,
        list_columns,
        meta_columns,
    )

    rng = random.Random(seed)
    words = Words(rng)
    shapes = templates()
    formats = ["claude-code"] * 14 + ["codex", "codex", "cline", "openai-chat", "opencode"]
    owner = get_user_model().objects.create_user("team", password="bench-password-not-secret")

    sizes = [round(transcripts * share) for _, share in BIG_PROJECTS]
    rest = transcripts - sum(sizes)
    small = [rng.randint(10, 300) for _ in range(SMALL_PROJECTS)]
    small = [max(1, round(size * rest / sum(small))) for size in small]
    small[-1] += rest - sum(small)
    names = [name for name, _ in BIG_PROJECTS] + [f"team-{i:03d}" for i in range(SMALL_PROJECTS)]
    projects = Project.objects.bulk_create(
        Project(owner=owner, name=name, slug=name) for name in names
    )
    per_project = list(zip(projects, sizes + small, strict=True))

    counts_per = message_counts(rng, transcripts, messages)
    raw = connection.cursor().cursor  # psycopg's own cursor, for COPY
    began = time.perf_counter()

    # Transcripts and the scans that stored them.
    transcript_rows, file_rows, indexed_rows = io.StringIO(), [], []
    jobs: list[ScanJob] = []
    tid = 0
    job_of: dict[int, ScanJob] = {}
    for project, size in per_project:
        job = ScanJob(owner=owner, project=project, source="folder", label=f"/srv/{project.slug}",
                      status="done", total=size, done=size, new=size)  # fmt: skip
        jobs.append(job)
        job_of[project.pk] = job
    ScanJob.objects.bulk_create(jobs)
    summary_rows = []
    for project, size in per_project:
        first_id = tid + 1
        for _ in range(size):
            tid += 1
            count = counts_per[tid - 1]
            when = NOW - timedelta(days=DAYS * rng.random() ** 0.7, minutes=rng.randint(0, 1440))
            if when.weekday() >= 5 and rng.random() < 0.6:
                when -= timedelta(days=2)
            shape = rng.choice(shapes)
            needs = count > 0 and rng.random() < 0.35
            counts: dict[str, int] = {}
            if needs:
                for rule in set(
                    rng.choices(
                        list(RULE_WEIGHTS), list(RULE_WEIGHTS.values()), k=rng.randint(1, 3)
                    )
                ):
                    counts[rule] = rng.randint(1, 6)
            subagent = tid > first_id + 5 and rng.random() < 0.08
            parent = rng.randint(first_id, tid - 1) if subagent else None
            session = str(uuid.UUID(int=rng.getrandbits(128)))
            meta = dict(shape["meta"], session_id=session, sidechain=subagent)
            meta["timing"] = dict(
                meta.get("timing") or {},
                first=_iso(when),
                last=_iso(when + timedelta(minutes=count * 2)),
            )
            meta["first_prompt"] = rng.choice(PROMPTS).format(
                path=words.path(), name=words.some(1)[0]
            )
            path = (f"{session}/subagents/agent-{tid:x}.jsonl" if subagent
                    else f"{words.some(1)[0]}/{session}.jsonl")  # fmt: skip
            sha = f"{rng.getrandbits(256):064x}"
            fmt = rng.choice(formats)
            size_bytes = 2_000 + count * rng.randint(800, 6_000)
            problems = 1 if rng.random() < 0.01 else 0
            created = when + timedelta(days=rng.random() * 3)
            summary_rows.append((tid, needs, counts))
            fields = (
                tid, uuid.UUID(int=rng.getrandbits(128)).hex[:22], owner.pk, project.pk,
                parent if parent is not None else None, path, path.rsplit("/", 1)[-1], fmt,
                size_bytes, sha, count, orjson.dumps(counts).decode(),
                orjson.dumps(shape["verdicts"]).decode(), needs, problems,
                orjson.dumps(meta).decode(), ENGINE_VERSION, created,
                # The columns the app keeps from meta on save (COPY does not save), and
                # the start its scan file below gives it.
                *meta_columns(meta).values(), *list_columns(meta).values(), when,
            )  # fmt: skip
            transcript_rows.write("\t".join(_copy_text(value) for value in fields) + "\n")
            source = f"/srv/{project.slug}/{path}"
            file_rows.append((job_of[project.pk].pk, project.pk, path, source,
                              size_bytes, sha, "new", "", tid, when, created))  # fmt: skip
            indexed_rows.append((tid, ENGINE_VERSION, count, created))
        # A few files of each project no reader could read.
        for index in range(max(1, size // 300)):
            bad = f"broken/{index:04d}-{words.some(1)[0]}.jsonl"
            at = NOW - timedelta(days=DAYS * rng.random())
            file_rows.append((job_of[project.pk].pk, project.pk, bad, f"/srv/{project.slug}/{bad}",
                              0, "", "unreadable", "not a session file: no record could be read",
                              None, None, at))  # fmt: skip

    columns = (
        "id, public_id, owner_id, project_id, parent_id, relative_path, file_name, format, size, "
        "sha256, message_count, counts, verdicts, needs_repair, problems, meta, engine_version, "
        "created, " + ", ".join((*META_COLUMNS, *LIST_COLUMNS, "scan_started"))
    )
    with raw.copy(f"COPY web_transcript ({columns}) FROM STDIN") as copy:
        copy.write(transcript_rows.getvalue())
    raw.execute("SELECT setval(pg_get_serial_sequence('web_transcript', 'id'), %s)", [tid])
    with raw.copy(
        "COPY scan_scanfile (job_id, project_id, path, source, size, sha256, status, reason, "
        "transcript_id, started, finished) FROM STDIN"
    ) as copy:
        for row in file_rows:
            copy.write_row(row)
    with raw.copy(
        "COPY search_searchindexed (transcript_id, engine_version, rows, indexed) FROM STDIN"
    ) as copy:
        for row in indexed_rows:
            copy.write_row(row)
    print(f"  {tid:,} transcripts, {len(file_rows):,} scan files in "
          f"{time.perf_counter() - began:.1f} s", flush=True)  # fmt: skip

    # The search rows: COPY into a staging table, then into the app's table with the
    # tsvector the app writes (to_tsvector('simple', its words)), the GIN index after.
    from inspector.search.fulltext import BODY_LIMIT, clean, words_of

    began = time.perf_counter()
    raw.execute("SET maintenance_work_mem = '512MB'")
    raw.execute("DROP INDEX search_searchrow_document_idx")
    raw.execute(
        "CREATE UNLOGGED TABLE pgscale_staging (transcript_id bigint, position int, key text, "
        "role text, body text, words text)"
    )
    with raw.copy("COPY pgscale_staging FROM STDIN") as copy:
        for transcript_id, count in enumerate(counts_per, start=1):
            for position in range(count):
                role = "user" if position == 0 else rng.choice(ROLES)
                text = clean(body(words, role))[:BODY_LIMIT]
                copy.write_row(
                    (transcript_id, position, f"r{position}", role, text, words_of(text))
                )
    print(f"  {messages:,} rows generated and copied in {time.perf_counter() - began:.1f} s",
          flush=True)  # fmt: skip
    began = time.perf_counter()
    raw.execute(
        'INSERT INTO search_searchrow (transcript_id, position, "key", role, body, document) '
        "SELECT transcript_id, position, key, role, body, to_tsvector('simple', words) "
        "FROM pgscale_staging ORDER BY transcript_id, position"
    )
    raw.execute("DROP TABLE pgscale_staging")
    print(f"  tsvectors in {time.perf_counter() - began:.1f} s", flush=True)
    began = time.perf_counter()
    raw.execute(
        "CREATE INDEX search_searchrow_document_idx ON search_searchrow USING GIN (document)"
    )
    print(f"  GIN index in {time.perf_counter() - began:.1f} s", flush=True)
    connection.commit() if not connection.get_autocommit() else None
    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    print(f"  VACUUM ANALYZE in {time.perf_counter() - began:.1f} s", flush=True)
    return {"owner": owner, "projects": per_project, "words": words}


def existing() -> dict[str, Any]:
    """What ``build`` returned, read back from a database it built."""
    from django.contrib.auth import get_user_model
    from django.db.models import Count

    from inspector.web.models import Project

    owner = get_user_model().objects.get(username="team")
    projects = Project.objects.filter(owner=owner).annotate(n=Count("transcripts")).order_by("id")
    return {
        "owner": owner,
        "projects": [(project, project.n) for project in projects],
        "words": Words(random.Random(33)),
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _copy_text(value: Any) -> str:
    """One field of COPY's text format."""
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, datetime):
        return value.isoformat()
    text = str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


# --- measuring --------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def measure(label: str, call: Callable[[], Any], requests: int, budget: float) -> dict[str, Any]:
    call()  # warm: the first request of a kind fills caches every later one finds
    times: list[float] = []
    began = time.perf_counter()
    for _ in range(requests):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
        if time.perf_counter() - began > budget and len(times) >= 5:
            break
    p50, p95 = statistics.median(times), percentile(times, 0.95)
    flag = "ok" if p95 <= TARGET_MS else "OVER"
    print(f"  {label:<52} {len(times):>4} {p50:>9.1f} {p95:>9.1f}  {flag}", flush=True)
    return {"label": label, "p50": p50, "p95": p95, "n": len(times)}


def run_requests(
    built: dict[str, Any], requests: int, budget: float, only: str = ""
) -> list[dict[str, Any]]:
    from django.test import Client
    from django.urls import reverse

    from inspector.scan import reports

    client = Client()
    client.force_login(built["owner"])
    big, big_size = built["projects"][0]
    small, small_size = built["projects"][len(BIG_PROJECTS) + 5]
    words: Words = built["words"]
    rare = words.words[-10]  # the tail's last words: in a handful of rows at most
    middling = words.words[len(COMMON) + 300]

    def get(url: str, expect: str | None = None, **headers: str) -> Callable[[], None]:
        def call() -> None:
            response = client.get(url, headers=headers)
            if response.status_code != 200:
                raise SystemExit(f"{url}: {response.status_code}")
            if expect is not None:
                text = response.content.decode()
                if expect not in text:
                    raise SystemExit(f"{url}: the page does not say {expect!r}")
            else:
                _ = response.content

        return call

    def first_bytes(url: str) -> Callable[[], None]:
        def call() -> None:
            response = client.get(url)
            if response.status_code != 200 or not next(iter(response.streaming_content)):
                raise SystemExit(f"{url}: {response.status_code}")
            response.close()

        return call

    dashboard = reverse("scan:project", args=[big.slug])
    search = reverse("search:project", args=[big.slug])

    def q(url: str, **params: Any) -> str:
        return f"{url}?{urlencode(params)}"

    cases: list[tuple[str, Callable[[], None]]] = [
        (f"dashboard, {big_size:,} sessions, whole page", get(dashboard)),
        ("dashboard table (htmx), default order", get(dashboard, HX_Request="true")),
        ("  verdict: needs repair", get(q(dashboard, needs_repair="yes"), HX_Request="true")),
        ("  verdict: clean", get(q(dashboard, needs_repair="no"), HX_Request="true")),
        ("  rule PAIR-1 (common)", get(q(dashboard, rule="PAIR-1"), HX_Request="true")),
        ("  rule INT-2 (rare)", get(q(dashboard, rule="INT-2"), HX_Request="true")),
        ("  shape codex", get(q(dashboard, format="codex"), HX_Request="true")),
        ("  one month (since/until)",
         get(q(dashboard, since="2026-08-01", until="2026-08-31"), HX_Request="true")),
        ("  order: newest first", get(q(dashboard, sort="-date"), HX_Request="true")),
        ("  order: oldest first", get(q(dashboard, sort="date"), HX_Request="true")),
        ("  order: file", get(q(dashboard, sort="file"), HX_Request="true")),
        ("  order: most messages", get(q(dashboard, sort="-messages"), HX_Request="true")),
        ("  page 600 (deep)", get(q(dashboard, page=600), HX_Request="true")),
        ("  needs repair, PAIR-1, newest, page 40",
         get(q(dashboard, needs_repair="yes", rule="PAIR-1", sort="-date", page=40),
             HX_Request="true")),
        ("  whole page, rule MSG-1, oldest first", get(q(dashboard, rule="MSG-1", sort="date"))),
        (f"dashboard, small project ({small_size} sessions)",
         get(reverse("scan:project", args=[small.slug]))),
        (f"project list ({len(built['projects'])} projects)", get(reverse("scan:project_list"))),
        ("per-day chart alone (reports.day_chart)", lambda: reports.day_chart(big)),
        ("CSV download, first bytes", first_bytes(reverse("scan:project_csv", args=[big.slug]))),
        ("CSV, needs repair, first bytes",
         first_bytes(q(reverse("scan:project_csv", args=[big.slug]), needs_repair="yes"))),
        ("search: common word 'the'", get(q(search, q="the"))),
        ("search: two common words 'test error'", get(q(search, q="test error"))),
        (f"search: middling word '{middling}'", get(q(search, q=middling))),
        (f"search: rare word '{rare}'", get(q(search, q=rare))),
        ("search: phrase '\"the failing test\"'", get(q(search, q='"the failing test"'))),
        ("search: prefix 'deplo'", get(q(search, q="deplo"))),
        ("search: prefix 'ka' (very many words)", get(q(search, q="ka"))),
        ("search: 'masked'", get(q(search, q="masked"))),
        ("search: no match 'zqxjvw'", get(q(search, q="zqxjvw"))),
        ("search: common and rare word", get(q(search, q=f"the {rare}"))),
        ("search: 'the', page 100 (deep)", get(q(search, q="the", page=100))),
        ("search: small project, 'the'",
         get(q(reverse("search:project", args=[small.slug]), q="the"))),
    ]  # fmt: skip
    print(f"  {'request':<52} {'n':>4} {'p50 ms':>9} {'p95 ms':>9}  (target p95 <= 200 ms)")
    chosen = [
        (label, call)
        for label, call in cases
        if not only or any(part in label for part in only.split(","))
    ]
    return [measure(label, call, requests, budget) for label, call in chosen]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=30, help="of each kind")
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per kind at most")
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    parser.add_argument("--keep", action="store_true", help="leave the database, for --reuse")
    parser.add_argument("--reuse", default="", help="measure a database --keep left (migrated)")
    parser.add_argument(
        "--prefix", default="pgscale_", help="of the new database's name (and of --reuse's)"
    )
    parser.add_argument(
        "--only", default="", help="only the kinds whose label holds one of these (commas)"
    )
    args = parser.parse_args()
    database = throwaway_database(args.postgres, args.reuse, args.keep, args.prefix)
    with tempfile.TemporaryDirectory(prefix="pgscale-") as temp, database as url:
        setup_django(url, Path(temp))
        from django.core.management import call_command

        began = time.perf_counter()
        call_command("migrate", verbosity=0)
        print(f"migrated in {time.perf_counter() - began:.1f} s", flush=True)
        if args.reuse:
            built = existing()
        else:
            began = time.perf_counter()
            built = build(args.transcripts, args.messages)
            print(f"built {args.transcripts:,} transcripts and {args.messages:,} indexed rows "
                  f"in {time.perf_counter() - began:.0f} s", flush=True)  # fmt: skip
        results = run_requests(built, args.requests, args.budget, args.only)
        over = [r for r in results if r["p95"] > TARGET_MS]
        print(f"{len(results) - len(over)} of {len(results)} kinds of request within "
              f"{TARGET_MS:.0f} ms at p95; worst p95 {max(r['p95'] for r in results):.0f} ms",
              flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
