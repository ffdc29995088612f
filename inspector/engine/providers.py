"""What each provider rejects in a history, with the error text it sends back (SPEC §6).

One validator per provider, each taking that provider's own wire shape: the
request body (``{"messages": ...}``, ``{"input": ...}``, ``{"contents": ...}``)
or just the list inside it. ``check`` gives the verdict: ``accepted``,
``rejected`` with the problems in list order (every one with the index the
provider uses, ``index`` as an int, ``path`` the way the error names it,
``messages.3`` or ``messages.3.content.1``, and the text the provider returns
for it), or ``cannot_tell`` with the reason, for a body whose history is
partly stored on the provider's side. A verdict also carries notes on what
was not checked (an item of a kind no check knows). ``validate`` gives the
problems alone.

The texts are module constants so the rules catalogue can quote the same
words. They are the providers' own wording as seen in real 400 responses
(the oracle under ``tests/data/oracle`` and public issues), except those
marked *ours*: no public record of the provider's text for that case was
found, so the wording is the inspector's and says the same thing.

What the providers do, as the recorded answers show it:

- Anthropic and Gemini merge consecutive messages (turns) of one role before
  they pair calls with results: two assistant messages in a row are one turn,
  answered by the user message after the second. Problems keep the index of
  the message as sent (the first of a merged run for what concerns the run).
- A key present with a null value is absent (``"functionCall": null``).
- Anthropic ids are unique within a turn; a later turn may use an id again
  (the recorded answers accept it; repair still renames it, ID-1).
- Responses pairs every kind of client call item with its output kind;
  items the provider ran itself (``execution: "server"``, a null
  ``call_id``, ``web_search_call``, ``mcp_call``...) need no output.

Pure: this module imports nothing from ``inspector.formats``; converting a
canonical history to a wire shape is the formats' job (``to_wire``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PROVIDERS = ("openai-chat", "anthropic", "responses", "gemini")

# The three verdicts.
ACCEPTED = "accepted"
REJECTED = "rejected"
CANNOT_TELL = "cannot_tell"

# A note for an item (message, block, part) of a kind no check here knows.
UNKNOWN_KIND = "not checked: unknown item kind {kind}"

# Anthropic Messages API (invalid_request_error messages).
ANTHROPIC_MISSING_RESULT = (
    "messages.{N}: `tool_use` ids were found without `tool_result` blocks immediately after:"
    " {ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next"
    " message."
)
ANTHROPIC_UNEXPECTED_RESULT = (
    "messages.{N}.content.{M}: unexpected `tool_use_id` found in `tool_result` blocks: {id}."
    " Each `tool_result` block must have a corresponding `tool_use` block in the previous"
    " message."
)
# Quoted in public issues (e.g. anthropics/claude-code#37, apify/tester-mcp-client#12).
ANTHROPIC_RESULTS_NOT_FIRST = (
    "messages.{N}: Did not find {count} `tool_result` block(s) at the beginning of this message."
    " Messages following `tool_use` blocks must begin with a matching number of `tool_result`"
    " blocks."
)
ANTHROPIC_DUPLICATE_ID = "messages.{N}.content.{M}: `tool_use` ids must be unique"
ANTHROPIC_EMPTY_TEXT = "messages: text content blocks must be non-empty"
ANTHROPIC_WHITESPACE_TEXT = "messages: text content blocks must contain non-whitespace text"
# Quoted in public issues (NousResearch/hermes-agent#1216, anthropics/claude-code#57573).
ANTHROPIC_CACHED_EMPTY_TEXT = (
    "messages.{N}.content.{M}.text: cache_control cannot be set for empty text blocks"
)
# Quoted in public issues (anomalyco/opencode#1295, tailcallhq/forgecode#1872): an
# assistant message last in ``messages`` (a prefill) whose text ends in whitespace.
ANTHROPIC_TRAILING_WHITESPACE = (
    "messages: final assistant content cannot end with trailing whitespace"
)
# Extended thinking, quoted in public issues: a block without its fields
# (justlovemaki/AIClient2API#437, lbjlaq/Antigravity-Manager#1650, LibreChat-AI/agents#279);
# thinking in the last message (a prefill) when the body does not enable it
# (tailcallhq/forgecode#1853, #1195), or as its last block (forgecode#2107,
# router-for-me/CLIProxyAPI#5321); with thinking on, the turn a request continues
# (the assistant's since the user last wrote more than tool results) not starting with
# thinking (deepset-ai/haystack-core-integrations#2146, mastra-ai/mastra#7799).
ANTHROPIC_THINKING_FIELD = "messages.{N}.content.{M}.thinking.{field}: Field required"
ANTHROPIC_THINKING_WHEN_DISABLED = (
    "messages.{N}.content.{M}: When thinking is disabled, an `assistant` message in the final"
    " position cannot contain `thinking`. To use thinking blocks, enable `thinking` in your"
    " request."
)
ANTHROPIC_THINKING_LAST = (
    "messages.{N}: The final block in an assistant message cannot be `thinking`."
)
ANTHROPIC_THINKING_FIRST = (
    "messages.{N}.content.0.type: Expected `thinking` or `redacted_thinking`, but found"
    " `{found}`. When `thinking` is enabled, a final `assistant` message must start with a"
    " thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We"
    " recommend you include thinking blocks from previous turns. To avoid this requirement,"
    " disable `thinking`. Please consult our documentation at"
    " https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
# Anthropic's thinking block types (read by its export and the skeleton bodies too). A
# tuple: a block's type may be any JSON value, and ``in`` on a tuple hashes nothing.
ANTHROPIC_THINKING = ("thinking", "redacted_thinking")
ANTHROPIC_EMPTY_CONTENT = (
    "messages.{N}: all messages must have non-empty content except for the optional final"
    " assistant message"
)
ANTHROPIC_ID_PATTERN = "^[a-zA-Z0-9_-]+$"
ANTHROPIC_BAD_ID = (
    "messages.{N}.content.{M}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
)
ANTHROPIC_BAD_RESULT_ID = (
    "messages.{N}.content.{M}.tool_result.tool_use_id: String should match pattern"
    " '^[a-zA-Z0-9_-]+$'"
)
ANTHROPIC_INPUT_NOT_OBJECT = (
    "messages.{N}.content.{M}.tool_use.input: Input should be a valid dictionary"
)
# The id prefix of a tool the provider runs itself (web search, code execution...): its
# result is a ``*_tool_result`` block of the same assistant message, never a client
# ``tool_result`` (a replayed ``tool_use`` so answered is refused as unanswered).
ANTHROPIC_SERVER_ID_PREFIX = "srvtoolu_"

# OpenAI Chat Completions. "preceeding" is their spelling.
OPENAI_MISSING_RESULT = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to"
    " each 'tool_call_id'. The following tool_call_ids did not have response messages: {ids}"
)
OPENAI_ORPHAN_RESULT = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message"
    " with 'tool_calls'."
)
# Not what the API answers for a second result of one call: the recorded answer to that
# is OPENAI_ORPHAN_RESULT (tests/data/oracle/openai-chat/manual__langchain_..._duplicate).
OPENAI_DUPLICATE_RESULT = (
    "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{first}]"
    " and messages[{second}]."
)
# Ours: two calls of one assistant message sharing an id.
OPENAI_DUPLICATE_CALL_ID = (
    "Invalid parameter: Duplicate value for 'tool_calls[{M}].id' of '{id}' in messages[{N}]."
)
OPENAI_ARGUMENTS_NOT_STRING = (
    "Invalid type for 'messages[{N}].tool_calls[{M}].function.arguments': expected a string,"
    " but got {kind} instead."
)
# Quoted in public issues: openai/openai-node#1341 (by the SDK's maintainer),
# langchain-ai/langchainjs#6570 and open-compass/T-Eval#66.
OPENAI_EMPTY_TOOL_CALLS = (
    "Invalid 'messages[{N}].tool_calls': empty array. Expected an array with minimum length 1,"
    " but got an empty array instead."
)
# Quoted in public issues (openclaw/openclaw#875, vercel/ai#8132, microsoft/autogen#6377,
# Portkey-AI/gateway#1062, langmanus/langmanus#119): an id another writer made, such as
# Responses' ``call_id|item_id`` pairs or a gateway's uuid-based ids.
OPENAI_CALL_ID_MAX = 40
OPENAI_CALL_ID_TOO_LONG = (
    "Invalid 'messages[{N}].tool_calls[{M}].id': string too long. Expected a string with"
    " maximum length 40, but got a string with length {length} instead."
)
# The longest call id each provider's check takes (a recorded answer or a quoted error
# text says so for each); a longer one is refused.
CALL_ID_MAX: dict[str, int] = {"openai-chat": OPENAI_CALL_ID_MAX, "responses": 64}
OPENAI_FUNCTION_WITHOUT_NAME = (
    "Missing parameter 'name': messages with role 'function' must have a 'name'."
)

# OpenAI Responses. {kind} is the item kind in words: "function call", "local shell
# call" (the wording recorded for those two; the other kinds follow the same pattern).
RESPONSES_MISSING_OUTPUT = "No tool output found for {kind} {id}."
RESPONSES_ORPHAN_OUTPUT = "No tool call found for {kind} output with call_id {id}."
RESPONSES_DUPLICATE_ITEM = (
    "Duplicate item found with id {id}. Remove duplicate items from your input and try again."
)
# Ours: two call items sharing a call_id.
RESPONSES_DUPLICATE_CALL_ID = "Duplicate call_id found in input: {id}."
RESPONSES_REASONING_ALONE = (
    "Item '{id}' of type 'reasoning' was provided without its required following item."
)
RESPONSES_CALL_ID_MAX = 64
RESPONSES_CALL_ID_TOO_LONG = (
    "Invalid 'input[{N}].call_id': string too long. Expected a string with maximum length 64,"
    " but got a string with length {length} instead."
)
# Quoted in public issues (jlcodes99/cockpit-tools#2090, BigPizzaV3/CodexPlusPlus#1796,
# openai/codex#33176; code ``invalid_id_prefix``): an item id of another writer's making.
RESPONSES_ID_PREFIX = "Invalid 'input[{N}].id': '{id}'. Expected an ID that begins with '{prefix}'."
RESPONSES_ID_PREFIXES = {"reasoning": "rs", "function_call": "fc", "message": "msg"}
RESPONSES_STATEFUL = (
    "the request continues a history the provider stores ({key} {value}): calls, outputs and"
    " items kept there are not in the body, so the body alone cannot tell whether the"
    " provider accepts it"
)

# Gemini generateContent (INVALID_ARGUMENT messages).
GEMINI_COUNT_MISMATCH = (
    "Please ensure that the number of function response parts is equal to the number of"
    " function call parts of the function call turn."
)
GEMINI_CALL_TURN_PLACEMENT = (
    "Please ensure that function call turn comes immediately after a user turn or after a"
    " function response turn."
)
GEMINI_RESPONSE_TURN_PLACEMENT = (
    "Please ensure that function response turn comes immediately after a function call turn."
)
GEMINI_MIXED_TURN = (
    "Please ensure that function call turn contains at least one function_call part which can"
    " not be mixed with function_response parts."
)
# A turn with no parts (missing or an empty list), e.g. one whose only parts were another
# provider's reasoning. The API refuses it with 400 INVALID_ARGUMENT and names the turn by
# its proto path (reported verbatim in vercel/ai#3775, langchain-ai/langchain-google#691).
GEMINI_EMPTY_PARTS = (
    "* GenerateContentRequest.contents[{N}].parts: contents.parts must not be empty."
)
# Gemini 3 models refuse a function call of the current turn (since the last user turn
# that is not function responses) whose step does not carry its thoughtSignature; the
# first call part of a step carries it. Position is the turn's place in contents, from 1.
GEMINI_MISSING_SIGNATURE = (
    "Function call is missing a thought_signature in functionCall parts. This is required for"
    " tools to work correctly, and missing thought_signature may lead to degraded model"
    " performance. Additional data, function call `default_api:{name}` , position {position}."
    " Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more"
    " details."
)
GEMINI_SIGNATURE_UNCHECKED = (
    "not checked: thoughtSignature on the current turn's function calls (Gemini 3 models"
    " require it; the body does not name its model)"
)
# Quoted in public issues (the-open-agent/openagent#1666, songquanpeng/one-api#1385): a
# content whose role is neither, as ``assistant`` or ``system``.
GEMINI_BAD_ROLE = "Please use a valid role: user, model."
# The roles a content may take: the two the error names, ``function`` (the older API's,
# still answered by the recorded requests) and ``tool`` (reported to work,
# googleapis/python-genai#81).
_GEMINI_ROLES = frozenset({"user", "model", "function", "tool"})
_SIGNING_MODEL = re.compile(r"gemini-[3-9]")

# Every text each check reports a problem with, as the rule pages quote them
# (``rules.PROV-*``): ``{N}``/``{M}`` the indices, ``{id}``/``{ids}`` the ids, and
# the other fields shown as an example.
_EXAMPLE = {
    "kind": "function call",
    "count": "1",
    "length": "L",
    "prefix": "fc",
    "name": "f",
    "position": "2",
}


def _shown(*texts: str) -> tuple[str, ...]:
    keep = {key: "{" + key + "}" for key in ("N", "M", "id", "ids")}
    return tuple(text.format_map(keep | _EXAMPLE) for text in texts)


ERROR_TEXTS = {
    "openai-chat": _shown(
        OPENAI_MISSING_RESULT,
        OPENAI_ORPHAN_RESULT,
        OPENAI_DUPLICATE_CALL_ID,
        OPENAI_ARGUMENTS_NOT_STRING.replace("{kind}", "an object"),
        OPENAI_EMPTY_TOOL_CALLS,
        OPENAI_FUNCTION_WITHOUT_NAME,
        OPENAI_CALL_ID_TOO_LONG,
    ),
    "anthropic": _shown(
        ANTHROPIC_MISSING_RESULT,
        ANTHROPIC_UNEXPECTED_RESULT,
        ANTHROPIC_RESULTS_NOT_FIRST,
        ANTHROPIC_DUPLICATE_ID,
        ANTHROPIC_EMPTY_TEXT,
        ANTHROPIC_WHITESPACE_TEXT,
        ANTHROPIC_CACHED_EMPTY_TEXT,
        ANTHROPIC_EMPTY_CONTENT,
        ANTHROPIC_TRAILING_WHITESPACE,
        ANTHROPIC_BAD_ID,
        ANTHROPIC_BAD_RESULT_ID,
        ANTHROPIC_INPUT_NOT_OBJECT,
        ANTHROPIC_THINKING_FIELD.replace("{field}", "signature"),
        ANTHROPIC_THINKING_WHEN_DISABLED,
        ANTHROPIC_THINKING_LAST,
        ANTHROPIC_THINKING_FIRST.replace("{found}", "tool_use"),
    ),
    "responses": _shown(
        RESPONSES_MISSING_OUTPUT,
        RESPONSES_ORPHAN_OUTPUT,
        RESPONSES_DUPLICATE_ITEM,
        RESPONSES_DUPLICATE_CALL_ID,
        RESPONSES_REASONING_ALONE,
        RESPONSES_CALL_ID_TOO_LONG,
        RESPONSES_ID_PREFIX,
    ),
    "gemini": _shown(
        GEMINI_COUNT_MISMATCH,
        GEMINI_CALL_TURN_PLACEMENT,
        GEMINI_RESPONSE_TURN_PLACEMENT,
        GEMINI_MIXED_TURN,
        GEMINI_EMPTY_PARTS,
        GEMINI_MISSING_SIGNATURE,
        GEMINI_BAD_ROLE,
    ),
}

_ANTHROPIC_ID = re.compile(ANTHROPIC_ID_PATTERN)

# The kinds each check knows; anything else is noted, not checked.
_OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_ANTHROPIC_BLOCKS = frozenset(
    {
        "text",
        "image",
        "document",
        "search_result",
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "mcp_tool_use",
        "mcp_tool_result",
        "container_upload",
        "tool_reference",
        "tool_addition",
    }
)
# Client call items and the output kind that answers each.
RESPONSES_CALLS = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "computer_call": "computer_call_output",
    "local_shell_call": "local_shell_call_output",
    "shell_call": "shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "tool_search_call": "tool_search_output",
}
RESPONSES_OUTPUTS = {output: call for call, output in RESPONSES_CALLS.items()}
# Items the provider ran itself, and the other items the model makes.
RESPONSES_SERVER_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
    }
)
_RESPONSES_OTHER = frozenset(
    {"message", "reasoning", "item_reference", "compaction", "mcp_approval_response"}
) | {"additional_tools"}
_GEMINI_PARTS = frozenset(
    {
        "text",
        "inlineData",
        "fileData",
        "functionCall",
        "functionResponse",
        "executableCode",
        "codeExecutionResult",
        "thought",
        "thoughtSignature",
        "videoMetadata",
        "partMetadata",
        "mediaResolution",
        "toolCall",
        "toolResponse",
    }
)
# Gemini reads proto JSON, which takes snake_case field names too: the parts' that the
# guard spells in camelCase before it repairs a body (``guard._CAMEL``), and the newer ones.
GEMINI_SNAKE_PARTS = {
    "function_call": "functionCall",
    "function_response": "functionResponse",
    "thought_signature": "thoughtSignature",
    "inline_data": "inlineData",
    "file_data": "fileData",
    "executable_code": "executableCode",
    "code_execution_result": "codeExecutionResult",
    "video_metadata": "videoMetadata",
}
_GEMINI_SNAKE = {
    **GEMINI_SNAKE_PARTS,
    "part_metadata": "partMetadata",
    "media_resolution": "mediaResolution",
    "tool_call": "toolCall",
    "tool_response": "toolResponse",
}


@dataclass(frozen=True, slots=True)
class ProviderProblem:
    """One thing a provider would reject.

    ``index`` is the position in the provider's list (``messages``, ``input``
    or ``contents``); ``path`` names it the way the provider does; ``code``
    is a short stable id for the kind of problem; ``ids`` the call ids
    involved.
    """

    provider: str
    index: int
    path: str
    text: str
    code: str
    ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a provider would answer to a body.

    ``state`` is ``ACCEPTED``, ``REJECTED`` (``problems`` says why, never
    empty) or ``CANNOT_TELL`` (``reason`` says why: part of the history is
    not in the body). ``notes`` name what the check could not look at.
    """

    provider: str
    state: str
    problems: tuple[ProviderProblem, ...] = ()
    reason: str = ""
    notes: tuple[str, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.state == ACCEPTED

    @property
    def rejected(self) -> bool:
        return self.state == REJECTED


class _Findings:
    """What one check finds: problems, notes, and why it cannot tell (if it cannot)."""

    __slots__ = ("notes", "problems", "provider", "undecided")

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.problems: list[ProviderProblem] = []
        self.notes: dict[str, None] = {}
        self.undecided = ""

    def add(self, index: int, path: str, text: str, code: str, ids: tuple[str, ...] = ()) -> None:
        self.problems.append(ProviderProblem(self.provider, index, path, text, code, ids))

    def unknown(self, kind: Any) -> None:
        self.notes[UNKNOWN_KIND.format(kind=_text(kind) or "(none)")] = None

    def verdict(self) -> Verdict:
        problems = tuple(sorted(self.problems, key=_by_index))
        notes = tuple(self.notes)
        if problems:
            return Verdict(self.provider, REJECTED, problems, "", notes)
        if self.undecided:
            return Verdict(self.provider, CANNOT_TELL, (), self.undecided, notes)
        return Verdict(self.provider, ACCEPTED, (), "", notes)


def _by_index(problem: ProviderProblem) -> int:
    return problem.index


def responses_kind_known(kind: Any) -> bool:
    """Whether the Responses check reads items of this ``type`` (else it notes ``UNKNOWN_KIND``)."""
    return kind in (None, "message", "reasoning") or (
        isinstance(kind, str)
        and (
            kind in RESPONSES_CALLS
            or kind in RESPONSES_OUTPUTS
            or kind in RESPONSES_SERVER_ITEMS
            or kind in _RESPONSES_OTHER
        )
    )


def check(provider: str, wire: Any, *, model: str | None = None) -> Verdict:
    """The verdict ``provider`` would give ``wire`` (its request body or list).

    ``model`` names the model where the body does not (Gemini's is in the
    URL); a body's own ``model`` is read too.
    """
    return _check_from(provider, wire, 0, model)


def validate(provider: str, wire: Any) -> list[ProviderProblem]:
    """Check ``wire`` (that provider's request body or list) as ``provider`` would.

    The problems of ``check``'s verdict: none for a body it accepts or cannot
    tell about.
    """
    return list(_check_from(provider, wire, 0, None).problems)


def _validate_from(provider: str, wire: Any, start: int) -> list[ProviderProblem]:
    """``validate``, skipping the items before ``start``: for the skeleton bodies only.

    The precondition, which ``inspector.diagnosis._skeleton.quiet_body`` meets
    and nothing else is known to: the provider accepts the body cut at
    ``start``, its last item before the cut is an assistant's reply with no
    calls, and no id before the cut is used after it. Problems keep the body's
    own indices.
    """
    return list(_check_from(provider, wire, start, None).problems)


def local_cut(provider: str, wire: Any, start: int, *, model: str | None = None) -> bool:
    """Whether no check of ``provider`` looks across the cut of ``wire``'s list before
    ``start``, which holds a model item (an ``assistant`` message, a ``model`` content).

    Then the verdict on the list's first ``start`` items has exactly the problems the
    verdict on the whole has before ``start``, and the whole's problems from ``start``
    on are ``check_after``'s: a body of which that start is accepted is accepted when
    what follows is. Chat pairs calls with the tool messages right after them, so no
    assistant message is looked across. Anthropic and Gemini merge a role's messages
    into turns: the item before ``start`` must be a user's (for Gemini a function
    response turn too), and a rule that walks back from the end must stop there:
    Anthropic's thinking-first rule (thinking on) at a user message of more than tool
    results, Gemini 3's thoughtSignature rule (a model that signs) at a user content
    with a part of the user's own. Responses pairs an output with its call anywhere
    before it: not a cut of this kind (``False``).
    """
    items = _items(wire, HISTORY_KEY[provider]) if provider in HISTORY_KEY else []
    if not 0 < start < len(items) or not isinstance(items[start], dict):
        return False
    role = items[start].get("role")
    if provider == "openai-chat":
        return bool(role == "assistant")
    before = items[start - 1]
    if not isinstance(before, dict):
        return False
    if provider == "anthropic":
        if role != "assistant" or before.get("role") != "user":
            return False
        setting = wire.get("thinking") if isinstance(wire, dict) else None
        enabled = isinstance(setting, dict) and setting.get("type") in ("enabled", "adaptive")
        return not enabled or not _only_results(before.get("content"))
    if provider != "gemini" or role != "model" or before.get("role") not in ("user", "function"):
        return False
    if model is None and isinstance(wire, dict) and isinstance(wire.get("model"), str):
        model = wire["model"]
    if model is None or not _SIGNING_MODEL.search(model):
        return True  # the signature rule notes at most
    parts = before.get("parts")
    return (
        before.get("role") == "user"
        and isinstance(parts, list)
        and any(
            isinstance(part, dict)
            and not {"functionCall", "functionResponse"} & _gemini_part(part, None).keys()
            for part in parts
        )
    )


def check_after(provider: str, wire: Any, start: int, *, model: str | None = None) -> Verdict:
    """``check``'s verdict on ``wire`` from its list's item ``start`` on, where
    ``local_cut`` holds there and the provider accepts the items before it; for such a
    body it is the verdict on the whole (problems keep the body's own indices), at the
    cost of reading what follows the cut.

    For Responses it is that verdict too where the items before ``start`` are accepted
    and answer their own calls, the one before ``start`` is no reasoning item, and
    the items from ``start`` on use none of their item ids or call ids (what the
    guard's shortcut makes sure of, ``inspector.guard.tail``): an output after the
    cut for a call before it is seen as one with no call, so such a body is refused
    here, never accepted wrongly."""
    return _check_from(provider, wire, start, model)


# The key of each provider's list in a request body.
HISTORY_KEY = {
    "openai-chat": "messages",
    "anthropic": "messages",
    "responses": "input",
    "gemini": "contents",
}


def _check_from(provider: str, wire: Any, start: int, model: str | None) -> Verdict:
    try:
        walk = _CHECKS[provider]
    except KeyError:
        raise ValueError(
            f"unknown provider {provider!r}; expected one of {', '.join(PROVIDERS)}"
        ) from None
    if model is None and isinstance(wire, dict) and isinstance(wire.get("model"), str):
        model = wire["model"]
    found = _Findings(provider)
    walk(wire, start, model, found)
    return found.verdict()


# --- OpenAI Chat Completions -----------------------------------------------------------------


def _openai_chat(wire: Any, start: int, model: str | None, found: _Findings) -> None:
    messages = _items(wire, "messages")

    def add(index: int, text: str, code: str, ids: tuple[str, ...] = ()) -> None:
        found.add(index, f"messages.{index}", text, code, ids)

    total = len(messages)
    i = start
    while i < total:
        message = messages[i]
        role = message.get("role") if isinstance(message, dict) else None
        if role is not None and role.__class__ is not str:
            role = _text(role)  # any JSON value: looked up as its text
        if role == "tool":
            add(i, OPENAI_ORPHAN_RESULT, "orphan_result", (_text(message.get("tool_call_id")),))
            i += 1
            continue
        if role not in _OPENAI_ROLES and isinstance(message, dict):
            found.unknown(role)
        if role == "function" and not message.get("name"):
            add(i, OPENAI_FUNCTION_WITHOUT_NAME, "missing_name")
        calls = message.get("tool_calls") if role == "assistant" else None
        if calls == []:
            add(i, OPENAI_EMPTY_TOOL_CALLS.format(N=i), "empty_tool_calls")
        if not calls or not isinstance(calls, list):
            i += 1
            continue
        declared: list[str] = []
        for m, call in enumerate(calls):
            if not isinstance(call, dict):
                continue
            cid = _text(call.get("id"))
            if cid in declared:
                add(
                    i,
                    OPENAI_DUPLICATE_CALL_ID.format(M=m, id=cid, N=i),
                    "duplicate_call_id",
                    (cid,),
                )
            else:
                declared.append(cid)
            if len(cid) > OPENAI_CALL_ID_MAX:
                text = OPENAI_CALL_ID_TOO_LONG.format(N=i, M=m, length=len(cid))
                add(i, text, "id_too_long", (cid,))
            function = call.get("function")
            if isinstance(function, dict) and "arguments" in function:
                arguments = function["arguments"]
                if not isinstance(arguments, str):
                    text = OPENAI_ARGUMENTS_NOT_STRING.format(N=i, M=m, kind=_json_kind(arguments))
                    add(i, text, "arguments_not_string", (cid,))
        answered: dict[str, int] = {}
        j = i + 1
        while j < total and isinstance(messages[j], dict):
            if messages[j].get("role") != "tool":
                break
            rid = messages[j].get("tool_call_id")
            if rid.__class__ is not str:
                rid = _text(rid)
            if rid in answered:
                # A second result for one call: the API names it as a result with no call.
                add(j, OPENAI_ORPHAN_RESULT, "duplicate_result", (rid,))
            elif rid in declared:
                answered[rid] = j
            else:
                add(j, OPENAI_ORPHAN_RESULT, "orphan_result", (rid,))
            j += 1
        missing = tuple(cid for cid in declared if cid not in answered)
        if missing:
            add(i, OPENAI_MISSING_RESULT.format(ids=", ".join(missing)), "missing_result", missing)
        i = j


# --- Anthropic Messages ----------------------------------------------------------------------


def _anthropic(wire: Any, start: int, model: str | None, found: _Findings) -> None:
    messages = _items(wire, "messages")
    valid_id = _ANTHROPIC_ID.fullmatch
    last = len(messages) - 1

    def add(index: int, block: int | None, text: str, code: str, ids: tuple[str, ...] = ()) -> None:
        path = f"messages.{index}" if block is None else f"messages.{index}.content.{block}"
        found.add(index, path, text, code, ids)

    # Turns: runs of consecutive messages of one role (system messages inside
    # ``messages`` neither merge nor part them), each the indices of its messages.
    turns: list[tuple[str, int, list[int]]] = []
    run_role: Any = None  # the role of the last turn, while a user or assistant run may grow
    for n in range(start, len(messages)):
        message = messages[n]
        if not isinstance(message, dict):
            turns.append(("", n, []))
            run_role = None
            continue
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, str):
            if not content:
                if not (n == last and role == "assistant"):
                    add(n, None, ANTHROPIC_EMPTY_CONTENT.format(N=n), "empty_content")
            elif content.isspace():
                add(n, None, ANTHROPIC_WHITESPACE_TEXT, "empty_text")
        elif content is None or (isinstance(content, list) and not content):
            if not (n == last and role == "assistant"):
                add(n, None, ANTHROPIC_EMPTY_CONTENT.format(N=n), "empty_content")
        if role == "system":
            continue
        if run_role is not None and run_role == role:
            turns[-1][2].append(n)
        else:
            turns.append((role if isinstance(role, str) else "", n, [n]))
            run_role = role if role == "user" or role == "assistant" else None

    known = _ANTHROPIC_BLOCKS
    unknown = found.unknown
    before: list[str] = []  # the client tool_use ids of the turn before
    before_at = -1
    final_turn = len(turns) - 1
    for t, (role, first, members) in enumerate(turns):
        used: list[str] = []
        used_at: dict[str, tuple[int, int]] = {}
        served: set[str] = set()  # server tool results in this turn
        servers: list[tuple[str, int, int]] = []  # srvtoolu_ tool_use blocks
        results: list[tuple[int, int, str, bool]] = []  # (n, m, id, at the beginning)
        leading = True
        for position, n in enumerate(members):
            content = messages[n].get("content")
            if not isinstance(content, list):
                if isinstance(content, str):
                    leading = False
                continue
            for m, block in enumerate(content):
                if not isinstance(block, dict):
                    leading = False
                    continue
                kind = block.get("type")
                if kind is not None and kind.__class__ is not str:
                    kind = _text(kind)  # any JSON value: looked up as its text
                if kind == "text":
                    text = block.get("text")
                    if text.__class__ is str and text and not text[-1].isspace():
                        pass  # the common case: no whitespace text can end in another
                    elif text == "" or text is None:
                        if block.get("cache_control") is not None:
                            add(n, m, ANTHROPIC_CACHED_EMPTY_TEXT.format(N=n, M=m), "empty_text")
                        else:
                            add(n, m, ANTHROPIC_EMPTY_TEXT, "empty_text")
                    elif isinstance(text, str) and text.isspace():
                        # Accepted before a tool_use of an assistant turn that is not the last.
                        if not (
                            role == "assistant"
                            and t != final_turn
                            and _later_use(messages, members, position, m)
                        ):
                            add(n, m, ANTHROPIC_WHITESPACE_TEXT, "empty_text")
                    leading = False
                elif kind == "tool_use":
                    tid = block.get("id")
                    if isinstance(tid, str):
                        if not valid_id(tid):
                            add(n, m, ANTHROPIC_BAD_ID.format(N=n, M=m), "bad_id", (tid,))
                    else:
                        tid = _text(tid)
                        add(n, m, ANTHROPIC_BAD_ID.format(N=n, M=m), "bad_id", (tid,))
                    server = tid.startswith(ANTHROPIC_SERVER_ID_PREFIX)
                    if tid in used_at:
                        text = ANTHROPIC_DUPLICATE_ID.format(N=n, M=m)
                        add(n, m, text, "duplicate_id", (tid,))
                    else:
                        used_at[tid] = (n, m)
                        if not server:
                            used.append(tid)
                    if not isinstance(block.get("input"), dict):
                        text = ANTHROPIC_INPUT_NOT_OBJECT.format(N=n, M=m)
                        add(n, m, text, "input_not_object")
                    if server:
                        servers.append((tid, n, m))
                    leading = False
                elif kind == "tool_result":
                    rid = block.get("tool_use_id")
                    if not isinstance(rid, str):
                        rid = _text(rid)
                        add(n, m, ANTHROPIC_BAD_RESULT_ID.format(N=n, M=m), "bad_id", (rid,))
                    elif not valid_id(rid):
                        add(n, m, ANTHROPIC_BAD_RESULT_ID.format(N=n, M=m), "bad_id", (rid,))
                    results.append((n, m, rid, leading))
                elif kind == "thinking":
                    for field in ("thinking", "signature"):
                        if block.get(field) is None:
                            text = ANTHROPIC_THINKING_FIELD.format(N=n, M=m, field=field)
                            add(n, m, text, "thinking_field")
                    leading = False
                else:
                    if isinstance(kind, str) and kind.endswith("_tool_result"):
                        served.add(_text(block.get("tool_use_id")))
                    elif kind not in known:
                        unknown(kind)
                    leading = False
        if role == "user":
            answered: set[str] = set()
            late = False
            for n, m, rid, at_start in results:
                if rid not in before or rid in answered:
                    text = ANTHROPIC_UNEXPECTED_RESULT.format(N=n, M=m, id=rid)
                    add(n, m, text, "orphan_result", (rid,))
                else:
                    answered.add(rid)
                    late = late or not at_start
            if before:
                # ``answered`` holds only ids of ``before``, each once, as ``before`` does:
                # all of them answered (the usual turn) is a count, not a walk.
                missing = (
                    tuple(u for u in before if u not in answered)
                    if len(answered) < len(before)
                    else ()
                )
                if missing:
                    text = ANTHROPIC_MISSING_RESULT.format(N=before_at, ids=", ".join(missing))
                    add(before_at, None, text, "missing_result", missing)
                elif late:
                    text = ANTHROPIC_RESULTS_NOT_FIRST.format(N=first, count=len(before))
                    add(first, None, text, "results_not_first", tuple(before))
        elif before:
            text = ANTHROPIC_MISSING_RESULT.format(N=before_at, ids=", ".join(before))
            add(before_at, None, text, "missing_result", tuple(before))
        for tid, n, _ in servers:
            if tid not in served:
                text = ANTHROPIC_MISSING_RESULT.format(N=n, ids=tid)
                add(n, None, text, "missing_result", (tid,))
        before = used if role == "assistant" else []
        before_at = first
    if before:
        text = ANTHROPIC_MISSING_RESULT.format(N=before_at, ids=", ".join(before))
        add(before_at, None, text, "missing_result", tuple(before))
    if last >= start and _ends_in_whitespace(messages[last]):
        add(last, None, ANTHROPIC_TRAILING_WHITESPACE, "trailing_whitespace")
    if last >= start:
        _anthropic_thinking(wire, messages, start, add)


