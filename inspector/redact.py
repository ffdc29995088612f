"""Find and mask credentials in transcript text. No Django.

Transcripts carry what the agent saw: environment files, shell output,
request headers. Public issue trackers are full of sessions pasted with live
keys, so the owner's timeline flags what looks like a credential and shared
pages always mask it, in every mode.

Detection is by shape (prefixes the issuers document) plus one heuristic:
a high-entropy value assigned to a name ending in KEY, TOKEN, SECRET or
PASSWORD. False positives cost a masked string; false negatives leak a key,
so the shapes lean inclusive.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SecretMatch:
    kind: str
    start: int
    end: int


# Order matters where shapes overlap (an Anthropic key also starts with sk-).
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    ("Anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9]{2,10}-[A-Za-z0-9_\-]{20,}")),
    ("OpenAI key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    (
        "AWS secret key",
        re.compile(r"(?i)(?<=aws_secret_access_key)(?:[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{40}"),
    ),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("Slack token", re.compile(r"\bxox[abposr]-[0-9A-Za-z\-]{10,}")),
    (
        "Slack webhook",
        re.compile(
            r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"
        ),
    ),
    ("bearer token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/\-]{16,}=*")),
)

_ASSIGNMENT = re.compile(
    r"(?i)\b[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD)\b[\"']?\s*[=:]\s*[\"']?"
    r"(?P<value>[A-Za-z0-9/+_=.\-]{16,})"
)
_MIN_ENTROPY = 3.5  # bits per character; random base64 ≈ 6, English words < 3.5


def entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def find_secrets(text: str) -> list[SecretMatch]:
    """Every credential-shaped span in ``text``, in order, never overlapping."""
    found: list[SecretMatch] = []
    for kind, pattern in _PATTERNS:
        found.extend(SecretMatch(kind, m.start(), m.end()) for m in pattern.finditer(text))
    for match in _ASSIGNMENT.finditer(text):
        value = match.group("value")
        if entropy(value) >= _MIN_ENTROPY and any(c.isdigit() for c in value):
            found.append(SecretMatch("assigned secret", match.start("value"), match.end("value")))
    return list(_without_overlaps(sorted(found, key=lambda m: (m.start, -m.end))))


def _without_overlaps(matches: list[SecretMatch]) -> Iterator[SecretMatch]:
    end = -1
    for match in matches:
        if match.start >= end:
            yield match
            end = match.end


def mask(text: str) -> str:
    """``text`` with each secret replaced by a label saying what was there."""
    matches = find_secrets(text)
    if not matches:
        return text
    pieces: list[str] = []
    cursor = 0
    for match in matches:
        pieces.append(text[cursor : match.start])
        pieces.append(f"[masked {match.kind}, {match.end - match.start} chars]")
        cursor = match.end
    pieces.append(text[cursor:])
    return "".join(pieces)
