"""Full-text search across a project's sessions: one interface, a backend per database.

The interface (a transcript just stored is queued for ``index_stored`` by
``signals.queue_indexing``, on the web floor's ``events.transcripts_stored``, or,
stored by a scan's worker, indexed at once from the rows its diagnosis made, a batch
of files in one transaction)::

    index_rows(transcript, rows, version)      replace a transcript's entries with these rows
    entries_of(transcript.pk, rows)            the same rows' entries, made beforehand,
    index_entries(transcript, entries, version)  and written
    index_many([(transcript, entries, version), ...])  several, in one transaction
    index_stored(transcript)                   the same, from its stored diagnosis
    stale(project), catch_up(project, seconds) transcripts not indexed at this engine version
    search(project, query) -> Results          a count, and pages of hits

What is indexed: one entry per row of the transcript's timeline as it opens
(the annotated view of the conversation and branch shown first; another branch
or conversation of the file is not indexed), holding the text the timeline's own
search reads: the message text, thinking, each call's tool name and arguments
and a result's tool name. It is the text as a full share link shows it
(``inspector.share.content.shown_row``), every credential-shaped string masked
(``inspector.redact``): the owner's timeline shows the text unmasked, but a
search index is a second copy of every credential a session saw, in a database
that is backed up and read by more programs than the stored transcripts are, so
it holds none. Searching for a key finds nothing; "masked" finds the rows that
held one. A row's entry is its first ``BODY_LIMIT`` characters.

Rows are read one at a time and written ``BATCH_ROWS`` at a time (fewer when
their text passes ``BATCH_CHARS``): what indexing holds at once is one batch,
whatever the transcript's size. A transcript's entries are replaced in one
transaction, with its row locked (on PostgreSQL) so that two indexers of one
transcript never leave it indexed twice.

The query: words, each matching any word that starts with it (``deplo`` finds
"deployed"), and "quoted phrases", matching those words in a row, in that order.
A row matches when it holds every one of them, in any case. Any other character
separates words, as it does in the text (``views.py`` is the phrase "views py",
found in ``inspector/web/views.py``), so no input is a syntax error on either
backend: the query handed to the database is built from the words alone.

The backends, chosen by ``connection.vendor``:

- SQLite (the embedded default): an FTS5 table over the rows (migration 0002, in
  ``0001_squashed_0004_fts_insert_in_bulk``),
  matched with a query of quoted strings, snippets by FTS5's ``snippet()``.
- PostgreSQL: a ``tsvector`` column of the row's words (``to_tsvector('simple',
  ...)``, no stemming, as FTS5) with a GIN index, matched with ``to_tsquery``
  built from the same words (``<->`` for phrases, ``:*`` for prefixes). The
  words are split here, the way FTS5's tokenizer splits them: PostgreSQL's own
  parser keeps ``views.py``, paths, e-mail addresses and URLs as single words, so
  a search for ``views`` would not find them. For the same reason its
  ``ts_headline``, which parses the text its own way, would mark nothing where
  such a word matched, so the snippet is cut and marked here, by the same rule.

Both backends return snippets with the matches between two control characters
that indexed text never holds (``clean`` removes them); ``marked`` escapes the
rest and turns only those into ``<mark>``, so nothing of a transcript reaches a
page as markup.
"""

from __future__ import annotations

import html
import logging
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

from django.core.cache import cache
from django.db import DatabaseError, connection, transaction
from django.db.models import QuerySet
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from inspector.diagnosis import ENGINE_VERSION
from inspector.diagnosis.select import PAGE_SIZE, Filters, row_number
from inspector.redact import mask
from inspector.search.models import SearchIndexed, SearchRow
from inspector.share.content import shown_row
from inspector.web import store
from inspector.web.models import Project, Transcript

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper


log = logging.getLogger(__name__)

# A timeline row (``inspector.diagnosis.model.Row``), as read here.
Row = Mapping[str, Any]

