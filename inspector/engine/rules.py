"""The rule catalogue: every rule of SPEC §3 with its words, example and source.

Data only. Each rule's page (``/rules/<ID>/``) renders one entry. The words
are data in ``rules.toml`` beside this module, read once, at import; the
example histories (``example_before``, ``example_after`` and
``example_appended``) are data in ``rule_examples.json`` beside it, keyed by
rule id and read once, when an example is first asked for. For the
repair rules, ``example_after`` is exactly what ``repair_history`` makes of
``example_before`` (with ``example_read_only`` as the read-only tools); for
the buffer rules (MEM-*), it is what ``Buffer(example_before)`` holds after
``example_appended`` is appended, message by message. A rule about how a
file is written (LINE-1) shows the file's lines instead:
``example_lines_after`` is what the Claude Code reader and writer make of
``example_lines_before``. The tests hold all three to that.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

import orjson

from inspector.engine.providers import ERROR_TEXTS

Message = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: ``id`` is permanent; ``source`` is a seed file or a URL.

    ``spec`` names where the spec defines it (``"§4, step 6"``); the rule page
    links there.

    ``errors`` (provider rules only) quotes the texts the provider returns,
    with ``{N}``, ``{M}``, ``{id}`` and ``{ids}`` standing for its indices and ids.
    """

    id: str
    title: str
    summary: str
    explanation: str
    source: str
    related: tuple[str, ...]
    other_sources: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    # Refusals reported in public, without a recorded answer or the provider's quoted
    # error text to support them: said on the rule page, not refused by the check.
    claims: tuple[tuple[str, str], ...] = ()  # (what is claimed, where)
    example_read_only: tuple[str, ...] = ()
    # A rule about a file's lines (LINE-1): the file before, and as repaired.
    example_lines_before: tuple[str, ...] = ()
    example_lines_after: tuple[str, ...] = ()
    # Where SPEC.md defines the rule: a section sign, the section's number, and a step.
    spec: str = ""

    @property
    def example_before(self) -> list[Message]:
        """The history before: what the repair or the buffer is given."""
        return _examples(self.id).get("before", [])

    @property
    def example_after(self) -> list[Message]:
        """The history after: what the repair makes of it, or what the buffer holds."""
        return _examples(self.id).get("after", [])

    @property
    def example_appended(self) -> tuple[Message, ...]:
        """What is appended to the buffer, message by message (MEM-* rules)."""
        return tuple(_examples(self.id).get("appended", ()))


@cache
def _all_examples() -> dict[str, dict[str, list[Message]]]:
    data: dict[str, dict[str, list[Message]]] = orjson.loads(
        files("inspector.engine").joinpath("rule_examples.json").read_bytes()
    )
    return data


def _examples(rule_id: str) -> dict[str, list[Message]]:
    """A rule's example histories by name; a rule without any has none."""
    return _all_examples().get(rule_id, {})


def _load() -> dict[str, Rule]:
    """The catalogue, in the file's order: its tables are ``Rule``'s fields."""
    data = tomllib.loads(files("inspector.engine").joinpath("rules.toml").read_text("utf-8"))
    rules: dict[str, Rule] = {}
    for rule_id, entry in data.items():
        fields: dict[str, Any] = {
            name: tuple(value) if isinstance(value, list) else value
            for name, value in entry.items()
        }
        if "errors" in fields:
            fields["errors"] = ERROR_TEXTS[fields["errors"]]
        if "claims" in fields:
            fields["claims"] = tuple(tuple(claim) for claim in fields["claims"])
        rules[rule_id] = Rule(id=rule_id, **fields)
    return rules


RULES: dict[str, Rule] = _load()
