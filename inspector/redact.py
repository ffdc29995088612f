"""Find and mask credentials in transcript text. No Django.

Transcripts carry what the agent saw: environment files, shell output,
request headers. Public issue trackers are full of sessions pasted with live
keys, so the owner's timeline flags what looks like a credential and shared
pages always mask it, in every mode.

Detection is detect-secrets' (Yelp's maintained detector): the regular
expressions of its plugins and of its keyword detector, run here for their
spans rather than line by line. Our own rules cover what it lacks: issuers it
has no plugin for (Anthropic, new OpenAI keys, Google, Hugging Face, ...),
keys longer than its patterns allow (Stripe's, JWT signatures), values it
reads only when quoted (``*_PASSWORD=``, ``SECRET_KEY=`` with any character in
it), credentials in URLs and ``Authorization: Basic`` headers, and private-key
blocks masked whole. Its generic high-entropy plugins are left out: on a
transcript they flag every call id and hash.

Text is searched as it is and, where it holds backslashes, once more with
JSON's escapes undone, so a key inside a JSON string inside a JSON string
(a tool's arguments, rendered) is found where a page shows it. False
positives cost a masked string; false negatives leak a key, so the rules
lean inclusive.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
import re._constants as _sre  # type: ignore[import-not-found]  # no stubs; stdlib since 3.11
import re._parser as _parser  # type: ignore[import-not-found]
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from importlib.resources import files

from ahocorasick_rs import BytesAhoCorasick, Implementation
from detect_secrets.plugins import keyword
from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.base import RegexBasedDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.cloudant import CloudantDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.private_key import PrivateKeyDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.softlayer import SoftlayerDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from inspector import gitleaks

# Bumped whenever the rules change, so counts made by older rules are not reused.
DETECTOR_VERSION = "3"  # unchanged by at_needles: a shortcut, the same spans


@dataclass(frozen=True, slots=True)
class SecretMatch:
    kind: str
    start: int
    end: int


# Where a rule looks: the text in lower case (ASCII), or reduced to the
# classes of characters a needle-less pattern is made of, one byte a character,
# so that a literal search (fast) finds every place a match could be.
LOWER = "lower"
ASCII = "ascii"  # as it is, for needles whose case matters
BASE64 = "base64"  # [A-Za-z0-9/+] → a
WORD = "word"  # [A-Za-z0-9_-] → w
DIGITS = "digits"  # [0-9] → d
# How far from a needle a match may end; longer values are cut there, and
# only a private-key block (searched everywhere) is longer.
REACH = 4096


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern: the secret is its named group ``secret``, else its groups, else all of it.

    ``needles``: every match holds one of them (in ``shape``), at most
    ``before`` characters after its start (never before it); the pattern
    runs only there. A
    rule with none runs over the whole text. ``reach`` bounds how long a match
    may be.
    """

    kind: str
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] | None = None
    needles: tuple[bytes, ...] = ()
    shape: str = LOWER
    before: int = 64
    group: int | None = None  # the one group that is the secret, where others are context
    reach: int = REACH
    # ``valid`` takes the whole match too (gitleaks' allowlists read it), with
    # up to ``lead`` name characters before it.
    whole: bool = False
    lead: int = 0
    # Every match starts where one of its needles does (``_at_needles``): its
    # windows are searched by trying the pattern at those places only.
    at_needles: bool = False
    # Every match holds one of these as written: a text holding none is not searched.
    requires: tuple[str, ...] = ()

    def groups(self) -> list[int]:
        if self.group is not None:
            return [self.group]
        if "secret" in self.pattern.groupindex:
            return [self.pattern.groupindex["secret"]]
        if self.pattern.groups:
            return list(range(1, self.pattern.groups + 1))
        return [0]


_MIN_ENTROPY = 3.5  # bits per character; random base64 ≈ 6, English words < 3.5


def entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _random_looking(value: str) -> bool:
    """Letters of both cases and a digit: what a key has and a hyphenated word does not."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
    )


def _high_entropy(value: str) -> bool:
    # A digit or a symbol besides - and _ too: `user-profile-settings` is a name, not a key.
    return (
        len(value) >= 16
        and entropy(value) >= _MIN_ENTROPY
        and any(c.isdigit() or not (c.isalpha() or c in "-_") for c in value)
    )


def _aws_secret(value: str) -> bool:
    return _random_looking(value) and entropy(value) >= 4.2


def _basic_credentials(value: str) -> bool:
    # base64 of `user:password`; "basic understanding" is not.
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded and decoded.decode("utf-8", "replace").isprintable()


def _jwt(value: str) -> bool:
    return JwtTokenDetector.is_formally_valid(value)


def _named_value(value: str) -> bool:
    """A value given to a secret-named key: any of 8 characters or more with a digit in it.

    Whatever its entropy (32 hex digits, a UUID): the name says what it is. A
    word (``CACHE_KEY=user-profile-settings``, ``secret: ingredient``) has no
    digit, and a placeholder or a variable is not a value.
    """
    return (
        len(value) >= 8
        and any(c.isdigit() for c in value)
        and _password(value)
        and value.lower() not in ("true", "false", "null", "none")
    )


def _password(value: str) -> bool:
    # A placeholder or a variable is not a password; anything else, however short, is.
    return value.strip("*•.x") != "" and not value.startswith(("$", "%", "{", "<"))


# Our rules are data (``inspector/data/redact.toml``, which says what each field
# means), tried before detect-secrets' so a shape we name more precisely keeps
# our name where both find the same span.
RULES_FILE = files("inspector").joinpath("data", "redact.toml")
# The checks a rule of the file names as its ``valid``.
_VALID: dict[str, Callable[[str], bool]] = {
    "random-looking": _random_looking,
    "aws-secret": _aws_secret,
    "basic-credentials": _basic_credentials,
    "jwt": _jwt,
    "named-value": _named_value,
    "password": _password,
    "high-entropy": _high_entropy,
}
_OPTIONS = ("shape", "before", "reach")


def _own_rules() -> Iterator[Rule]:
    for entry in tomllib.loads(RULES_FILE.read_text(encoding="utf-8"))["rule"]:
        pattern = entry["pattern"]
        yield Rule(
            entry["kind"],
            re.compile(
                pattern if isinstance(pattern, str) else "".join(pattern),
                re.S if entry.get("dotall") else 0,
            ),
            _VALID[entry["valid"]] if "valid" in entry else None,
            needles=tuple(needle.encode("ascii") for needle in entry.get("needles", ())),
            **{name: entry[name] for name in _OPTIONS if name in entry},
        )


_OWN_RULES = tuple(_own_rules())
# Each needle is one more pass over a long text, and each place it is found
# one more attempt to match: prefixes shared by many shapes (gl, gh) are
# searched once, rare enough that the attempts cost less than the passes.
_GITLAB = (b"gl", b"gr1348941")


# Needles for detect-secrets' patterns, in the order of each plugin's list;
# a plugin whose patterns all start with a literal needs none.
# detect-secrets' keywords (its DENYLIST), each within 9 characters of a name's start.
_KEYWORDS = (b"key", b"pass", b"pwd", b"secret", b"contrase")
# Needles, and how far before one a match may start; no needles: the pattern
# is left out. The IBM, SoftLayer and Cloudant ones that read any name ending
# in key, pass or token are: our `assigned secret` reads the same names, and
# trying them near each such word (common in transcripts) costs more than all
# the other rules together.
_Needles = tuple[tuple[bytes, ...] | None, int] | tuple[tuple[bytes, ...], int, str]
_PLUGINS: tuple[tuple[type[RegexBasedDetector], str, tuple[_Needles, ...]], ...] = (
    (
        AWSKeyDetector,
        "AWS key",
        (((b"a3t", b"abia", b"acca", b"akia", b"asia"), 0), ((b"aws",), 0)),
    ),
    (ArtifactoryDetector, "Artifactory credentials", (((b"AKC",), 1, ASCII), ((b"AP",), 1, ASCII))),
    (AzureStorageKeyDetector, "Azure storage key", (((b"accountkey=",), 0),)),
    (BasicAuthDetector, "password in a URL", (((b"://",), 0),)),
    (CloudantDetector, "Cloudant credentials", ((None, 0),) * 2 + (((b"cloudant",), REACH),) * 2),
    (DiscordBotTokenDetector, "Discord bot token", ()),
    (GitHubTokenDetector, "GitHub token", (((b"gh",), 0),)),
    (GitLabTokenDetector, "GitLab token", ((_GITLAB, 0),) * 7),
    (IbmCloudIamDetector, "IBM Cloud IAM key", ((None, 0),)),
    (IbmCosHmacDetector, "IBM COS HMAC credentials", (((b"secret",), 16),)),
    (JwtTokenDetector, "JSON web token", ()),
    (MailchimpDetector, "Mailchimp key", (((b"-us",), 32),)),
    (NpmDetector, "npm token", (((b"_authtoken",), REACH),)),
    (OpenAIDetector, "OpenAI key", (((b"t3blbkfj",), REACH),)),
    (PrivateKeyDetector, "private key", (((b"begin ", b"putty-user-key-file-2"), 0),) * 8),
    (PypiTokenDetector, "PyPI token", (((b"pypi-",), 0),) * 2),
    (SendGridDetector, "SendGrid key", (((b"SG.",), 0, ASCII),)),
    (SlackDetector, "Slack token", (((b"xox",), 0), ((b"hooks.slack.com",), 8))),
    (SoftlayerDetector, "SoftLayer credentials", ((None, 0), ((b"softlayer",), 12))),
    (SquareOAuthDetector, "Square OAuth secret", (((b"sq0csp-",), 0),)),
    (StripeDetector, "Stripe key", (((b"k_live_",), 1),)),
    (TelegramBotTokenDetector, "Telegram bot token", ()),
    (TwilioKeyDetector, "Twilio key", (((b"AC",), 0, ASCII), ((b"SK",), 0, ASCII))),
)
# Shapes and reach of the needle-less ones that do not start with a literal.
_NEEDLE_LESS: dict[type[RegexBasedDetector], tuple[str, bytes, int]] = {
    DiscordBotTokenDetector: (WORD, b"." + b"w" * 6 + b".", 27),
    TelegramBotTokenDetector: (DIGITS, b"d" * 8 + b":", 2),
    JwtTokenDetector: (LOWER, b"eyj", 0),
}


def _plugin_rules() -> Iterator[Rule]:
    for plugin, kind, needles in _PLUGINS:
        valid = _jwt if plugin is JwtTokenDetector else None
        patterns: list[re.Pattern[str]] = list(plugin.denylist)  # type: ignore[call-overload]
        for index, pattern in enumerate(patterns):
            if plugin in _NEEDLE_LESS:
                shape, needle, before = _NEEDLE_LESS[plugin]
                yield Rule(kind, pattern, valid, (needle,), shape, before)
            elif index < len(needles):
                entry = needles[index]
                found, before, shape = entry if len(entry) == 3 else (*entry, LOWER)
                if found is not None:
                    yield Rule(kind, pattern, valid, found, shape, before)
            else:
                yield Rule(kind, pattern, valid)
    # Its keyword detector: `password: "..."`, `api_key = '...'`, `secret => "..."`;
    # one of them has the value before the name, so it looks further back.
    for pattern, group in keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items():
        compared = pattern is keyword.PRECEDED_BY_EQUAL_COMPARISON_SIGNS_QUOTES_REQUIRED_REGEX
        yield Rule(
            "secret keyword",
            pattern,
            None,
            _KEYWORDS,
            before=REACH if compared else 9,
            group=group,
            # `'value' == password`: its `[!=]{2,3}` holds one of these pairs.
            requires=_COMPARISONS if compared else (),
        )


_COMPARISONS = ("==", "!=", "=!", "!!")


# gitleaks' rules (inspector/gitleaks.py), each woken by its own keywords. A
# match may start a little before its keyword (a name's prefix, `curl ... -u`)
# and is rarely long.
_GITLEAKS_BEFORE = 256
_GITLEAKS_REACH = 2048


def _literal_starts(items: list[tuple[object, object]]) -> set[str] | None:
    """The literal texts, in lower case, one of which begins every match of this parsed
    pattern (``re._parser``), or ``None`` when some match may begin otherwise (with a
    class of characters, a repeat, anything but a literal, a word boundary and groups)."""
    head = ""
    for op, argument in items:
        if op is _sre.LITERAL:
            head += chr(argument).lower()  # type: ignore[arg-type]
            continue
        if head:
            return {head}
        if op is _sre.AT and argument is _sre.AT_BOUNDARY:
            continue  # zero-width: the match still begins here
        if op is _sre.SUBPATTERN:
            return _literal_starts(list(argument[-1]))  # type: ignore[index]
        if op is _sre.BRANCH:
            starts: set[str] = set()
            for branch in argument[1]:  # type: ignore[index]
                found = _literal_starts(list(branch))
                if found is None:
                    return None
                starts |= found
            return starts
        return None
    return {head} if head else None


def _starts_at_needle(pattern: re.Pattern[str], needles: tuple[bytes, ...]) -> bool:
    """Whether each match of ``pattern`` begins with one of ``needles`` (ASCII, as the
    lower-case search finds them), so its start is a place the needles were found."""
    starts = _literal_starts(list(_parser.parse(pattern.pattern, pattern.flags)))
    keys = [needle.decode("ascii") for needle in needles]
    return bool(starts) and all(any(s.startswith(k) for k in keys) for s in starts)  # type: ignore[union-attr]


def _gitleaks_rules() -> Iterator[Rule]:
    for rule in gitleaks.load():
        needles = tuple(keyword.encode() for keyword in rule.keywords)
        yield Rule(
            rule.id,
            rule.pattern,
            rule.valid,  # type: ignore[arg-type]
            needles=needles,
            # A rule whose pattern starts at its keyword is tried there only.
            before=0 if rule.lead else _GITLEAKS_BEFORE,
            group=rule.group or None,
            reach=1 << 16 if "private-key" in rule.id else _GITLEAKS_REACH,
            whole=True,
            lead=rule.lead,
            at_needles=not rule.lead and _starts_at_needle(rule.pattern, needles),
        )


# detect-secrets' plugins, each under the name a page shows, then gitleaks'
# rules under their ids. Left out: detect-secrets' public-IP detector (an
# address is no credential) and its high-entropy string plugins (see the
# module's docstring).
RULES: tuple[Rule, ...] = _OWN_RULES + tuple(_plugin_rules()) + tuple(_gitleaks_rules())

# A JSON escape: the view of a text with these undone is searched as well.
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|.)", re.S)
_UNESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
# A string escaped twice (arguments holding JSON, rendered as JSON) has two layers.
_ESCAPE_LAYERS = 3


def find_secrets(text: str) -> list[SecretMatch]:
    """Every credential-shaped span in ``text``, in order, never overlapping.

    Spans that overlap are joined, under the name of the one that starts
    first, so no part of a key found by two rules stays in clear.
    """
    if len(text) < _SHORTEST or text.isalpha():
        return []  # no rule matches so little, nor letters alone
    found = _Scan(text).spans()
    view = text
    back: list[tuple[list[int], list[int]]] = []
    for _ in range(_ESCAPE_LAYERS):
        if "\\" not in view:
            break
        view, positions = _unescape(view)
        back.append(positions)
        for match in _Scan(view).spans():
            start, end = match.start, match.end
            for starts, origins in reversed(back):
                start, end = _origin(starts, origins, start), _origin(starts, origins, end)
            found.append(SecretMatch(match.kind, start, end))
    return list(_joined(sorted(found, key=lambda m: (m.start, -m.end))))


# `_pwd=x` is the shortest text any rule finds something in.
_SHORTEST = 6
# Texts up to this long are searched whole by the rules their needles wake.
_SMALL = 512
# A rule whose matches start this close to their needle is tried only there.
_ANCHORED = 64
_TABLES = {
    BASE64: bytes(
        ord("a") if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "/+") else ord(" ")
        for c in range(256)
    ),
    WORD: bytes(
        ord("w")
        if chr(c).isascii() and (chr(c).isalnum() or chr(c) in "_-")
        else (ord(".") if chr(c) == "." else ord(" "))
        for c in range(256)
    ),
    DIGITS: bytes(
        ord("d") if chr(c).isdigit() and c < 128 else (ord(":") if chr(c) == ":" else ord(" "))
        for c in range(256)
    ),
}


def _automata() -> dict[str, tuple[BytesAhoCorasick, list[bytes], int]]:
    by_shape: dict[str, set[bytes]] = {}
    for rule in RULES:
        by_shape.setdefault(rule.shape, set()).update(rule.needles)
    return {
        # A DFA: with gitleaks' keywords (some 300 needles) the default NFA is three times slower.
        shape: (
            BytesAhoCorasick(sorted(needles), implementation=Implementation.DFA),
            sorted(needles),
            min(map(len, needles)),
        )
        for shape, needles in by_shape.items()
    }


# Every needle of every rule, searched in one pass a shape (Aho-Corasick), and
# the rules each needle wakes.
_AUTOMATA = _automata()
_WOKEN: dict[tuple[str, bytes], list[int]] = {}
for _index, _rule in enumerate(RULES):
    for _needle in _rule.needles:
        _WOKEN.setdefault((_rule.shape, _needle), []).append(_index)


_NAME_CHARS = re.compile(r"[\w.-]*\Z")


def _whole(text: str, match: re.Match[str], lead: int) -> str:
    """The match, with the name characters just before it (up to ``lead``)."""
    if not lead:
        return match.group(0)
    before = _NAME_CHARS.search(text, max(0, match.start() - lead), match.start())
    return (before.group(0) if before else "") + match.group(0)


class _Scan:
    """One text: where each needle is in it, and the matches of the rules they wake."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.hits: dict[tuple[str, bytes], list[int]] = {}
        # One byte a character, so positions in it are positions in the text.
        plain = text.encode("ascii", "replace")
        for shape, (automaton, needles, shortest) in _AUTOMATA.items():
            if len(plain) < shortest:
                continue
            if shape == ASCII:
                data = plain
            elif shape == LOWER:
                data = plain.lower()
            else:
                data = plain.translate(_TABLES[shape])
            for index, start, _ in automaton.find_matches_as_indexes(data, overlapping=True):
                self.hits.setdefault((shape, needles[index]), []).append(start)

    def spans(self) -> list[SecretMatch]:
        found: list[SecretMatch] = []
        text = self.text
        woken = sorted({index for key in self.hits for index in _WOKEN[key]})
        for index in woken:
            rule = RULES[index]
            if rule.requires and not any(part in text for part in rule.requires):
                continue
            if len(text) <= _SMALL:
                matches: Iterable[re.Match[str]] = rule.pattern.finditer(text)
            elif rule.before <= _ANCHORED:
                matches = self._anchored(rule)
            else:
                matches = self._windowed(rule)
            groups = rule.groups()
            for match in matches:
                for group in groups:
                    start, end = match.span(group)
                    if end <= start:
                        continue
                    if (
                        rule.valid is None
                        or (
                            rule.valid(text[start:end], _whole(text, match, rule.lead))  # type: ignore[call-arg]
                            if rule.whole
                            else rule.valid(text[start:end])
                        )
                    ):
                        found.append(SecretMatch(rule.kind, start, end))
        return found

    def _positions(self, rule: Rule) -> list[int]:
        return sorted(
            position
            for needle in rule.needles
            for position in self.hits.get((rule.shape, needle), ())
        )

    def _anchored(self, rule: Rule) -> Iterator[re.Match[str]]:
        # A match starts at most ``before`` characters ahead of its needle:
        # try there, and nowhere else.
        length = len(self.text)
        starts = {
            start
            for position in self._positions(rule)
            for start in range(max(0, position - rule.before), position + 1)
        }
        match = rule.pattern.match
        covered = 0  # as ``finditer`` does, no match starts inside the one before
        for start in sorted(starts):
            if start < covered:
                continue
            found = match(self.text, start, min(length, start + rule.reach))
            if found is not None:
                covered = found.end()
                yield found

    def _windowed(self, rule: Rule) -> Iterator[re.Match[str]]:
        length = len(self.text)
        positions = self._positions(rule)
        windows: list[tuple[int, int]] = []
        for position in positions:
            lo, hi = max(0, position - rule.before), min(length, position + rule.reach)
            if windows and lo <= windows[-1][1]:
                windows[-1] = (windows[-1][0], hi)
            else:
                windows.append((lo, hi))
        if rule.at_needles:
            yield from self._at_needles(rule, positions, windows)
            return
        for lo, hi in windows:
            yield from rule.pattern.finditer(self.text, lo, hi)

    def _at_needles(
        self, rule: Rule, positions: list[int], windows: list[tuple[int, int]]
    ) -> Iterator[re.Match[str]]:
        """What ``finditer`` finds in each window, for a rule whose every match starts at
        a needle: the pattern tried at the needles only, in order, up to the window's end,
        none inside the match before (as ``finditer`` goes on from a match's end)."""
        match = rule.pattern.match
        at = 0
        for _lo, hi in windows:  # each needle is inside the window it made
            covered = 0
            while at < len(positions) and positions[at] < hi:
                start = positions[at]
                at += 1
                if start < covered:
                    continue
                found = match(self.text, start, hi)
                if found is not None:
                    covered = found.end()
                    yield found