# At most this many rows, or rows holding this many characters, are written at once.
BATCH_ROWS = 500
BATCH_CHARS = 4_000_000
# A row's entry holds at most this much of its text (PostgreSQL refuses a tsvector
# past 1 MB; a Write call's arguments can hold a whole file).
BODY_LIMIT = 100_000
# A query's words and phrases beyond these are left out.
MAX_TERMS = 16
MAX_WORD = 100
# A search counts at most this many of its rows: past it, the page says "more than"
# and lists the first ones, in order. Counting every row of a common word reads every
# one of them (seconds for a word in most of a million rows: bench/bench_scale.py),
# while a page of the first ones, in the order of the sessions' names, walks the
# project's sessions in that order (web's transcript_project_name_idx) and stops.
COUNT_LIMIT = 1000
# On PostgreSQL, a query the planner expects in at most this many rows of the whole index
# reads a page of its first COUNT_LIMIT rows by the GIN index and sorts them, even when it
# matches more than COUNT_LIMIT rows of the project: the walk in name order reads rows until
# the page's last, all 400,000 of a big project's for a word in one row of 300 ("masked",
# 0.4 s), while the GIN index reads only the word's 3,000 rows (bench/bench_scale.py). Past
# it (a phrase in 20,000 rows, "the") the walk is shorter than reading every match.
GIN_PAGE_ROWS = 8000
# A count of the first COUNT_LIMIT rows is read so (by the GIN index, for one word) while
# the planner expects the query in at most this many rows of the index; past it the
# planner's own plan (walking the sessions, for a word in most rows, finds them at once).
GIN_COUNT_ROWS = 100_000
# Such a query of several words reads the GIN index for its word expected in the fewest
# rows and checks the others on those rows alone: GIN reads a prefix (``the:*``) by
# collecting every row of every word it begins (the, then, there...) before it keeps the
# rare word's, 160-250 ms of "the ritarfondis" at team scale for 8 rows. And a query many
# in the index, prefixes and all, is counted by its exact words first (``test error``
# for ``test:* & error:*``): those rows are some of the query's, so past COUNT_LIMIT of
# them the query is too, and GIN reads exact words without collecting them (36 ms, not
# 975, bench/bench_scale.py).
# And of those terms the GIN index reads, it leaves out the words the planner expects in more
# than this share of the index's rows, checked on the rows the other words read: GIN reads a
# phrase as its words, each row of the rarest looked up in every other word's rows, and
# "the" is in 95 % of them ("the failing test" spent 65-80 ms collecting 50,000 rows of
# ``the & failing & test``, 26-30 ms of ``failing & test``, at a load of 8: bench_scale.py).
GIN_COMMON_SHARE = 0.5
# What a snippet shows around its first match: FTS5 counts words, the other characters.
SNIPPET_WORDS = 24
SNIPPET_BEFORE = 60
SNIPPET_AFTER = 180

START, STOP = "\x02", "\x03"
# Characters no entry holds: the snippet markers, and NUL, which PostgreSQL's text refuses.
_UNWANTED = str.maketrans("", "", "\x00" + START + STOP)
# A word, as FTS5's unicode61 tokenizer reads one: letters and digits; all else separates.
WORD = re.compile(r"[^\W_]+")


# --- what a row's entry holds ------------------------------------------------


def clean(text: str) -> str:
    # Most text holds none of them: three searches in C, not ``str.translate``, which
    # reads a non-ASCII text a character at a time (14 % of a scan's CPU went there).
    if "\x00" in text or START in text or STOP in text:
        return text.translate(_UNWANTED)
    return text


def row_text(row: Row) -> str:
    """The row's searchable text as a full share shows it, each string's secrets masked."""
    shown = shown_row(row)
    fields = [shown.get("text") or ""]
    fields += [part.get("text") or "" for part in shown.get("parts") or ()]
    for call in shown.get("calls") or ():
        fields += [str(call.get("name") or ""), str(call.get("arguments") or "")]
    result = shown.get("result") or {}
    fields.append(str(result.get("name") or ""))
    body = "\n".join(mask(field) for field in fields if field.strip())
    return clean(body[:BODY_LIMIT])


def words_of(text: str) -> str:
    """The text's words in lower case, one space apart: what PostgreSQL indexes."""
    return " ".join(WORD.findall(text.lower()))


# --- the query ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Term:
    """Words that must stand together in this order; ``prefix``: the last may go on."""

    words: tuple[str, ...]
    prefix: bool


# A quoted phrase (an unclosed quote runs to the end), or anything else up to a space.
_PIECE = re.compile(r'"([^"]*)"?|([^\s"]+)')


def parse(query: str) -> list[Term]:
    """The query's words and phrases, in lower case; ``[]`` when it holds no word."""
    terms: list[Term] = []
    for match in _PIECE.finditer(query):
        quoted, bare = match.groups()
        words = tuple(word[:MAX_WORD] for word in WORD.findall((quoted or bare or "").lower()))
        term = Term(words, prefix=bare is not None)
        if words and term not in terms:
            terms.append(term)
    return terms[:MAX_TERMS]


