"""The gitleaks rule set (``inspector/data/gitleaks.toml``) as Python patterns. No Django.

gitleaks (https://github.com/gitleaks/gitleaks, MIT licence, Copyright (c)
2019 Zachary Rice) keeps its rules as data: for each credential an id, a Go
(RE2) regular expression, the group that is the secret, keywords (one of which
every match holds), an entropy floor and allowlists. The file is kept as
gitleaks publishes it (``inspector/data/gitleaks.NOTICE`` says which version);
this module reads it and translates the few pieces of Go syntax Python's ``re``
spells otherwise: an inline flag group such as ``(?i)`` after the pattern's
start (Go scopes it to the rest of its group, Python refuses it there) and
``\\z``. Allowlists that need the file's path or the whole line are left out:
a transcript has neither, and leaving one out masks more, never less.
"""

from __future__ import annotations

import math
import re
import tomllib
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

RULES_FILE = Path(__file__).resolve().parent / "data" / "gitleaks.toml"


@dataclass(frozen=True, slots=True)
class GitleaksRule:
    id: str
    description: str
    pattern: re.Pattern[str]
    group: int  # the secret's group; 0 for the whole match
    keywords: tuple[str, ...]
    valid: Callable[[str, str], bool]  # (secret, whole match) -> still a secret?
    # How many name characters ([\w.-]) the rule reads before its keyword: the
    # pattern here starts at the keyword, and the name before it is context.
    lead: int = 0


# Most rules read a name's prefix before their keyword lazily; tried at every
# place before each keyword it costs time quadratic in the window. The pattern
# starts at the keyword instead; the caller adds the name before it back for
# the allowlists that read it.
_LEAD = r"[\w.-]{0,50}?"


def python_regex(go: str) -> str:
    """``go`` (RE2 syntax) as Python's ``re`` reads it, matching the same texts."""
    out: list[str] = []
    # For each open group: how many scoped-flag groups opened inside it must close with it.
    extra: list[int] = [0]
    in_class = False
    i = 0
    while i < len(go):
        char = go[i]
        if char == "\\":
            pair = go[i : i + 2]
            out.append("\\Z" if pair == "\\z" else pair)
            i += 2
            continue
        if in_class:
            if char == "]" and not (out and out[-1] in ("[", "[^")):
                in_class = False
            elif char == "[":
                char = "\\["  # a literal in Go; Python warns of a nested set
            out.append(char)
            i += 1
            continue
        if char == "[":
            in_class = True
            if go[i + 1 : i + 2] == "^":
                out.append("[^")
                i += 2
                if go[i : i + 1] == "]":  # a leading ] is a literal
                    out.append("\\]")
                    i += 1
                continue
            out.append("[")
            i += 1
            if go[i : i + 1] == "]":
                out.append("\\]")
                i += 1
            continue
        flags = re.match(r"\(\?([imsU-]+)\)", go[i:])
        if flags and (i > 0 or extra != [0]):
            out.append(f"(?{flags.group(1)}:")
            extra[-1] += 1
            i += flags.end()
            continue
        if char == "(":
            extra.append(0)
        elif char == ")":
            out.append(")" * extra.pop())
        out.append(char)
        i += 1
    out.append(")" * extra.pop())
    return "".join(out)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _allowed(
    entries: list[dict[str, object]],
) -> tuple[list[re.Pattern[str]], list[re.Pattern[str]], tuple[str, ...]]:
    """The allowlist patterns on the secret, on the whole match, and the stopwords."""
    on_secret: list[re.Pattern[str]] = []
    on_match: list[re.Pattern[str]] = []
    stopwords: list[str] = []
    for entry in entries:
        if entry.get("paths") or entry.get("regexTarget") == "line":
            continue
        target = on_match if entry.get("regexTarget") == "match" else on_secret
        for regex in entry.get("regexes", []):  # type: ignore[attr-defined]
            target.append(re.compile(python_regex(str(regex))))
        stopwords.extend(str(word).lower() for word in entry.get("stopwords", []))  # type: ignore[attr-defined]
    return on_secret, on_match, tuple(stopwords)


def _validator(
    rule: dict[str, object],
    common: tuple[list[re.Pattern[str]], list[re.Pattern[str]], tuple[str, ...]],
) -> Callable[[str, str], bool]:
    floor = float(rule.get("entropy", 0) or 0)  # type: ignore[arg-type]
    own = _allowed(rule.get("allowlists", []))  # type: ignore[arg-type]
    on_secret = common[0] + own[0]
    on_match = common[1] + own[1]
    stopwords = common[2] + own[2]

    def valid(secret: str, whole: str) -> bool:
        if floor and _entropy(secret) < floor:
            return False
        lowered = secret.lower()
        if any(word in lowered for word in stopwords):
            return False
        if any(p.search(secret) for p in on_secret):
            return False
        return not any(p.search(whole) for p in on_match)

    return valid


def load(path: Path = RULES_FILE) -> tuple[GitleaksRule, ...]:
    with path.open("rb") as handle:
        config = tomllib.load(handle)
    common = _allowed([config.get("allowlist", {})])
    rules: list[GitleaksRule] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for rule in config["rules"]:
            if "regex" not in rule:
                continue  # a rule on file names only (pkcs12-file)
            regex, lead = str(rule["regex"]), 0
            flags = "(?i)" if regex.startswith("(?i)") else ""
            if regex[len(flags) :].startswith(_LEAD):
                regex, lead = flags + regex[len(flags) + len(_LEAD) :], 50
            pattern = re.compile(python_regex(regex))
            group = int(rule.get("secretGroup", 0)) or (1 if pattern.groups else 0)
            rules.append(
                GitleaksRule(
                    rule["id"],
                    rule["description"],
                    pattern,
                    group,
                    tuple(keyword.lower() for keyword in rule.get("keywords", ())),
                    _validator(rule, common),
                    lead,
                )
            )
    return tuple(rules)
