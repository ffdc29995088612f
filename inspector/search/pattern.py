"""The project search's regular expressions and dates: what ``fulltext`` does not do.

``fulltext`` finds words through the database's full-text index. Two more ways
to choose rows sit here, apart from its queries:

- **Dates** (``within``): only the sessions of these days, by the day the
  dashboard lists a session under (``scan.reports.sessions_of``: when its
  session began, else when it was uploaded), both days included. Both kinds
  of search take them.
- **A regular expression** (``PatternResults``), matched against each row's
  indexed text (``SearchRow.body``: masked, its first ``BODY_LIMIT``
  characters), in any case. It is RE2's syntax (``google-re2``): matching
  takes time linear in the text, whatever the pattern, so no pattern can hold
  the server (no backtracking: ``(a+)+$`` is as quick as ``a``), and RE2
  refuses what it cannot do in linear time (back-references, look-arounds)
  with a message the page shows, as it does for a pattern that does not
  parse or would need more than ``MAX_MEMORY`` to compile.

  Which rows it reads: where the pattern holds words it cannot match without
  (``required_words``: a run of letters or digits at a word's start, outside
  any group, class, alternative or optional part), the full-text index
  chooses the rows that hold them, and RE2 reads only those. On PostgreSQL the
  database also tests the pattern itself (``~*``) when it means the same
  there (``postgres_safe``: no ``\\b``, no inline flags, ...), under a
  ``statement_timeout``; RE2 still decides every row, so both databases find
  the same rows. Rows are read session by session, ``BATCH`` at a time, for at
  most ``SECONDS`` and ``MAX_HITS`` hits: a search cut short says so (``cut``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urlencode

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints
from django.db import DatabaseError, connection, transaction
from django.db.models import QuerySet
from django.urls import reverse

from inspector.diagnosis.select import PAGE_SIZE, Filters
from inspector.scan.reports import sessions_of
from inspector.search.fulltext import (
    SNIPPET_AFTER,
    SNIPPET_BEFORE,
    WORD,
    Backend,
    Hit,
    Term,
    around,
    fts5_query,
    marked,
    tsquery,
)
from inspector.web.models import Project, Transcript

# One regex search reads rows for at most this long, and lists at most this many.
SECONDS = 5.0
MAX_HITS = 1000
# Rows read at once, and what RE2 may take to compile one pattern.
BATCH = 500
MAX_MEMORY = 8 << 20
# A match carried to the timeline's own search box (it looks for one string) is cut here.
CARRIED = 100


class BadPattern(ValueError):
    """A pattern RE2 refuses: the message says why, for the page."""


def compile_pattern(text: str) -> Any:
    """``text`` as an RE2 pattern, matching in any case; ``BadPattern`` with RE2's reason."""
    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = MAX_MEMORY
    options.log_errors = False
    try:
        return re2.compile(text, options)
    except re2.error as error:
        reason = error.args[0] if error.args else "not a pattern"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise BadPattern(str(reason)) from None


# --- dates -------------------------------------------------------------------


def within(project: Project, since: date | None, until: date | None) -> QuerySet[Transcript] | None:
    """The project's sessions of those days (the dashboard's dates), or ``None`` for all."""
    if since is None and until is None:
        return None
    sessions = sessions_of(project)
    if since is not None:
        sessions = sessions.filter(**{"date__date__gte": since})
    if until is not None:
        sessions = sessions.filter(**{"date__date__lte": until})
    return sessions


def within_sql(sessions: QuerySet[Transcript] | None) -> tuple[str, list[Any]]:
    """An ``AND`` clause on ``t.id`` (the transcript) for raw SQL: those sessions only."""
    if sessions is None:
        return "", []
    sql, params = sessions.order_by().values("pk").query.sql_with_params()
    return f"AND t.id IN ({sql}) ", list(params)


# --- what the pattern cannot match without -----------------------------------

_QUANTIFIERS = "?*{"
_PLAIN_ESCAPES = set("dDsSwWntrfv")  # mean the same in RE2 and PostgreSQL's ARE


