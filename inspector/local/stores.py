"""Which store a session is in: the registry of store kinds, by the name an agent gives.

``Agent.store`` (``agents.py``) names an entry of ``STORES``: the store kinds
that hold that agent's sessions, tried in order. An agent that names none
keeps one session per file (``store.FILE``, the base). A new store kind is
one module with a ``store.LocalStore`` subclass that overrides the hooks it
needs, and one line here; ``sessions`` and ``fix`` ask this module and never
name a kind themselves.
"""

from __future__ import annotations

from pathlib import Path

from inspector.local import (
    goose_db,
    hermes_db,
    opencode,
    opencode_db,
    opencode_v2,
    openhands,
    openhands_cli,
    q_db,
)
from inspector.local.agents import Agent
from inspector.local.store import FILE, LocalStore

STORES: dict[str, tuple[LocalStore, ...]] = {
    # The database first: where OpenCode has one, it reads only that. A session of its
    # event-sourced tables (ocv2, issue 27) is owned by opencode_v2; opencode_db lists them all.
    "opencode": (opencode_v2.STORE, opencode_db.STORE, opencode.STORE),
    # kilocli (issue 27): Kilo's kilo.db, OpenCode's tables; its sessions are then owned by the
    # OpenCode stores above (the same rows), this one only finds the databases.
    "kilo": (opencode_db.KILO,),
    # agents-a (issue 27): newer Goose's database; its older JSONL files are one-file sessions.
    "goose": (goose_db.STORE,),
    # agents-c (issue 27): Hermes's state.db, what `hermes --resume` reads, where it exists.
    "hermes": (hermes_db.STORE,),
    # ohcli (issue 27): the OpenHands CLI's conversations (the V1 SDK's events/event-<n>-<id>.json).
    # Before OpenHands' own: both name a session by its events/ folder, and for_path asks in order.
    "openhands-cli": (openhands_cli.STORE,),
    # agents-c (issue 27): OpenHands' file store, one event a file in a session's events/.
    "openhands": (openhands.STORE,),
    # kirodb (issue 27): Amazon Q's and Kiro CLI's data.sqlite3, a conversation a row.
    "q": (q_db.STORE,),
}


def of(agent: Agent) -> tuple[LocalStore, ...]:
    """The stores that list ``agent``'s sessions themselves, before its pattern is globbed."""
    return STORES.get(agent.store, ())


def for_path(path: Path) -> LocalStore:
    """The store whose session ``path`` names: the first kind that owns it, else one file."""
    for kinds in STORES.values():
        for kind in kinds:
            if kind.owns(path):
                return kind
    return FILE