def _anthropic_thinking(
    wire: Any, messages: list[Any], start: int, add: Callable[..., None]
) -> None:
    """Where thinking blocks may stand, by the body's ``thinking`` setting (off when the
    body does not say, as for a bare list of messages)."""
    setting = wire.get("thinking") if isinstance(wire, dict) else None
    enabled = isinstance(setting, dict) and setting.get("type") in ("enabled", "adaptive")
    last = len(messages) - 1
    final = messages[last]
    blocks = final.get("content") if isinstance(final, dict) else None
    if isinstance(final, dict) and final.get("role") == "assistant" and isinstance(blocks, list):
        kinds = [b.get("type") if isinstance(b, dict) else None for b in blocks]
        thinking = [m for m, kind in enumerate(kinds) if kind in ANTHROPIC_THINKING]
        if thinking and not enabled:
            add(
                last,
                thinking[0],
                ANTHROPIC_THINKING_WHEN_DISABLED.format(N=last, M=thinking[0]),
                "thinking_disabled",
            )
        if kinds and kinds[-1] in ANTHROPIC_THINKING:
            add(last, None, ANTHROPIC_THINKING_LAST.format(N=last), "thinking_last")
    if not enabled:
        return
    # The turn the request continues: the assistant's messages since the user last
    # wrote more than tool results, when the history ends inside it.
    n = last
    while n >= 0:
        message = messages[n]
        if not isinstance(message, dict):
            return
        if message.get("role") == "user" and not _only_results(message.get("content")):
            break
        n -= 1
    first = n + 1
    while first <= last and (
        not isinstance(messages[first], dict) or messages[first].get("role") != "assistant"
    ):
        first += 1
    if first > last or first < start:
        return
    content = messages[first].get("content")
    head = content[0] if isinstance(content, list) and content else content
    found = head.get("type") if isinstance(head, dict) else "text"
    if found not in ANTHROPIC_THINKING:
        add(first, 0, ANTHROPIC_THINKING_FIRST.format(N=first, found=found), "thinking_first")