def required_words(pattern: str) -> list[Term]:
    """Words every match holds, each at a word's start: ``[]`` when none can be told.

    Read conservatively: only the pattern's top level counts (a group, a class,
    an escape or any quantifier ends a run of letters; a quantifier that may
    repeat nothing takes the letter before it out), and a top-level ``|``, or a
    ``(?`` flag group, gives none at all. A run counts only after ``^``, ``\\b``
    or a character that is no part of a word, so the index, which finds words by
    their start, holds every row it may match.
    """
    if "(?" in pattern:
        return []
    runs: list[str] = []
    run = ""
    starts = False  # a run begun here starts a word (``^``, ``\\b`` or a non-word character before)
    depth = 0  # inside a group
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if char == "\\" and at + 1 < len(pattern):
            escaped = pattern[at + 1]
            at += 2
            _end(runs, run)
            run = ""
            if depth:
                continue
            # \b, \s, \W or escaped punctuation (no word's letter) let a word start after it.
            starts = escaped in "bsW" or not (escaped.isalnum() or escaped == "_")
            if escaped.isalnum() and escaped not in _PLAIN_ESCAPES and escaped != "b":
                return []  # \A, \z, \p{..}, \Q: not read here
            continue
        if char == "[":
            close = _class_end(pattern, at)
            at = close + 1
            _end(runs, run)
            run, starts = "", False
            continue
        if char == "{":  # a quantifier's counts: no letters of the text
            close = pattern.find("}", at)
            at = len(pattern) if close < 0 else close + 1
            _end(runs, run)
            run, starts = "", False
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        elif char == "|" and depth == 0:
            return []
        if depth or char in "()":
            _end(runs, run)
            run, starts = "", False
            at += 1
            continue
        following = pattern[at + 1] if at + 1 < len(pattern) else ""
        if WORD.fullmatch(char):
            if following and following in _QUANTIFIERS:
                _end(runs, run)  # this letter may be absent: the run stops before it
                run, starts = "", False
            elif following == "+":
                if run or starts:
                    run += char
                _end(runs, run)
                run, starts = "", False
                at += 1
            elif run or starts:
                run += char
        else:
            _end(runs, run)
            run = ""
            optional = following and following in _QUANTIFIERS
            if char == "+":
                pass  # what came before is there at least once: a word may still start after it
            else:
                starts = char == "^" or (char not in ".$*?{}" and not optional)
        at += 1
    _end(runs, run)
    terms: list[Term] = []
    for word in runs:
        term = Term((word.lower(),), prefix=True)
        if term not in terms:
            terms.append(term)
    return terms[:16]


def _end(runs: list[str], run: str) -> None:
    if run:
        runs.append(run)


def _class_end(pattern: str, at: int) -> int:
    """Where the character class opened at ``at`` closes (the last character if never)."""
    index = at + 1
    if index < len(pattern) and pattern[index] == "^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
            continue
        if pattern[index] == "[" and pattern[index + 1 : index + 2] == ":":
            close = pattern.find(":]", index + 2)
            index = close + 2 if close >= 0 else index + 1
            continue
        if pattern[index] == "]":
            return index
        index += 1
    return len(pattern) - 1


def postgres_safe(pattern: str) -> bool:
    """Whether PostgreSQL's ``~*`` reads ``pattern`` as RE2 does, or more widely.

    Escapes other than punctuation and ``\\d \\s \\w`` (and their capitals, ``\\n``,
    ``\\t``...) differ (``\\b`` is a backspace there), and so do inline flags.
    """
    if "(?" in pattern:
        return False
    at = 0
    while at < len(pattern):
        if pattern[at] == "\\":
            escaped = pattern[at + 1 : at + 2]
            if escaped.isalnum() and escaped not in _PLAIN_ESCAPES:
                return False
            at += 2
            continue
        at += 1
    return True


# --- matching ----------------------------------------------------------------


def snippet(text: str, pattern: Any) -> tuple[str, str]:
    """A stretch of ``text`` around its first match, every match in it between the
    markers; and the first match, for the timeline's own search."""
    first = pattern.search(text)
    if first is None:
        return text[: SNIPPET_BEFORE + SNIPPET_AFTER], ""
    carried = " ".join(first.group().split())[:CARRIED]
    return around(text, pattern, first), carried


@dataclass(frozen=True, slots=True)
class _Found:
    transcript_id: int
    position: int
    key: str
    role: str
    message: int | None
    snippet: str
    carried: str