def timeline_query(query: str, terms: Sequence[Term], snippet: str) -> str:
    """What the timeline's own search box carries on with, from a hit on a row.

    That search looks for one string as it is written. It is given the query
    when the row shows it so (the snippet holds it), else the longest word asked
    for, which the row holds: the query's words may stand apart there.
    """
    plain = snippet.replace(START, "").replace(STOP, "").lower()
    typed = " ".join(query.replace('"', " ").split())
    if typed and typed.lower() in plain:
        return typed
    return max((word for term in terms for word in term.words), key=len, default="")


def fts5_query(terms: Sequence[Term]) -> str:
    """An FTS5 query: each term a quoted string (words only, so nothing to escape)."""
    return " ".join(f'"{" ".join(term.words)}"' + ("*" if term.prefix else "") for term in terms)


def tsquery(terms: Sequence[Term]) -> str:
    """A ``to_tsquery`` query: lexemes of letters and digits, quoted, so nothing to escape."""
    parts = []
    for term in terms:
        lexemes = [f"'{word}'" for word in term.words]
        if term.prefix:
            lexemes[-1] += ":*"
        parts.append("(" + " <-> ".join(lexemes) + ")")
    return " & ".join(parts)


def _pattern(terms: Sequence[Term]) -> re.Pattern[str]:
    """Where the terms stand in a text, word boundaries as ``WORD`` draws them."""
    alternatives = []
    for term in terms:
        phrase = r"[\W_]+".join(re.escape(word) for word in term.words)
        ending = r"[^\W_]*" if term.prefix else r"(?![^\W_])"
        alternatives.append(rf"(?<![^\W_]){phrase}{ending}")
    return re.compile("|".join(alternatives), re.IGNORECASE)


def highlight(text: str, terms: Sequence[Term]) -> str:
    """A stretch of ``text`` around its first match, every match in it between the markers."""
    pattern = _pattern(terms)
    first = pattern.search(text)
    if first is None:
        head = text[: SNIPPET_BEFORE + SNIPPET_AFTER]
        return head + ("…" if len(head) < len(text) else "")
    return around(text, pattern, first)


def around(text: str, pattern: Any, first: Any) -> str:
    """The stretch of ``text`` around ``first``, a match of ``pattern`` (``re`` or
    ``re2``), with whole words at both ends and every match in it between the markers.

    The pattern search's ``snippet`` takes it too: its pattern may match nothing, which
    marks nothing (``_pattern``'s terms always match a word).
    """
    start = max(0, first.start() - SNIPPET_BEFORE)
    stop = min(len(text), first.end() + SNIPPET_AFTER)
    while start > 0 and WORD.match(text, start - 1):
        start -= 1
    while stop < len(text) and WORD.match(text, stop):
        stop += 1
    pieces = ["…" if start > 0 else ""]
    at = start
    for match in pattern.finditer(text, start, stop):
        if match.end() == match.start():
            continue
        pieces += [text[at : match.start()], START, match.group(), STOP]
        at = match.end()
    pieces += [text[at:stop], "…" if stop < len(text) else ""]
    return "".join(pieces)


def marked(snippet: str) -> SafeString:
    """The snippet as HTML: all of it escaped, the matches (between the markers) in ``<mark>``."""
    out: list[str] = []
    inside = False
    for piece in re.split(f"([{START}{STOP}])", snippet):
        if piece == START:
            if not inside:
                out.append("<mark>")
            inside = True
        elif piece == STOP:
            if inside:
                out.append("</mark>")
            inside = False
        else:
            out.append(html.escape(piece))
    if inside:
        out.append("</mark>")
    return mark_safe("".join(out))  # noqa: S308 -- every piece of text is escaped above


# --- the backends ------------------------------------------------------------

# transcript id, position, key, role, body, message (``SearchRow.message``)
Entry = tuple[int, int, str, str, str, int]

