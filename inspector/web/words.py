"""The rules in the words a person reads: what went wrong, what the repair did, what to do.

The catalogue (``inspector.engine.rules``) keeps the spec's own titles, the
tests hold them to the spec's table; pages lead with these instead and give
the spec's title beside them. The spec's terms that a page cannot avoid are
explained where they appear (``TERMS``), and every source is named in words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from inspector.engine.rules import Rule


@dataclass(frozen=True, slots=True)
class Plain:
    title: str
    wrong: str  # what went wrong
    repair: str  # what the repair does (or, for a buffer rule, what the buffer does)
    todo: str  # what the reader should do


PLAIN: dict[str, Plain] = {
    "LINE-1": Plain(
        "Two records were written on one line",
        "A newline was lost while the file was written, so one line holds two records back to "
        "back. Tools that read the file line by line skip or refuse that line.",
        "Both records are read as they are, and the repaired file writes each on a line of its "
        "own, its bytes unchanged; nothing else in the file is touched.",
        "Use the repaired file; nothing is lost, so there is nothing to check.",
    ),
    "ID-3": Plain(
        "A call id one provider refuses",
        "The id is fine for the tool that wrote it, but a provider's rules for ids (Anthropic's "
        "letters, digits, - and _; OpenAI Chat's 40 characters, Responses' 64) refuse it.",
        "The export to that provider sends the call and its result under a new id, always the "
        "same one for the same history; the file itself keeps the old id.",
        "Nothing to do: send the exported history to that provider as it is.",
    ),
    "PAIR-1": Plain(
        "A tool call never got its result",
        "The agent asked for a tool and the session stopped (a crash, a stop, a cut stream) "
        "before the result was written. Providers refuse such a history with a 400.",
        "A result is added right after the call saying the call was interrupted and whether "
        "the tool may have run. It never claims the tool succeeded.",
        "Resume from the repaired file; if the tool changes things (writes a file, sends a "
        "message), check whether it ran before letting the agent call it again.",
    ),
    "PAIR-2": Plain(
        "A result was out of place",
        "A tool result was not right after its call: something else (a user message, another "
        "result) came between, or the results were in another order than the calls.",
        "The results move up to follow their call, in the order the calls were made; the "
        "messages that came between keep their order after them. Nothing is removed.",
        "Nothing: the repaired file has every message, in an order providers accept.",
    ),
    "PAIR-3": Plain(
        "A result answered no call",
        "A tool result named a call that is not in its turn, or answered a call a second time.",
        "The result is kept, as a note from the user that quotes it (images and all), so the "
        "model still sees it and nothing is lost.",
        "Nothing, unless the stray result points at a bug in the tool that wrote the session.",
    ),
    "ID-1": Plain(
        "Two calls had the same id",
        "A call id was used again by a later call, so a result cannot say which call it answers. "
        "Some models restart their numbering every reply.",
        "The later call and its result get a new id: the old one with _1 (or the next free "
        "number) added.",
        "Nothing: the ids only link calls to results.",
    ),
    "ID-2": Plain(
        "A call had no id",
        "A tool call was saved without an id, so no result can name it.",
        "It gets an id made from where it stands (call_<message>_<call>), on the call and on "
        "its result.",
        "Nothing.",
    ),
    "MSG-1": Plain(
        "A blank assistant message",
        "An empty assistant message (saved as a placeholder before the tools ran) sits in the "
        "history. Providers refuse empty messages.",
        "It is removed, as if it had never been written.",
        "Nothing.",
    ),
    "INT-1": Plain(
        "A tool call was cut off mid-arguments",
        "The reply stopped while the model was still writing a call's arguments, so the call is "
        "not valid JSON and cannot have run.",
        "The partial call is removed; whatever the assistant had said before it stays.",
        "Ask the agent to carry on: it will make the call again, whole.",
    ),
    "INT-2": Plain(
        "An interrupted turn is marked as interrupted",
        "A turn was cut short, and without a word about it the model takes it for finished.",
        "A short note is added after the cut turn saying which call did not complete and that "
        "the tool did not run.",
        "Nothing: the note tells the model what happened.",
    ),
    "OUT-1": Plain(
        "An added result says what may have happened",
        "A result added for an unanswered call could read as success, and the agent would go "
        "on as if the tool had run.",
        "Every added result says whether the tool may have run, only read, or never started, "
        "and warns against calling it again blindly.",
        "Check tools that change things before calling them again.",
    ),
    "MEM-3": Plain(
        "A new user message closes calls left unanswered",
        "A call with no result stays open while the conversation goes on.",
        "Just before the next user message is stored, each such call gets a result saying it "
        "was interrupted, right after its call.",
        "Nothing: this is how the stored history stays valid.",
    ),
    "MEM-1": Plain(
        "The same result stored twice is kept once",
        "Retries and resumes store a tool's result again.",
        "A second result for a call that already has one is dropped; one that arrives after "
        "an added 'interrupted' result takes its place.",
        "Nothing.",
    ),
    "MEM-2": Plain(
        "A replayed assistant message is kept once",
        "A resumed loop can store the same assistant message again, with the same calls.",
        "It is dropped when every call in it is already stored; any new call keeps it.",
        "Nothing.",
    ),
    "MEM-10": Plain(
        "A late real result replaces the added one",
        "A real result arrives after an 'interrupted' result was added for its call.",
        "The real result takes the added one's place, and the mark that said it was added goes.",
        "Nothing.",
    ),
    "MEM-11": Plain(
        "A call id is read the same way everywhere",
        "Formats spell a call's id differently (tool_call_id or id).",
        "One reading of the id is used for every check and repair.",
        "Nothing.",
    ),
}

PROVIDER_WORDS = {
    "PROV-OPENAI-CHAT": "What OpenAI Chat Completions refuses",
    "PROV-ANTHROPIC": "What Anthropic Messages refuses",
    "PROV-RESPONSES": "What OpenAI Responses refuses",
    "PROV-GEMINI": "What Gemini refuses",
}

# The spec's words a page cannot always avoid, said plainly.
TERMS: dict[str, str] = {
    "span": "a span is an assistant message that calls tools and the messages after it, up to "
    "the next assistant message: where that call's results belong",
    "turn": "a turn is one message and what it asks for: an assistant turn with tool calls is "
    "answered by the results after it",
    "healed": "healed marks a result the repair added for a call that never got one",
    "placeholder": "a placeholder is a result (or a blank message) saved in place of one that "
    "never came",
    "buffer": "the buffer is the stored conversation as the agent's runtime keeps it and adds to "
    "it, message by message",
    "synthetic": "a synthetic result is one the repair wrote, not the tool",
    "canonical": "canonical is the spec's own plain message list (role, content, metadata), which "
    "every format is read into",
}
_TERM = {term: re.compile(rf"\b{term}s?\b", re.I) for term in TERMS}

_SEED_NAMES = {
    "000": "the FlowDrop specification's rule MEM-3",
    "001": "the guide “Persisting an interrupted turn”",
    "002": "the note “Record unanswered tool results before closing a failed step”",
    "003": "the documentation of repairHistory, the reference repair",
}
_SITES = {
    "https://flowdrop.io/": "the FlowDrop specification",
    "https://platform.openai.com/": "OpenAI's function-calling guide",
    "https://docs.anthropic.com/": "Anthropic's tool-use guide",
    "https://ai.google.dev/": "Google's Gemini function-calling guide",
}


def title(rule: Rule | None, rule_id: str) -> str:
    """The rule's title in plain words (the spec's own title when there is none)."""
    if rule_id in PLAIN:
        return PLAIN[rule_id].title
    if rule_id in PROVIDER_WORDS:
        return PROVIDER_WORDS[rule_id]
    return rule.title if rule is not None else ""


def terms_in(*texts: str) -> list[tuple[str, str]]:
    """The spec's terms these texts use, each with what it means."""
    joined = " ".join(texts)
    return [(term, TERMS[term]) for term, pattern in _TERM.items() if pattern.search(joined)]


def source_words(source: str) -> str:
    """Where a rule comes from, named in words."""
    if source.startswith("seeds/"):
        number = source.removeprefix("seeds/")[:3]
        return _SEED_NAMES.get(number, f"seed document {source.removeprefix('seeds/')}")
    for prefix, words in _SITES.items():
        if source.startswith(prefix):
            return words
    return source