class PatternResults:
    """The rows of a project whose text the pattern matches, found once, read a page
    at a time (``Paginator``'s ``count()`` and slices, as ``fulltext.Results``)."""

    regex = True

    def __init__(
        self,
        project: Project,
        text: str,
        chosen: Backend,
        sessions: QuerySet[Transcript] | None = None,
        seconds: float | None = None,
        max_hits: int | None = None,
    ) -> None:
        self.project = project
        self.text = text
        self.pattern = compile_pattern(text)
        self.terms = required_words(text)
        self._backend = chosen
        self._sessions = sessions
        self._seconds = SECONDS if seconds is None else seconds
        self._max_hits = MAX_HITS if max_hits is None else max_hits
        self.cut = False  # stopped at the time or hit limit, before reading every row
        self._found: list[_Found] | None = None

    # The paginator's interface.
    def count(self) -> int:
        return len(self._all())

    def __len__(self) -> int:
        return self.count()

    @property
    def sessions(self) -> int:
        return len({found.transcript_id for found in self._all()})

    def __getitem__(self, item: Any) -> Any:
        found = self._all()[item]
        if isinstance(item, slice):
            return self._hits(found)
        return self._hits([found])[0]

    def __iter__(self) -> Iterator[Hit]:
        return iter(self._hits(self._all()))

    def _all(self) -> list[_Found]:
        if self._found is None:
            self._found = list(self._search())
        return self._found

    def _search(self) -> Iterator[_Found]:
        deadline = time.monotonic() + self._seconds
        found = 0
        for transcript_id in self._transcripts():
            last = -1
            while True:
                if time.monotonic() >= deadline:
                    self.cut = True
                    return
                rows = self._rows(transcript_id, last, deadline - time.monotonic())
                if rows is None:  # the database gave up on the pattern in its time
                    self.cut = True
                    return
                for position, key, role, message, body in rows:
                    if self.pattern.search(body) is None:
                        continue
                    text, carried = snippet(body, self.pattern)
                    yield _Found(transcript_id, position, key, role, message, text, carried)
                    found += 1
                    if found >= self._max_hits:
                        self.cut = True
                        return
                if len(rows) < BATCH:
                    break
                last = rows[-1][0]

    def _transcripts(self) -> list[int]:
        """The project's sessions to read, in the order the word search lists them."""
        sql, params = within_sql(self._sessions)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT t.id FROM web_transcript t WHERE t.project_id = %s AND t.owner_id = %s "  # noqa: S608 -- Django's SQL of a queryset, its values parameters
                + sql
                + "ORDER BY CASE WHEN t.relative_path = '' THEN t.file_name "
                "ELSE t.relative_path END, t.id",
                [self.project.pk, self.project.owner_id, *params],
            )
            return [pk for (pk,) in cursor.fetchall()]

    def _rows(
        self, transcript_id: int, after: int, seconds: float
    ) -> list[tuple[int, str, str, int | None, str]] | None:
        """The session's next rows after ``after`` that the index (and PostgreSQL) let by."""
        where = ["r.transcript_id = %s", "r.position > %s"]
        params: list[Any] = [transcript_id, after]
        joins = ""
        vendor = connection.vendor
        if self.terms and vendor == "sqlite":
            joins = "JOIN search_searchrow_fts ON search_searchrow_fts.rowid = r.id "
            where.append("search_searchrow_fts MATCH %s")
            params.append(fts5_query(self.terms))
        elif self.terms and vendor == "postgresql":
            where.append("r.document @@ to_tsquery('simple', %s)")
            params.append(tsquery(self.terms))
        regex_in_database = vendor == "postgresql" and postgres_safe(self.text)
        if regex_in_database:
            where.append("r.body ~* %s")
            params.append(self.text)
        sql = (
            'SELECT r.position, r."key", r.role, r.message, r.body FROM search_searchrow r '  # noqa: S608
            + joins
            + "WHERE "
            + " AND ".join(where)
            + " ORDER BY r.position LIMIT %s"
        )
        params.append(BATCH)
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                if regex_in_database:
                    timeout = max(100, int(seconds * 1000))  # what is left of the search's time
                    cursor.execute(f"SET LOCAL statement_timeout = {timeout}")
                cursor.execute(sql, params)
                return [
                    (int(p), str(k), str(role), message, str(body))
                    for p, k, role, message, body in cursor
                ]
        except DatabaseError:
            if not regex_in_database:
                raise
            return None  # statement_timeout, or a pattern PostgreSQL refuses

    def _hits(self, found: Sequence[_Found]) -> list[Hit]:
        sessions = Transcript.objects.only("public_id", "file_name", "relative_path").in_bulk(
            {each.transcript_id for each in found}
        )
        hits = []
        for each in found:
            session = sessions.get(each.transcript_id)
            if session is None:
                continue  # deleted since
            page = each.position // PAGE_SIZE + 1
            query = urlencode(Filters().query(page=page, q=each.carried))
            href = f"{reverse('timeline', args=[session.public_id])}?{query}#{each.key}"
            hits.append(
                Hit(
                    session,
                    each.position,
                    each.key,
                    each.role,
                    marked(each.snippet),
                    page,
                    href,
                    each.message,
                )
            )
        return hits