# The rows a query matches in one project, sessions by name then rows in order.
_FROM_SQLITE = (
    "FROM search_searchrow_fts "
    "JOIN search_searchrow r ON r.id = search_searchrow_fts.rowid "
    "JOIN web_transcript t ON t.id = r.transcript_id "
    "WHERE search_searchrow_fts MATCH %s AND t.project_id = %s AND t.owner_id = %s "
)
_FROM_POSTGRESQL = (
    "FROM search_searchrow r "
    "JOIN web_transcript t ON t.id = r.transcript_id "
    "WHERE r.document @@ to_tsquery('simple', %s) AND t.project_id = %s AND t.owner_id = %s "
)
# The same rows on PostgreSQL read by the GIN index for one query (the first parameter:
# the words expected in the fewest rows), each row's session looked up by its key
# (a nested loop: a hash of a big project's 40,000 sessions cost 20-70 ms a search), then
# checked against the whole query (the last parameter). ``OFFSET 0`` keeps the planner
# from merging the whole query into the index scan or the session into a hash join.
_GIN_POSTGRESQL = (
    'FROM (SELECT id, transcript_id, position, "key", role, message, document '
    "FROM search_searchrow WHERE document @@ to_tsquery('simple', %s) OFFSET 0) r "
    "CROSS JOIN LATERAL (SELECT t.id, t.relative_path, t.file_name FROM web_transcript t "
    "WHERE t.id = r.transcript_id AND t.project_id = %s AND t.owner_id = %s WHERE_SESSIONS"
    "OFFSET 0) t WHERE r.document @@ to_tsquery('simple', %s) "
)
_ORDER = (
    "ORDER BY CASE WHEN t.relative_path = '' THEN t.file_name ELSE t.relative_path END, "
    "t.id, r.position "
)
_SELECT = 'SELECT r.id, r.transcript_id, r.position, r."key", r.role, r.message '
# The rows of a query that matches few, with what they are sorted by, and the sort.
_HITS = _SELECT + ", CASE WHEN t.relative_path = '' THEN t.file_name ELSE t.relative_path END name "
_FEW = (
    'SELECT id, transcript_id, position, "key", role, message FROM hits '
    "ORDER BY name, transcript_id, position LIMIT %s OFFSET %s"
)
# Counts the first matches only (``COUNT_LIMIT``): the ``LIMIT`` parameter follows.
_COUNT = "SELECT COUNT(*), COUNT(DISTINCT counted.transcript_id) FROM (SELECT r.transcript_id "
_COUNTED = "LIMIT %s) counted"
_INSERT = 'INSERT INTO search_searchrow (transcript_id, position, "key", role, body, message'


class Backend(Protocol):
    name: str
    fence: str
    # The matches read by the GIN index first, for ``gin_first`` (PostgreSQL).
    gin_matches: str
    # Count a query's exact words first, past ``COUNT_LIMIT`` of them the query's too.
    exact_first: bool
    # Said (in a transaction of its own) before a page is read by the walk in name order.
    walk_settings: tuple[str, ...]

    def insert(self, cursor: CursorWrapper, entries: list[Entry]) -> None: ...

    # After the inserts of a transaction, for every transcript they were of.
    def inserted(self, cursor: CursorWrapper, transcript_ids: list[int]) -> None: ...

    def query(self, terms: Sequence[Term]) -> str: ...

    @property
    def matches(self) -> str: ...

    def snippets(
        self, cursor: CursorWrapper, query: str, terms: Sequence[Term], ids: list[int]
    ) -> dict[int, str]: ...

    def gin_first(self, cursor: CursorWrapper, terms: Sequence[Term], most: int) -> str | None: ...


class SQLite:
    name = "SQLite FTS5"
    matches = _FROM_SQLITE
    fence = ""  # FTS5's MATCH leads every plan: nothing to keep the planner from
    gin_matches = ""
    exact_first = False  # FTS5 reads a prefix as fast as a word
    walk_settings: tuple[str, ...] = ()

    def insert(self, cursor: CursorWrapper, entries: list[Entry]) -> None:
        cursor.executemany(_INSERT + ") VALUES (%s, %s, %s, %s, %s, %s)", entries)

    def inserted(self, cursor: CursorWrapper, transcript_ids: list[int]) -> None:
        # The transcripts' rows into the FTS5 table in one statement (migration 0004:
        # FTS5 writes a segment per statement, so a trigger made one for every row; one
        # statement for a scan's batch of transcripts, not one for each, leaves fewer to
        # merge). Their entries were all just inserted, their old ones deleted.
        places = ", ".join(["%s"] * len(transcript_ids))  # placeholders only
        cursor.execute(
            "INSERT INTO search_searchrow_fts(rowid, body) SELECT id, body "  # noqa: S608
            f"FROM search_searchrow WHERE transcript_id IN ({places})",
            transcript_ids,
        )

    def query(self, terms: Sequence[Term]) -> str:
        return fts5_query(terms)

    def snippets(
        self, cursor: CursorWrapper, query: str, terms: Sequence[Term], ids: list[int]
    ) -> dict[int, str]:
        places = ", ".join(["%s"] * len(ids))  # placeholders only: the ids are parameters
        cursor.execute(
            "SELECT rowid, snippet(search_searchrow_fts, 0, char(2), char(3), '…', %s) "  # noqa: S608
            "FROM search_searchrow_fts WHERE search_searchrow_fts MATCH %s "
            f"AND rowid IN ({places})",
            [SNIPPET_WORDS, query, *ids],
        )
        return dict(cursor.fetchall())

    def gin_first(self, cursor: CursorWrapper, terms: Sequence[Term], most: int) -> str | None:
        return None  # FTS5's MATCH leads every plan: the walk is its own