def _unescape(text: str) -> tuple[str, tuple[list[int], list[int]]]:
    """``text`` with JSON's escapes undone, and where each escape of the result came from.

    The positions are two sorted lists: the start of each piece in the result
    and its start in ``text``; a position inside an escape maps to its start.
    """
    pieces: list[str] = []
    starts: list[int] = [0]
    origins: list[int] = [0]
    cursor = 0
    length = 0
    for escape in _ESCAPE.finditer(text):
        plain = text[cursor : escape.start()]
        pieces.append(plain)
        length += len(plain)
        code = escape.group()[1:]
        char = chr(int(code[1:], 16)) if len(code) == 5 else _UNESCAPED.get(code, code)
        starts.append(length)
        origins.append(escape.start())
        pieces.append(char)
        length += len(char)
        cursor = escape.end()
        starts.append(length)
        origins.append(cursor)
    pieces.append(text[cursor:])
    return "".join(pieces), (starts, origins)


def _origin(starts: list[int], origins: list[int], position: int) -> int:
    index = bisect.bisect_right(starts, position) - 1
    offset = position - starts[index]
    # Inside plain text the offset carries over; an escape is one character.
    following = origins[index + 1] if index + 1 < len(origins) else None
    origin = origins[index] + offset
    return origin if following is None or origin <= following else following


def _joined(matches: list[SecretMatch]) -> Iterator[SecretMatch]:
    current: SecretMatch | None = None
    for match in matches:
        if current is not None and match.start < current.end:
            if match.end > current.end:
                current = SecretMatch(current.kind, current.start, match.end)
            continue
        if current is not None:
            yield current
        current = match
    if current is not None:
        yield current


def mask(text: str) -> str:
    """``text`` with each secret replaced by a label saying what was there."""
    return mask_found(text, find_secrets(text))


def mask_found(text: str, matches: list[SecretMatch]) -> str:
    """``text`` with the spans ``find_secrets`` gave replaced by their labels."""
    if not matches:
        return text
    pieces: list[str] = []
    cursor = 0
    for match in matches:
        pieces.append(text[cursor : match.start])
        pieces.append(label(match))
        cursor = match.end
    pieces.append(text[cursor:])
    return "".join(pieces)


def label(match: SecretMatch) -> str:
    return f"[masked {match.kind}, {match.end - match.start} chars]"
