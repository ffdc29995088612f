"""The rule catalogue: every rule of SPEC §3 with its words, example and source.

Data only. Each rule's page (``/rules/<ID>/``) renders one entry. The words
are here; the example histories (``example_before``, ``example_after`` and
``example_appended``) are data in ``rule_examples.json`` beside this module,
keyed by rule id and read once, when an example is first asked for. For the
repair rules, ``example_after`` is exactly what ``repair_history`` makes of
``example_before`` (with ``example_read_only`` as the read-only tools); for
the buffer rules (MEM-*), it is what ``Buffer(example_before)`` holds after
``example_appended`` is appended, message by message. A rule about how a
file is written (LINE-1) shows the file's lines instead:
``example_lines_after`` is what the Claude Code reader and writer make of
``example_lines_before``. The tests hold all three to that.
"""

from __future__ import annotations

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


RULES: dict[str, Rule] = {
    "MEM-3": Rule(
        id="MEM-3",
        spec="§5",
        title="A user turn heals tool calls that were never answered",
        summary=(
            "Before a user message is appended, every unanswered call gets a healed"
            " placeholder right after its turn."
        ),
        explanation=(
            "A crashed or interrupted agent loop can leave an assistant turn that"
            " asked for a tool with no result answering it, and most providers refuse"
            " the whole history with a 400 until that pair is closed. The buffer"
            " closes it at the one moment it is safe to: just before a user message"
            " is appended. Every call with no result anywhere in the buffer gets a"
            " tool message saying it was interrupted and returned nothing, marked"
            " healed, placed directly after the turn that made the call (not at the"
            " end, because a result must sit next to its call). Appending a tool or"
            " assistant message never heals."
        ),
        source="https://flowdrop.io/spec/rules/gr-mem/mem-3",
        related=("PAIR-1", "OUT-1", "MEM-10", "MEM-11"),
        other_sources=("seeds/000_2ae73882a5c611dc.txt",),
    ),
    "MEM-1": Rule(
        id="MEM-1",
        spec="§5",
        title=(
            "Appending a tool result twice appends it once (by call id); a healed"
            " placeholder is replaced instead"
        ),
        summary="A second result for a call that already has its real result is dropped.",
        explanation=(
            "Runtimes retry, replay and resume, so the same tool result is often"
            " appended twice. Kept twice, it answers one call with two results, which"
            " providers reject and which makes the model see the tool run twice. The"
            " buffer keys results by call id: a result whose call already has a real"
            " result is dropped; one whose call only has a healed placeholder takes"
            " the placeholder's place (MEM-10)."
        ),
        source="https://flowdrop.io/spec/rules/gr-mem/mem-1",
        related=("MEM-10", "MEM-11", "PAIR-3"),
    ),
    "MEM-2": Rule(
        id="MEM-2",
        spec="§5",
        title=(
            "An assistant turn is a duplicate only when every call id it declares is"
            " already in the buffer"
        ),
        summary=(
            "A replayed assistant turn whose calls are all known is dropped; one with"
            " any new call is kept."
        ),
        explanation=(
            "When a loop resumes it may append the assistant turn it already stored."
            " Kept, that turn declares the same call ids a second time, and the"
            " history has calls that no result can answer uniquely. The buffer drops"
            " an assistant turn only when every call id it declares is already there;"
            " a turn that declares at least one new id is new work and is appended."
        ),
        source="https://flowdrop.io/spec/rules/gr-mem/mem-2",
        related=("MEM-1", "MEM-11", "ID-1"),
    ),
    "MEM-10": Rule(
        id="MEM-10",
        spec="§5",
        title=(
            "A real result replaces the healed placeholder that stood in for it, in"
            " place, and loses the healed mark"
        ),
        summary=(
            "A late real result takes its placeholder's position; the healed mark"
            " goes with the placeholder."
        ),
        explanation=(
            "After a user turn healed a dangling call (MEM-3), the tool's real result"
            " can still arrive, for example when a slow tool finishes after the user"
            " spoke. Appended at the end, it would be a second result for the call"
            " and would sit far from it. The buffer puts the real result where the"
            " placeholder stood, so the call keeps exactly one result, next to it,"
            " and that result is not marked healed. A message that is itself marked"
            " healed never replaces anything."
        ),
        source="https://flowdrop.io/spec/rules/gr-mem/mem-10",
        related=("MEM-3", "MEM-1", "MEM-11"),
    ),
    "MEM-11": Rule(
        id="MEM-11",
        spec="§5",
        title=(
            "A call's id is read under either spelling (`tool_call_id` or the"
            " provider's flat `id`) by one definition"
        ),
        summary=(
            "`tool_call_id` and `id` name the same thing; one function reads both, everywhere."
        ),
        explanation=(
            "Providers spell a call's id differently: the canonical form uses"
            " `tool_call_id`, while some writers keep the provider's flat `id`. Code"
            " that reads one spelling in one place and the other elsewhere sees a"
            " call with no result, heals it, and ends up with two results for one"
            " call. Every rule here reads ids through one definition: `tool_call_id`"
            " when present and non-empty, else `id`."
        ),
        source="https://flowdrop.io/spec/rules/gr-mem/mem-11",
        related=("MEM-1", "MEM-2", "MEM-3"),
    ),
    "PAIR-1": Rule(
        id="PAIR-1",
        spec="§4, step 6",
        title=(
            "Every call gets exactly one result; a call with none in its span gets a synthetic one"
        ),
        summary=(
            "An unanswered call gets a result marked healed, saying the call was interrupted."
        ),
        explanation=(
            "A call with no result makes the next request fail: every provider"
            " requires each tool call to be answered before the conversation goes on."
            " This happens when a loop crashes, the user presses stop, or a scheduler"
            " fails between the call and its result. The repair adds one tool message"
            " for each call left unanswered in its span, right after the call, under"
            " the call's id, marked healed. It never claims the tool succeeded: it"
            " says the call was interrupted and returned no result (OUT-1). These"
            " calls are listed as interrupted, so a runtime can decide what to do"
            " about them."
        ),
        source="seeds/003_77183c0b9a196f46.txt",
        related=("OUT-1", "PAIR-2", "MEM-3", "PROV-ANTHROPIC", "PROV-OPENAI-CHAT"),
        other_sources=("seeds/002_8732f9eb135ad699.txt",),
    ),
    "PAIR-2": Rule(
        id="PAIR-2",
        spec="§4, steps 5 and 7",
        title=(
            "Results sit right after their calls, in call order; other messages of"
            " the span keep their order after them"
        ),
        summary=(
            "Results move up to follow their call in call order; steers and notes"
            " follow them in their own order."
        ),
        explanation=(
            "Providers want a call's results immediately after it. Real histories put"
            " other things in between: a user typing a steer while the tools ran,"
            " results that came back in the order the tools finished, a system"
            " message. Sent as is, that history is rejected. The repair moves each"
            " result up to just after its call, in the order the calls were made, and"
            " keeps everything else of the span, in its original order, after the"
            " results. Nothing is dropped; only the order changes."
        ),
        source="seeds/003_77183c0b9a196f46.txt",
        related=("PAIR-1", "PAIR-3", "PROV-GEMINI"),
    ),
    "PAIR-3": Rule(
        id="PAIR-3",
        spec="§4, step 5",
        title=(
            "A result with no call in its span, or a second result for an answered"
            " call, becomes a user note; images are kept"
        ),
        summary=(
            "A tool result that answers nothing is kept as a labelled user note, images and all."
        ),
        explanation=(
            "A tool result whose call is not in the turn before it (the call is"
            " missing, belongs to an earlier turn, or already has its result) is"
            " rejected by every provider. Dropping it would lose what the tool"
            " returned. The repair turns it into a user message that starts with a"
            " bracketed note naming the call id (`(no id)` for a result without"
            " one) and saying no matching call was found, followed by the original"
            " content, images included. The model still sees the output; the"
            " request is valid."
        ),
        source="seeds/003_77183c0b9a196f46.txt",
        related=("PAIR-2", "MEM-1", "PROV-OPENAI-CHAT", "PROV-RESPONSES"),
    ),
    "ID-1": Rule(
        id="ID-1",
        spec="§4, step 4",
        title=(
            "A repeated call id becomes `{id}_{k}`, the smallest free k ≥ 1; call and"
            " result together"
        ),
        summary="A call id used before gets a suffix; its result is renamed with it.",
        explanation=(
            "Some models restart their call ids every reply (Kimi writes"
            " `functions.search:0`, Gemini `call_0`), so a long history uses the same"
            " id many times. Anthropic and OpenAI Responses reject a repeated id, and"
            " any pairing by id becomes ambiguous. The repair keeps the first use and"
            " renames each later one to `{id}_{k}` with the smallest k not yet taken,"
            " on the call and on its result together. Only earlier calls count, so"
            " repairing a longer history never renames a call in the shorter one."
        ),
        source="seeds/003_77183c0b9a196f46.txt",
        related=("ID-2", "MEM-2", "PROV-ANTHROPIC", "PROV-RESPONSES"),
    ),
    "ID-2": Rule(
        id="ID-2",
        spec="§4, step 4",
        title="An empty call id becomes `call_{m}_{c}`",
        summary="A call without an id gets one made from its position: message m, call c.",
        explanation=(
            "Some writers leave call ids empty (Gemini does not use ids at all), and"
            " a provider that pairs by id cannot pair those calls with their results."
            " The repair gives each such call the id `call_{m}_{c}`, where m is the"
            " message's index in the input and c the call's index in that message,"
            " both from 0, counting calls removed as partial (INT-1) too: the same"
            " input always gives the same id, never a random one, and an id never"
            " depends on what follows. A result without an id takes the id of the"
            " first unanswered call that had none, with the same tool name where"
            " both record one."
        ),
        source="seeds/003_77183c0b9a196f46.txt",
        related=("ID-1", "PROV-GEMINI"),
    ),
    "ID-3": Rule(
        id="ID-3",
        # Not in the spec's table (it follows from §6): one of this project's own rules.
        spec="",
        title="An id a provider refuses is rewritten on export to that provider",
        summary=(
            "An id outside a provider's pattern (Anthropic) or over its length limit"
            " (OpenAI Chat: 40, Responses: 64) is sent to that provider under a new id,"
            " call and result alike."
        ),
        explanation=(
            "Some ids are fine for one provider and refused by another: Kimi's"
            " `functions.search:0` breaks Anthropic's `^[a-zA-Z0-9_-]+$`, and an id of"
            " more than 64 characters breaks Responses' limit on `call_id` (OpenAI Chat"
            " takes 40). Anthropic is said to take 64 (pi and LibreChat cut ids to 64 for"
            " it), but no recorded answer or quoted error shows it: its check does not"
            " refuse a longer id, and the export keeps to 64 all the same. Nothing in"
            " the history needs repair, yet that provider answers 400 to it as it is. The"
            " export to that provider rewrites each such id, in the call and in its"
            " result: the refused characters become `_`, and an id too long keeps its"
            " start and ends in `_` and 8 hex digits of a hash of the old id. The new id"
            " depends only on the old one (the same input always gives the same id, and"
            " a longer history gives the same ids to what it shares), with `_1`, `_2`..."
            " only where it would meet an id an earlier call already uses; a later call"
            " whose own id an earlier new id took is sent under a new id too. The"
            " timeline shows each"
            " rewritten id as a finding on the row of its call, so a verdict that changes"
            " between the history as uploaded and after repair always has its reason."
        ),
        source="https://docs.anthropic.com/en/docs/build-with-claude/tool-use",
        other_sources=(
            "https://platform.openai.com/docs/api-reference/responses/create",
            "https://github.com/openclaw/openclaw/pull/875",
            "https://github.com/earendil-works/pi/issues/7002",
        ),
        related=("ID-1", "ID-2", "PROV-ANTHROPIC", "PROV-OPENAI-CHAT", "PROV-RESPONSES"),
    ),
    "MSG-1": Rule(
        id="MSG-1",
        spec="§4, step 2",
        title="An assistant message with no calls and only whitespace is dropped",
        summary="A blank assistant placeholder is removed as if it were never there.",
        explanation=(
            "Some runtimes save an empty assistant message before the tools run, as a"
            " placeholder for the reply. Left in, it ends the span of the calls"
            " before it, so their results look like they belong to no call, and"
            " Anthropic rejects empty text outright. The repair drops an assistant"
            " message that has no calls and no content but whitespace, and treats the"
            " history as if it had never been there."
        ),
        source="seeds/003_77183c0b9a196f46.txt",
        related=("INT-1", "PAIR-3", "PROV-ANTHROPIC"),
    ),
    "INT-1": Rule(
        id="INT-1",
        spec="§4, step 1",
        title=("A partial tool call (arguments cut mid-stream) is removed; the prose stays"),
        summary=(
            "A call whose arguments stopped mid-string is removed; what the assistant said stays."
        ),
        explanation=(
            "When a stream is cut while the model is writing a call's arguments, the"
            ' stored call holds a fragment such as `{"project": "BIL` that is not a'
            " JSON object. It cannot be sent (providers require the arguments to be"
            " an object), and making it sendable would mean inventing the missing"
            " half and then a result for a call that never ran. The repair removes"
            " such a call when no result for it follows, keeps the prose the user"
            " already saw, and records that the turn was cut (INT-2). Empty"
            " arguments are not a fragment: an empty or all-whitespace string means"
            " no arguments, as `{}`, so that call is complete and is never removed."
        ),
        source="seeds/001_bfe4ee4a7f2df451.txt",
        related=("INT-2", "MSG-1", "PAIR-1"),
    ),
    "INT-2": Rule(
        id="INT-2",
        spec="§7",
        title="A turn that was cut carries an explicit interruption note",
        summary=(
            "After a cut turn, a bracketed note says which call was not completed and"
            " that the tool did not run."
        ),
        explanation=(
            "Once the partial call is removed, the turn looks like an ordinary turn"
            " that simply ended, and the model tends to assume the tool ran: it"
            " invents a ticket number or claims success. The repair adds one user"
            " message, bracketed and labelled as a system note, stating the negative"
            " fact: the turn was interrupted before its call to the named tool was"
            " complete and the tool was not run, with the cause where the transcript"
            " shows it. It goes right after the turn's results, or where the turn"
            " stood if nothing of it was left. A note already present is never added"
            " twice."
        ),
        source="seeds/001_bfe4ee4a7f2df451.txt",
        related=("INT-1", "OUT-1"),
    ),
    "OUT-1": Rule(
        id="OUT-1",
        spec="§4, step 6",
        title=(
            "A synthetic result says whether the tool may have run, and warns against blind retries"
        ),
        summary=(
            "A healed result never claims success: it says the tool may have run,"
            " only reads, or never started."
        ),
        explanation=(
            "A synthetic result is read by the model as the truth about the call."
            " Saying the tool failed, or succeeded, would be a false record, and a"
            " model told nothing tends to call the tool again, which can repeat a"
            " side effect such as a payment or a ticket. The text starts `Tool call"
            " was interrupted; no result.` and then says what is known: for a tool"
            " that only reads, that it is safe to call again; where the transcript"
            " proves the tool never started, that it had no effect (outcome"
            " `not_started`); otherwise, that the tool may have partly run and its"
            " effects should be checked before calling it again (outcome `unknown`)."
        ),
        source="seeds/002_8732f9eb135ad699.txt",
        related=("PAIR-1", "MEM-3", "INT-2"),
        example_read_only=("search",),
    ),
    "LINE-1": Rule(
        id="LINE-1",
        # Not in the spec: one of this project's own rules (docs/beyond-the-spec.md).
        spec="",
        title="Two records were written on one line",
        summary=(
            "A line held two or more records with no newline between them; each is read,"
            " and the repaired file writes each on a line of its own."
        ),
        explanation=(
            "Agent tools append one JSON record a line while they run. When a process"
            " is killed between a record and its newline, or two writers race, the"
            " next record lands on the same line, right after the first. A reader"
            " that parses each line on its own, as the tools do when they load a"
            " session, fails on that line and loses both records, or stops there."
            " The inspector reads every record of such a line and marks the line on"
            " the timeline. The repaired file puts the lost newline back: each record"
            " on a line of its own, its bytes unchanged, so the tool that wrote the"
            " file can load it again. Nothing else is added, and a file with no other"
            " problem still counts as needing repair."
        ),
        example_lines_before=(
            '{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user",'
            '"content":"run the tests"}}{"type":"assistant","uuid":"a1","parentUuid":"u1",'
            '"message":{"id":"m1","role":"assistant","content":[{"type":"text","text":'
            '"All 12 pass."}]}}',
            '{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user",'
            '"content":"thanks"}}',
        ),
        example_lines_after=(
            '{"type":"user","uuid":"u1","parentUuid":null,"message":{"role":"user",'
            '"content":"run the tests"}}',
            '{"type":"assistant","uuid":"a1","parentUuid":"u1","message":{"id":"m1",'
            '"role":"assistant","content":[{"type":"text","text":"All 12 pass."}]}}',
            '{"type":"user","uuid":"u2","parentUuid":"a1","message":{"role":"user",'
            '"content":"thanks"}}',
        ),
        source="https://jsonlines.org/",
        related=("PAIR-1", "INT-2"),
        other_sources=(
            "https://github.com/entireio/cli/blob/entire/checkpoints/v1/37/995ebed6e4/2/full.jsonl",
        ),
    ),
    "PROV-OPENAI-CHAT": Rule(
        id="PROV-OPENAI-CHAT",
        spec="§6",
        title="What OpenAI Chat Completions rejects, with the error text it returns",
        summary=(
            "Every assistant `tool_calls` entry needs a `role: tool` reply right"
            " after; a tool message needs its call."
        ),
        explanation=(
            "OpenAI Chat Completions checks the whole history on every request. An"
            " assistant message with `tool_calls` must be followed by tool messages"
            " answering each `tool_call_id`, and a tool message must answer a call in"
            " the assistant message before it. Either mistake fails the request with"
            " a 400 and nothing is generated. PAIR-1 closes unanswered calls, PAIR-2"
            " moves results next to their calls, and PAIR-3 turns stray results into"
            " notes, so the repaired history passes. A call id longer than 40"
            " characters is refused too (quoted in openclaw/openclaw#875,"
            " vercel/ai#8132 and microsoft/autogen#6377, ids another writer made);"
            " the export renames such ids (ID-3)."
        ),
        source="seeds/001_bfe4ee4a7f2df451.txt",
        related=("PAIR-1", "PAIR-2", "PAIR-3"),
        other_sources=("https://platform.openai.com/docs/guides/function-calling",),
        errors=ERROR_TEXTS["openai-chat"],
    ),
    "PROV-ANTHROPIC": Rule(
        id="PROV-ANTHROPIC",
        spec="§6",
        title="What Anthropic Messages rejects, with the error text it returns",
        summary=(
            "`tool_use` needs a `tool_result` in the very next message; ids unique"
            " and plain; input an object; no empty text."
        ),
        explanation=(
            "The Anthropic Messages API requires each `tool_use` block to be answered"
            " by a `tool_result` block in the next message, each `tool_result` to"
            " answer a `tool_use` in the message before, tool ids to be unique and to"
            " match `^[a-zA-Z0-9_-]+$`, `tool_use.input` to be an object, and text"
            " blocks to be non-empty. A history that breaks any of these fails with a"
            " 400 on every later turn, which is why one interrupted call can end a"
            " whole conversation. The PAIR, ID, MSG and INT rules together produce a"
            " history that passes; ids outside the pattern are mapped when exporting"
            " to this shape."
        ),
        source="seeds/001_bfe4ee4a7f2df451.txt",
        related=("PAIR-1", "PAIR-3", "ID-1", "MSG-1", "INT-1"),
        other_sources=("https://docs.anthropic.com/en/docs/build-with-claude/tool-use",),
        errors=ERROR_TEXTS["anthropic"],
        claims=(
            (
                "Text after a `tool_use` block in the same assistant message is refused.",
                "LiteLLM's Anthropic transformation says so; no recorded answer shows it.",
            ),
            (
                "Call ids over 64 characters are refused (the export still keeps to 64).",
                "pi and LibreChat cut ids to 64 for Anthropic; no recorded answer or quoted"
                " error text shows a refusal.",
            ),
        ),
    ),
    "PROV-RESPONSES": Rule(
        id="PROV-RESPONSES",
        spec="§6",
        title="What OpenAI Responses rejects, with the error text it returns",
        summary=(
            "Every `function_call` needs a `function_call_output` with its `call_id`,"
            " and the reverse."
        ),
        explanation=(
            "The OpenAI Responses API takes the history as input items. Each"
            " `function_call` item must have a `function_call_output` with the same"
            " `call_id`, and each output must have its call; a repeated `call_id`"
            " makes the pairing ambiguous. A history that breaks this fails with a"
            " 400. PAIR-1 answers missing outputs, PAIR-3 turns outputs without a"
            " call into notes, and ID-1 and ID-2 make every `call_id` unique and"
            " non-empty."
        ),
        source="seeds/001_bfe4ee4a7f2df451.txt",
        related=("PAIR-1", "PAIR-3", "ID-1", "ID-2"),
        other_sources=("https://platform.openai.com/docs/guides/function-calling",),
        errors=ERROR_TEXTS["responses"],
    ),
    "PROV-GEMINI": Rule(
        id="PROV-GEMINI",
        spec="§6",
        title="What Gemini rejects, with the error text it returns",
        summary=(
            "A function call turn needs exactly as many function responses as calls,"
            " and must follow a user or response turn."
        ),
        explanation=(
            "Gemini pairs function calls and responses by position and name, mostly"
            " without ids. The turn after a function call turn must hold exactly one"
            " `functionResponse` part per `functionCall` part, and a function call"
            " turn must come right after a user turn or a function response turn. A"
            " history that breaks either fails with a 400. PAIR-1 supplies the"
            " missing responses, PAIR-2 puts them in call order, and ID-2 gives the"
            " calls ids so other providers can read the repaired history too."
        ),
        source="seeds/001_bfe4ee4a7f2df451.txt",
        related=("PAIR-1", "PAIR-2", "ID-2"),
        other_sources=("https://ai.google.dev/gemini-api/docs/function-calling",),
        errors=ERROR_TEXTS["gemini"],
    ),
}
