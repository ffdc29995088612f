"""The repair engine: SPEC.md §3-§5 in plain Python (standard library and orjson only).

>>> from inspector.engine import repair_history, Buffer, RULES
"""

from inspector.engine.buffer import Buffer
from inspector.engine.canonical import call_id
from inspector.engine.errors import InvalidTranscript
from inspector.engine.repair import Action, Repair, repair_history
from inspector.engine.rules import RULES, Rule

__all__ = [
    "RULES",
    "Action",
    "Buffer",
    "InvalidTranscript",
    "Repair",
    "Rule",
    "call_id",
    "repair_history",
]