def _later_use(messages: list[Any], members: list[int], position: int, m: int) -> bool:
    """Whether a ``tool_use`` block follows block ``m`` of the turn's message at
    ``position`` of ``members`` (its messages' indices), in that message or a later one."""
    for k in range(position, len(members)):
        content = messages[members[k]].get("content")
        if isinstance(content, list):
            for b in content[m + 1 :] if k == position else content:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    return True
    return False


def _only_results(content: Any) -> bool:
    """Whether a user message's ``content`` is tool results and nothing else."""
    return (
        isinstance(content, list)
        and bool(content)
        and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    )


def _ends_in_whitespace(message: Any) -> bool:
    """Whether ``message`` is an assistant message whose content ends in a text with
    trailing whitespace (a text of whitespace alone is refused as such instead)."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return False
    content = message.get("content")
    if isinstance(content, list) and content and isinstance(content[-1], dict):
        last = content[-1]
        content = last.get("text") if last.get("type") == "text" else None
    return isinstance(content, str) and content.strip() != "" and content != content.rstrip()


# --- OpenAI Responses ------------------------------------------------------------------------


def _responses(wire: Any, start: int, model: str | None, found: _Findings) -> None:
    """Every client call item has an output item after it, and the reverse.

    Unlike Chat Completions, an output does not have to follow its call
    directly; it only has to come after it somewhere in ``input``. A body
    that continues a stored history (``previous_response_id``,
    ``conversation``) may answer calls that are not in it: then the verdict
    is ``cannot_tell`` unless the body alone shows a problem.
    """
    items = _items(wire, "input")
    stored = ""
    if isinstance(wire, dict):
        for key in ("previous_response_id", "conversation"):
            value = wire.get(key)
            if value is not None and value != "":
                shown = value.get("id") if isinstance(value, dict) else value
                stored = RESPONSES_STATEFUL.format(key=key, value=_text(shown))
                break
    calls: dict[str, tuple[int, str]] = {}
    answered: set[str] = set()
    item_ids: set[str] = set()
    upstream: list[str] = []

    def add(index: int, text: str, code: str, ids: tuple[str, ...] = ()) -> None:
        found.add(index, f"input.{index}", text, code, ids)

    total = len(items)
    for i in range(start, total):
        item = items[i]
        if item.__class__ is not dict and not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind is not None and kind.__class__ is not str:
            kind = _text(kind)  # any JSON value: looked up as its text
        iid = item.get("id")
        if iid and isinstance(iid, str):
            if iid in item_ids:
                add(i, RESPONSES_DUPLICATE_ITEM.format(id=iid), "duplicate_item", (iid,))
            item_ids.add(iid)
            prefix = RESPONSES_ID_PREFIXES.get("message" if kind is None else kind)
            if prefix is not None and not iid.startswith(prefix):
                text = RESPONSES_ID_PREFIX.format(N=i, id=iid, prefix=prefix)
                add(i, text, "bad_item_id", ())
        cid = item.get("call_id")
        if cid is not None:
            if cid.__class__ is not str:
                cid = _text(cid)
            if len(cid) > RESPONSES_CALL_ID_MAX:
                text = RESPONSES_CALL_ID_TOO_LONG.format(N=i, length=len(cid))
                add(i, text, "id_too_long", (cid,))
        if kind is None or kind == "message":
            continue
        if kind == "reasoning":
            j = i + 1
            while j < total and isinstance(items[j], dict) and items[j].get("type") == "reasoning":
                j += 1
            if j >= total or not follows_reasoning(items[j]):
                text = RESPONSES_REASONING_ALONE.format(id=_text(iid))
                add(i, text, "reasoning_alone", ())
            continue
        if kind in RESPONSES_CALLS:
            if cid is None or item.get("execution") == "server":
                continue  # the provider ran it: no output to send
            if cid in calls:
                add(i, RESPONSES_DUPLICATE_CALL_ID.format(id=cid), "duplicate_call_id", (cid,))
            else:
                calls[cid] = (i, kind)
            continue
        if kind in RESPONSES_OUTPUTS:
            if cid is None or item.get("execution") == "server":
                continue
            if cid in calls:
                answered.add(cid)
            elif stored:
                upstream.append(cid)  # its call may be stored upstream
            else:
                words = _words(RESPONSES_OUTPUTS[kind])
                add(i, RESPONSES_ORPHAN_OUTPUT.format(kind=words, id=cid), "orphan_result", (cid,))
            continue
        if kind in RESPONSES_SERVER_ITEMS or kind in _RESPONSES_OTHER:
            continue
        found.unknown(kind)
        if cid is not None and isinstance(kind, str) and kind.endswith("_output"):
            answered.add(cid)  # not checked: it may answer a call
    for cid, (i, kind) in calls.items():
        if cid not in answered:
            text = RESPONSES_MISSING_OUTPUT.format(kind=_words(kind), id=cid)
            add(i, text, "missing_result", (cid,))
    if stored:
        found.undecided = stored


def follows_reasoning(item: Any) -> bool:
    """Whether ``item`` can be what a reasoning item was followed by: an item the model
    made (an assistant message, a call). Whether it must also carry its id, as some
    public reports suggest, is not checked."""
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind is None or kind == "message":
        return item.get("role") == "assistant"
    return isinstance(kind, str) and (kind in RESPONSES_CALLS or kind in RESPONSES_SERVER_ITEMS)


def _words(kind: str) -> str:
    """An item kind as Responses errors name it: ``local_shell_call``, ``local shell call``."""
    return kind.replace("_", " ")


# --- Gemini ----------------------------------------------------------------------------------


def _gemini(wire: Any, start: int, model: str | None, found: _Findings) -> None:
    """No turn without parts; a call turn follows a user turn and is answered in full.

    A function call turn at the very end of ``contents`` counts as answered
    by zero response parts: the history cannot be continued from there.
    """
    contents = _items(wire, "contents")

    def add(index: int, text: str, code: str) -> None:
        found.add(index, f"contents.{index}", text, code)

    # Turns merged by role, each (role, first index, call parts, response parts, calls):
    # ``calls`` the (index, part) of each function call part. The turn before ``start``
    # is read too, for the placement of the one at it.
    turns: list[tuple[Any, int, int, int, list[tuple[int, dict[str, Any]]]]] = []
    prompt = -1
    for t in range(max(start - 1, 0), len(contents)):
        turn = contents[t]
        if not isinstance(turn, dict):
            turns.append((None, t, 0, 0, []))
            continue
        parts = turn.get("parts")
        if t >= start and not parts:
            add(t, GEMINI_EMPTY_PARTS.format(N=t), "empty_parts")
        role = turn.get("role")
        if t >= start and isinstance(role, str) and role and role not in _GEMINI_ROLES:
            add(t, GEMINI_BAD_ROLE, "bad_role")
        calls: list[tuple[int, dict[str, Any]]] = []
        responses = 0
        if isinstance(parts, list):
            for part in parts:
                if not isinstance(part, dict):
                    continue
                part = _gemini_part(part, found if t >= start else None)
                if "functionCall" in part:
                    calls.append((t, part))
                elif "functionResponse" in part:
                    responses += 1
                elif role == "user":
                    prompt = t  # the user's own words: the current turn starts after them
        if turns and turns[-1][0] == role and role is not None:
            r, first, c, n, merged = turns[-1]
            turns[-1] = (r, first, c + len(calls), n + responses, merged + calls)
        else:
            turns.append((role, t, len(calls), responses, calls))
    for k, (role, first, declared, responses, _) in enumerate(turns):
        if first < start:
            continue
        before = turns[k - 1] if k > 0 else None
        if declared and responses:
            add(first, GEMINI_MIXED_TURN, "mixed_turn")
        elif role == "model" and declared:
            if before is None or before[0] not in ("user", "function"):
                add(first, GEMINI_CALL_TURN_PLACEMENT, "call_turn_placement")
            after = turns[k + 1] if k + 1 < len(turns) else None
            answered = after[3] if after is not None and after[0] in ("user", "function") else 0
            if answered != declared:
                at = after[1] if after is not None else first
                add(at, GEMINI_COUNT_MISMATCH, "count_mismatch")
        elif role in ("user", "function") and responses:
            if not (before is not None and before[0] == "model" and before[2] and not before[3]):
                add(first, GEMINI_RESPONSE_TURN_PLACEMENT, "response_turn_placement")
    _gemini_signatures(turns, max(start, prompt + 1), model, found)


def _gemini_part(part: dict[str, Any], found: _Findings | None) -> dict[str, Any]:
    """``part`` with keys of a null value left out and snake_case names made camelCase."""
    # ``in`` on the values: a JSON value equals None only when it is null.
    if None in part.values() or not _GEMINI_SNAKE.keys().isdisjoint(part):
        part = {_GEMINI_SNAKE.get(k, k): v for k, v in part.items() if v is not None}
    if found is not None and not _GEMINI_PARTS.issuperset(part):
        for key in part:
            if key not in _GEMINI_PARTS:
                found.unknown(key)
    return part


def _gemini_signatures(
    turns: list[tuple[Any, int, int, int, list[tuple[int, dict[str, Any]]]]],
    current: int,
    model: str | None,
    found: _Findings,
) -> None:
    """Gemini 3: the first call part of each model turn from ``current`` on is signed."""
    unsigned: list[tuple[int, dict[str, Any]]] = []
    for role, first, _, _, calls in turns:
        if role == "model" and calls and first >= current:
            t, part = calls[0]
            if not part.get("thoughtSignature"):
                unsigned.append((t, part))
    if not unsigned:
        return
    if model is None:
        found.notes[GEMINI_SIGNATURE_UNCHECKED] = None
        return
    if not _SIGNING_MODEL.search(model):
        return
    for t, part in unsigned:
        call = part.get("functionCall")
        name = _text(call.get("name")) if isinstance(call, dict) else ""
        text = GEMINI_MISSING_SIGNATURE.format(name=name, position=t + 1)
        found.add(t, f"contents.{t}", text, "missing_signature")


_CHECKS: dict[str, Callable[[Any, int, str | None, _Findings], None]] = {
    "openai-chat": _openai_chat,
    "anthropic": _anthropic,
    "responses": _responses,
    "gemini": _gemini,
}


def _items(wire: Any, key: str) -> list[Any]:
    """The list a validator walks: the body's ``key`` list, or ``wire`` itself."""
    if isinstance(wire, dict):
        wire = wire.get(key)
    return wire if isinstance(wire, list) else []


def _text(value: Any) -> str:
    """An id as the error text shows it; ids that are not strings still get named."""
    return value if isinstance(value, str) else "" if value is None else str(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "null" if value is None else "an object"