class PostgreSQL:
    name = "PostgreSQL full-text search"
    matches = _FROM_POSTGRESQL
    fence = "MATERIALIZED "  # the matches first, by the GIN index; the order after
    gin_matches = _GIN_POSTGRESQL
    exact_first = True
    # The walk stops at the page's last row; parallel workers each walk a share of the
    # sessions until the merge has its rows, and start as processes: a page of "the
    # failing test" read 836 sessions in three processes (56 ms) and 96 in one (14 ms).
    walk_settings: tuple[str, ...] = ("SET LOCAL max_parallel_workers_per_gather = 0",)

    def insert(self, cursor: CursorWrapper, entries: list[Entry]) -> None:
        cursor.executemany(
            _INSERT + ", document) VALUES (%s, %s, %s, %s, %s, %s, to_tsvector('simple', %s))",
            [(*entry, words_of(entry[4])) for entry in entries],
        )

    def inserted(self, cursor: CursorWrapper, transcript_ids: list[int]) -> None:
        pass  # each row's tsvector was made by its INSERT

    def query(self, terms: Sequence[Term]) -> str:
        return tsquery(terms)

    def snippets(
        self, cursor: CursorWrapper, query: str, terms: Sequence[Term], ids: list[int]
    ) -> dict[int, str]:
        cursor.execute("SELECT id, body FROM search_searchrow WHERE id = ANY(%s)", [ids])
        return {pk: highlight(body, terms) for pk, body in cursor.fetchall()}

    def gin_first(self, cursor: CursorWrapper, terms: Sequence[Term], most: int) -> str | None:
        """When the planner expects the terms in ``most`` rows of the index at most (its
        estimate from the column's statistics: planned, not run), the query the GIN index
        reads first, the others checked on its rows: the terms but the prefixes expected
        in more than ``GIN_PAGE_ROWS`` rows (GIN collects every row of every word such a
        prefix begins), and of their words those in most rows (``_without_common``). With
        nothing left, the whole query for a page of few rows, and none (the planner's own
        plan) for a count."""
        if _estimate(cursor, tsquery(terms)) > most:
            return None
        kept = [
            term
            for term in terms
            if not term.prefix or _estimate(cursor, tsquery([term])) <= GIN_PAGE_ROWS
        ]
        if kept:
            return _without_common(cursor, kept)
        return tsquery(terms) if most <= GIN_PAGE_ROWS else None


def _without_common(cursor: CursorWrapper, terms: Sequence[Term]) -> str:
    """What the GIN index reads of ``terms``: their words but those the planner expects
    in more than ``GIN_COMMON_SHARE`` of the index's rows (the rarest word if every one
    is), each on its own (the index holds no positions: it reads a phrase as its words,
    and the rows read are checked against the whole query); ``tsquery(terms)`` when no
    word is left out."""
    words = list(
        dict.fromkeys(
            Term((word,), term.prefix and at == len(term.words) - 1)
            for term in terms
            for at, word in enumerate(term.words)
        )
    )
    if len(words) < 2:
        return tsquery(terms)
    common = GIN_COMMON_SHARE * _estimate(cursor, "")
    expected = [(_estimate(cursor, tsquery([word])), word) for word in words]
    kept = [word for rows, word in expected if rows <= common]
    if len(kept) == len(words):
        return tsquery(terms)
    return tsquery(kept or [min(expected, key=lambda pair: pair[0])[1]])


def _estimate(cursor: CursorWrapper, query: str) -> float:
    """The rows of the whole index PostgreSQL's planner expects to hold ``query`` (all of
    them for ``""``)."""
    explain = "EXPLAIN (FORMAT JSON) SELECT 1 FROM search_searchrow"
    if query:
        cursor.execute(explain + " WHERE document @@ to_tsquery('simple', %s)", [query])
    else:
        cursor.execute(explain)
    [[plan]] = cursor.fetchone()
    return float(plan["Plan"]["Plan Rows"])


BACKENDS: dict[str, Backend] = {"sqlite": SQLite(), "postgresql": PostgreSQL()}


