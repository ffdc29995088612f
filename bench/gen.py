"""Generate realistic Claude Code sessions for benchmarks (deterministic).

A session is what Claude Code writes: user prompts, assistant replies split
over one record per content block sharing `message.id`, tool results in user
records with `toolUseResult`, progress records, and a `parentUuid` chain.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import orjson

TOOLS = ("Read", "Bash", "Grep", "Edit", "Glob")


def claude_code_session(target_bytes: int, seed: int = 7, damaged: bool = True) -> bytes:
    """About ``target_bytes`` of session JSONL; ``damaged`` ends it mid-call."""
    rng = random.Random(seed)
    session = str(uuid.UUID(int=rng.getrandbits(128)))
    lines: list[bytes] = []
    size = 0
    parent: str | None = None
    clock = 0
    turn = 0

    def record(body: dict) -> None:
        nonlocal parent, size, clock
        clock += 1
        uid = str(uuid.UUID(int=rng.getrandbits(128)))
        full = {
            "parentUuid": parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/project",
            "sessionId": session,
            "version": "2.1.56",
            "gitBranch": "main",
            **body,
            "uuid": uid,
            "timestamp": f"2026-02-25T08:{clock // 3600 % 60:02d}:{clock % 60:02d}.000Z",
        }
        line = orjson.dumps(full)
        lines.append(line)
        size += len(line) + 1
        parent = uid

    while size < target_bytes:
        turn += 1
        record(
            {
                "type": "user",
                "message": {"role": "user", "content": f"Step {turn}: " + _words(rng, 30)},
            }
        )
        for _ in range(rng.randint(1, 4)):
            message_id = f"msg_{rng.getrandbits(64):016x}"
            calls = [
                (f"toolu_{rng.getrandbits(80):020x}", rng.choice(TOOLS))
                for _ in range(rng.randint(1, 3))
            ]
            blocks = [{"type": "text", "text": _words(rng, 40)}] + [
                {"type": "tool_use", "id": cid, "name": name, "input": {"path": f"src/m{turn}.py"}}
                for cid, name in calls
            ]
            for block in blocks:
                record(
                    {
                        "type": "assistant",
                        "message": {
                            "model": "claude-opus-4-6",
                            "id": message_id,
                            "type": "message",
                            "role": "assistant",
                            "content": [block],
                            "stop_reason": None,
                            "usage": {"input_tokens": 10, "output_tokens": 20},
                        },
                        "requestId": f"req_{message_id}",
                    }
                )
            for cid, _name in calls:
                output = _words(rng, rng.randint(50, 600))
                record(
                    {
                        "type": "user",
                        "message": {
                            "role": "user",
                            "content": [
                                {"type": "tool_result", "tool_use_id": cid, "content": output}
                            ],
                        },
                        "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
                    }
                )
        record(
            {
                "type": "assistant",
                "message": {
                    "model": "claude-opus-4-6",
                    "id": f"msg_{rng.getrandbits(64):016x}",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "text", "text": _words(rng, 60)}],
                    "stop_reason": "end_turn",
                },
            }
        )
    if damaged:
        # The classic crash: a call written, the session killed before its result.
        record(
            {
                "type": "assistant",
                "message": {
                    "model": "claude-opus-4-6",
                    "id": "msg_final",
                    "type": "message",
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_final",
                            "name": "Bash",
                            "input": {"command": "make test"},
                        }
                    ],
                    "stop_reason": "tool_use",
                },
            }
        )
        record(
            {
                "type": "user",
                "message": {"role": "user", "content": "[Request interrupted by user]"},
            }
        )
    return b"\n".join(lines) + b"\n"


_VOCAB = (
    "the a file test function returns value error module import path line build check run "
    "config parser session record result call tool id message assistant user fix update"
).split()


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(_VOCAB) for _ in range(count))


def write_session(path: Path, target_bytes: int, seed: int = 7) -> Path:
    path.write_bytes(claude_code_session(target_bytes, seed))
    return path
