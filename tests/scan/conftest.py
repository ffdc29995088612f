"""Fixtures for the scan tests: the real project folders, a small mixed tree, and scans of them."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from django.core.management import call_command

from inspector import formats
from inspector.diagnosis import diagnose
from inspector.scan.models import ScanJob
from tests.testdata import CORPUS, expanded, read

# Scans need a real folder: the stored corpus compresses its large files.
PROJECTS = expanded(CORPUS / "claude-code" / "projects")
EMPTY_SESSION = (
    "-Users-dain-workspace-claude-code-log-sample/62b71fe7-2de1-4d37-83e3-fddac2e2c43a.jsonl"
)
BROKEN = CORPUS / "claude-code" / "broken"
CODEX = CORPUS / "codex"

# A small tree with known verdicts: relative path -> (source file or bytes).
MIXED = {
    "alpha/cut-call.jsonl": BROKEN
    / (
        "entireio-cli__entire-checkpoints__4c-02af2759b6-0-full__session-2026-01-13-"
        "5a3bb1c8-c3ce-466e-b487-24212cbf1da1.claude.jsonl"
    ),
    "alpha/stray-result.jsonl": BROKEN
    / (
        "entireio-cli__entire-checkpoints__17-55e38d324c-0-full__session-"
        "47a78253-7d91-4be2-bfd3-f5ac53c9195b.claude.jsonl"
    ),
    # A healthy session. (The broken folder's glued-line session needs repair
    # now that a lost newline is a finding of its own, LINE-1.)
    "alpha/clean.jsonl": CORPUS
    / "claude-code"
    / "sessions"
    / (
        "MoonshotAI-kimi-cli__entire-checkpoints__bf-3a8bd70c3e-1-full__session-"
        "5c0447e5-f29d-434b-bb0b-8898b57a8e78.jsonl"
    ),
    "codex/escalation.jsonl": CODEX / "kvsankar-agent-history__codex_with_escalation.jsonl",
    "codex/compaction.jsonl": CODEX / "kvsankar-agent-history__codex_session_with_compaction.jsonl",
    "empty.jsonl": b"",
    "garbage.json": b"{this is not json",
    "README.md": b"# not a session\n",
}
MIXED_NEEDS_REPAIR = {"alpha/cut-call.jsonl", "alpha/stray-result.jsonl", "codex/escalation.jsonl"}
MIXED_UNREADABLE = {"empty.jsonl", "garbage.json"}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def expected_verdicts(root: Path) -> tuple[dict[str, bool], set[str]]:
    """Each readable session's needs-repair verdict and the unreadable paths, without the app."""
    verdicts: dict[str, bool] = {}
    unreadable: set[str] = set()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in (".jsonl", ".json"):
            continue
        relative = path.relative_to(root).as_posix()
        try:
            parsed = formats.load(read(path))
        except formats.FormatError:
            unreadable.add(relative)
            continue
        verdicts[relative] = diagnose(parsed).needs_repair
    return verdicts, unreadable


@pytest.fixture
def mixed_tree(tmp_path: Path) -> Path:
    root = tmp_path / "mixed"
    for relative, source in MIXED.items():
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, Path):
            target.write_bytes(read(source))
        else:
            target.write_bytes(source)
    return root


@pytest.fixture
def run_scan(owner) -> Callable[..., tuple[ScanJob, str]]:
    """Run ``manage.py scan`` and return the job it made and what it printed."""

    def run(path: Path, project: str = "corpus", **options: object) -> tuple[ScanJob, str]:
        out = io.StringIO()
        options.setdefault("owner", owner.username)
        call_command("scan", str(path), project=project, stdout=out, **options)
        return ScanJob.objects.latest("id"), out.getvalue()

    return run


@pytest.fixture
def corpus_scan(run_scan) -> ScanJob:
    job, _ = run_scan(PROJECTS)
    return job


def zip_of(root: Path, prefix: str = "") -> bytes:
    """A zip of every file under ``root``, names relative to it (after ``prefix``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                archive.write(path, prefix + path.relative_to(root).as_posix())
    return buffer.getvalue()


def zip_with(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, (2026, 1, 2, 3, 4, 5))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()