def backend() -> Backend | None:
    """This database's backend; ``None`` where there is no full-text index (another vendor)."""
    return BACKENDS.get(connection.vendor)


# --- indexing ----------------------------------------------------------------


def index_rows(transcript: Transcript, rows: Iterable[Row], engine_version: str) -> int:
    """Replace the transcript's entries with these rows (its timeline's, in order).

    Returns how many rows had text to index. Reads ``rows`` once, one at a
    time, and holds at most one batch of entries.
    """
    return index_entries(transcript, _batches(transcript.pk, rows), engine_version)


def entries_of(transcript_id: int, rows: Iterable[Row]) -> list[list[Entry]]:
    """Every batch of entries of these rows, made now: for rows already in memory.

    What ``index_entries`` then writes, in a transaction that does nothing
    else: on SQLite, whose one writer at a time is every scan worker's, the
    masking and the rest of each row's text are no longer done holding the lock.
    """
    return list(_batches(transcript_id, rows))


def index_entries(
    transcript: Transcript, batches: Iterable[list[Entry]], engine_version: str
) -> int:
    """Replace the transcript's entries with these (``entries_of``, or made as they are read)."""
    return index_many([(transcript, batches, engine_version)]).get(transcript.pk, 0)


def index_many(
    indexed: Sequence[tuple[Transcript, Iterable[list[Entry]], str]],
) -> dict[int, int]:
    """``index_entries`` for several transcripts (each with its entries and engine version),
    in one transaction: a scan's batch of files is one write of the index, not one a file
    (on SQLite every transaction waits for the one writer's lock and commits on its own).
    Returns each indexed transcript's count of rows; one deleted meanwhile is left out."""
    chosen = backend()
    if chosen is None or not indexed:
        return {}
    with transaction.atomic():
        # Two indexers of one transcript take turns (PostgreSQL; SQLite writes one at a
        # time), locking in the order of their ids so that two batches never deadlock.
        locked = Transcript.objects.select_for_update().order_by("pk")
        ids = set(locked.filter(pk__in=[t.pk for t, _, _ in indexed]).values_list("pk", flat=True))
        if not ids:
            return {}  # deleted meanwhile
        SearchRow.objects.filter(transcript__in=ids).delete()
        counts: dict[int, int] = {}
        versions: dict[int, str] = {}
        with connection.cursor() as cursor:
            for transcript, batches, version in indexed:
                if transcript.pk not in ids or transcript.pk in counts:
                    continue
                counts[transcript.pk], versions[transcript.pk] = 0, version
                for entries in batches:
                    chosen.insert(cursor, entries)
                    counts[transcript.pk] += len(entries)
            if any(counts.values()):
                chosen.inserted(cursor, [pk for pk, count in counts.items() if count])
        # One upsert (not update_or_create's SELECT, savepoint and INSERT or UPDATE).
        SearchIndexed.objects.bulk_create(
            [
                SearchIndexed(transcript_id=pk, engine_version=versions[pk], rows=count)
                for pk, count in counts.items()
            ],
            update_conflicts=True,
            unique_fields=["transcript"],
            update_fields=["engine_version", "rows", "indexed"],
        )
    return counts


def _batches(transcript_id: int, rows: Iterable[Row]) -> Iterator[list[Entry]]:
    batch: list[Entry] = []
    size = 0
    for position, row in enumerate(rows):
        body = row_text(row)
        if not body:
            continue
        batch.append(
            (
                transcript_id,
                position,
                str(row["key"]),
                str(row.get("role") or ""),
                body,
                row_number(row),
            )
        )
        size += len(body)
        if len(batch) >= BATCH_ROWS or size >= BATCH_CHARS:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def index_stored(transcript: Transcript) -> int:
    """Index the transcript from its stored diagnosis (rebuilt first if another engine made it).

    Rows are read from the cache file a chunk at a time. A transcript whose
    bytes no longer read is recorded with no rows, so it is not tried again.
    """
    try:
        diagnosis = store.get_page_diagnosis(transcript)
    except store.UnreadableTranscript as error:
        log.warning("not indexing transcript %s for search: %s", transcript.public_id, error)
        return index_rows(transcript, [], ENGINE_VERSION)
    return index_rows(transcript, diagnosis.rows, diagnosis.engine_version)


def stale(project: Project) -> QuerySet[Transcript]:
    """The project's transcripts not indexed, or indexed from another engine version's rows."""
    return Transcript.objects.filter(owner=project.owner_id, project=project).exclude(
        search_index__engine_version=ENGINE_VERSION
    )


# How many stale transcripts ``catch_up`` reads at a time.
CATCH_UP_BATCH = 20
# How long a project's "indexed up to" mark is trusted (``catch_up``).
CHECKED_SECONDS = 600


def _checked_key(project: Project) -> str:
    # The project's creation time too: a deleted project's id can come back (SQLite).
    return f"search:checked:{ENGINE_VERSION}:{project.pk}:{project.created.timestamp()}"


def catch_up(project: Project, seconds: float) -> int:
    """Index the project's stale transcripts for about ``seconds``; how many are left.

    Transcripts stored before the search existed, and every transcript after
    the engine version changes, are indexed so, a few at each search (and all
    at once by ``manage.py search_index``). Until then a stale transcript's old
    entries are still searched.

    Finding none stale means reading every session of the project (half a
    second at 40,000 sessions: ``bench/bench_scale.py``), so the search
    remembers, in the cache for ``CHECKED_SECONDS``, the transcript id below
    which it found every one indexed, and looks past it only. Nothing makes an
    indexed transcript stale again at the same engine version (its entries are
    replaced, not dropped), and a transcript stored after the mark, or while
    the mark was taken, is queued for indexing when it is stored anyway.
    """
    if backend() is None:
        return 0
    key = _checked_key(project)
    newest = Transcript.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    pending = stale(project).filter(pk__gt=cache.get(key, 0))
    deadline = time.monotonic() + seconds
    failed: set[int] = set()
    while time.monotonic() < deadline:
        batch = list(pending.exclude(pk__in=failed).order_by("id")[:CATCH_UP_BATCH])
        if not batch:
            break
        for transcript in batch:
            if time.monotonic() >= deadline:
                break
            try:
                index_stored(transcript)
            except (OSError, DatabaseError):
                # Its bytes could not be read now (storage), or the database is busy: next time.
                log.exception("indexing transcript %s for search failed", transcript.public_id)
                failed.add(transcript.pk)
    first_left = pending.order_by("id").values_list("pk", flat=True).first()
    cache.set(key, newest if first_left is None else first_left - 1, CHECKED_SECONDS)
    return 0 if first_left is None else pending.count()


# --- searching ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    session: Transcript
    position: int
    key: str
    role: str
    snippet: SafeString
    page: int
    href: str
    message: int | None = None  # ``SearchRow.message``

    @property
    def session_name(self) -> str:
        return self.session.relative_path or self.session.file_name

    @property
    def row_label(self) -> str:
        """The row as the timeline numbers it: "message 12", "inserted row", or "" unknown."""
        if self.message is None:
            return ""
        return f"message {self.message}" if self.message else "inserted row"


class Results:
    """The rows of a project that hold the query: counted once, read a page at a time.

    Made for ``django.core.paginator.Paginator``: ``count()`` and slices. At most
    ``COUNT_LIMIT`` rows are counted and listed; ``more`` says there are others.
    """

    def __init__(
        self,
        project: Project,
        query: str,
        chosen: Backend,
        within: tuple[str, list[Any]] = ("", []),
    ) -> None:
        self.project = project
        self.text = query
        self.terms = parse(query)
        self._backend = chosen
        self._query = chosen.query(self.terms)
        self._counts: tuple[int, int] | None = None
        # What the GIN index reads first when the query is few in it (``GIN_PAGE_ROWS``),
        # "" when it is not: asked once.
        self._first: str | None = None
        # An ``AND`` clause on ``t`` choosing the sessions (``pattern.within_sql``: dates).
        self._where, self._where_params = within

    def _params(self) -> list[Any]:
        return [self._query, self.project.pk, self.project.owner_id, *self._where_params]

    def _gin(self) -> tuple[str, list[Any]]:
        """The matches read by the GIN index first (``_GIN_POSTGRESQL``), and their
        parameters but the whole query, which comes last."""
        sql = self._backend.gin_matches.replace("WHERE_SESSIONS", self._where)
        return sql, [self._first, *self._params()[1:]]

    def _counted(self) -> tuple[int, int]:
        if self._counts is None:
            if not self.terms:
                self._counts = (0, 0)
            else:
                with connection.cursor() as cursor:
                    self._counts = self._count(cursor)
        return self._counts

    def _count(self, cursor: CursorWrapper) -> tuple[int, int]:
        limit = COUNT_LIMIT + 1
        asked = [list(self.terms)]
        exact = [Term(term.words, prefix=False) for term in self.terms]
        if self._backend.exact_first and exact != asked[0] and not self._gin_first(cursor):
            # Rows holding the words themselves are some of the rows holding words that
            # begin with them: past the limit of those, the query is past it too.
            asked.insert(0, exact)
        for terms in asked:
            query = self._backend.query(terms)
            first = self._gin_first(cursor) if terms is asked[-1] else ""
            first = first or self._backend.gin_first(cursor, terms, GIN_COUNT_ROWS) or ""
            if first:
                sql = self._backend.gin_matches.replace("WHERE_SESSIONS", self._where)
                params = [first, *self._params()[1:], query, limit]
            else:
                sql = self._backend.matches + self._where
                params = [query, *self._params()[1:], limit]
            cursor.execute(_COUNT + sql + _COUNTED, params)
            rows, sessions = cursor.fetchone()
            if rows >= limit:
                break
        return int(rows), int(sessions)

    def _gin_first(self, cursor: CursorWrapper) -> str:
        if self._first is None:
            self._first = self._backend.gin_first(cursor, self.terms, GIN_PAGE_ROWS) or ""
        return self._first

    def count(self) -> int:
        """How many rows match, ``COUNT_LIMIT`` at most: the rows listed."""
        return min(self._counted()[0], COUNT_LIMIT)

    @property
    def more(self) -> bool:
        """More rows than ``COUNT_LIMIT`` match: those past it are neither counted nor listed."""
        return self._counted()[0] > COUNT_LIMIT

    @property
    def sessions(self) -> int:
        """How many sessions hold a row that matches (``0`` when ``more``: not counted)."""
        return 0 if self.more else self._counted()[1]

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, item: Any) -> Any:
        if not isinstance(item, slice):
            return self[item : item + 1][0] if item >= 0 else list(self)[item]
        start, stop, step = item.indices(self.count())
        if step != 1:
            return list(self)[item]
        return self._page(start, max(0, stop - start))

    def __iter__(self) -> Iterator[Hit]:
        return iter(self._page(0, self.count()))

    def _page(self, offset: int, limit: int) -> list[Hit]:
        if not self.terms or limit <= 0:
            return []
        with connection.cursor() as cursor:
            params = [*self._params(), limit, offset]
            walk = self.more and not self._gin_first(cursor)
            if walk:
                # Many rows: the sessions are walked in the order of their names and the
                # walk stops at the page (``transcript_project_name_idx``).
                sql = _SELECT + self._backend.matches + self._where + _ORDER + "LIMIT %s OFFSET %s"
            else:
                # At most COUNT_LIMIT rows, or few in the whole index (``GIN_PAGE_ROWS``):
                # read them all by the full-text index, then sort. Left to itself,
                # PostgreSQL takes a page of a rare word (LIMIT 9) for a short walk too,
                # and reads all 40,000 sessions' rows to find it (1.4 s).
                if self._gin_first(cursor):
                    # The GIN index read for the words expected in the fewest rows.
                    gin, first = self._gin()
                    chosen, params = f"{_HITS}{gin}", [*first, self._query, limit, offset]
                else:
                    chosen = f"{_HITS}{self._backend.matches}{self._where}"
                sql = f"WITH hits AS {self._backend.fence}({chosen}) {_FEW}"
            settings = self._backend.walk_settings if walk else ()
            with transaction.atomic() if settings else nullcontext():
                for setting in settings:
                    cursor.execute(setting)
                cursor.execute(sql, params)
                found = cursor.fetchall()
            ids = [pk for pk, *_ in found]
            snippets = self._backend.snippets(cursor, self._query, self.terms, ids) if ids else {}
        sessions = Transcript.objects.only("public_id", "file_name", "relative_path").in_bulk(
            {transcript for _, transcript, *_ in found}
        )
        hits = []
        for pk, transcript_id, position, key, role, message in found:
            session = sessions.get(transcript_id)
            if session is None:
                continue  # deleted since the rows were read
            page = position // PAGE_SIZE + 1
            snippet = snippets.get(pk, "")
            # The link the timeline's own search makes: the row's page, the words, its anchor.
            words = timeline_query(self.text, self.terms, snippet)
            query = urlencode(Filters().query(page=page, q=words))
            href = f"{reverse('timeline', args=[session.public_id])}?{query}#{key}"
            hits.append(Hit(session, position, key, role, marked(snippet), page, href, message))
        return hits


def search(
    project: Project, query: str, within: tuple[str, list[Any]] = ("", [])
) -> Results | None:
    """The project's rows that hold ``query`` (in the sessions ``within`` chooses, an SQL
    clause on ``t``); ``None`` where the database has no index."""
    chosen = backend()
    if chosen is None:
        return None
    return Results(project, query, chosen, within)
