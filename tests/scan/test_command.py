"""``manage.py scan``: every session stored, exactly the broken ones flagged, re-scans skip."""

from __future__ import annotations

import io
import shutil

import pytest
from django.core.management import CommandError, call_command

from inspector.scan.jobs import folder_job
from inspector.scan.management.commands.scan import Progress
from inspector.scan.models import ScanFile, ScanJob
from inspector.scan.tasks import scan_file, start
from inspector.web.models import Project, Transcript
from tests.scan.conftest import (
    CODEX,
    EMPTY_SESSION,
    MIXED_NEEDS_REPAIR,
    MIXED_UNREADABLE,
    PROJECTS,
    expected_verdicts,
)
from tests.testdata import read

pytestmark = pytest.mark.django_db


def test_scan_of_the_corpus_stores_every_session_and_flags_exactly_the_broken_ones(run_scan):
    job, output = run_scan(PROJECTS)
    verdicts, unreadable = expected_verdicts(PROJECTS)
    project = Project.objects.get(slug="corpus")
    stored = dict(project.transcripts.values_list("relative_path", "needs_repair"))
    assert stored == verdicts
    assert {path for path, broken in stored.items() if broken} == {
        path for path, broken in verdicts.items() if broken
    }
    # Known facts about these seven folders, whatever the engine says.
    assert len(verdicts) == 52
    assert unreadable == {EMPTY_SESSION}
    empty = job.files.get(path=EMPTY_SESSION)
    assert empty.status == ScanFile.Status.UNREADABLE
    assert empty.reason == "The file is empty."
    assert (job.status, job.total, job.done, job.new, job.unreadable) == ("done", 53, 53, 52, 1)
    assert (
        job.bytes_done
        == job.bytes_total
        == sum(p.stat().st_size for p in PROJECTS.rglob("*.jsonl"))
    )
    assert "Unreadable files (1):" in output
    assert f"{EMPTY_SESSION}\n      The file is empty." in output
    assert "\r" not in output  # no terminal here: plain progress lines


def test_subagent_files_are_linked_to_their_parent_session(corpus_scan):
    sessions = {t.relative_path: t for t in Transcript.objects.select_related("parent")}
    nested = sessions[
        "-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20/subagents/agent-a2271d1.jsonl"
    ]
    assert nested.parent.relative_path == (
        "-src-experiments-claude_p/29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl"
    )
    beside = sessions["-Users-dain-workspace-JSSoundRecorder/agent-3430b97e.jsonl"]
    assert beside.parent.relative_path == (
        "-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl"
    )
    # Its parent session's file is not in the corpus: nothing to link to.
    assert sessions["-Users-dain-workspace-JSSoundRecorder/agent-650d3273.jsonl"].parent is None
    assert sum(t.parent_id is not None for t in sessions.values()) == 14
    assert all(not t.meta.get("sidechain") for t in sessions.values() if t.children.exists())


def test_a_second_scan_skips_every_unchanged_file(run_scan, corpus_scan):
    before = set(Transcript.objects.values_list("pk", "sha256"))
    job, output = run_scan(PROJECTS)
    assert (job.total, job.unchanged, job.new, job.updated) == (53, 52, 0, 0)
    # An unreadable file is tried again (a newer reader may read it); it is still unreadable.
    assert job.unreadable == 1
    assert set(Transcript.objects.values_list("pk", "sha256")) == before
    assert "52 unchanged (skipped)" in output


@pytest.mark.usefixtures("any_storage")
def test_a_changed_file_replaces_the_transcript_for_its_path(run_scan, mixed_tree):
    run_scan(mixed_tree, project="mixed")
    old = Transcript.objects.get(relative_path="alpha/clean.jsonl")
    target = mixed_tree / "alpha" / "clean.jsonl"
    target.write_bytes(read(CODEX / "swiftdiaries-agent-transcripts__codex-session.jsonl"))
    job, _ = run_scan(mixed_tree, project="mixed")
    assert (job.updated, job.unchanged, job.new) == (1, 4, 0)
    current = Transcript.objects.get(relative_path="alpha/clean.jsonl")
    assert current.pk != old.pk
    assert current.format == "codex"
    assert not Transcript.objects.filter(pk=old.pk).exists()
    assert job.files.get(path="alpha/clean.jsonl").status == ScanFile.Status.UPDATED


def test_one_bad_file_never_stops_the_scan_and_other_files_are_left_out_with_a_note(
    run_scan, mixed_tree
):
    job, output = run_scan(mixed_tree, project="mixed")
    assert job.status == ScanJob.Status.DONE
    stored = dict(Transcript.objects.values_list("relative_path", "needs_repair"))
    assert {path for path, broken in stored.items() if broken} == MIXED_NEEDS_REPAIR
    assert set(stored) == {
        "alpha/cut-call.jsonl",
        "alpha/stray-result.jsonl",
        "alpha/clean.jsonl",
        "codex/escalation.jsonl",
        "codex/compaction.jsonl",
    }
    bad = dict(job.files.filter(status="unreadable").values_list("path", "reason"))
    assert set(bad) == MIXED_UNREADABLE
    assert bad["garbage.json"].startswith("This is not a transcript in any shape")
    assert "README.md" in " ".join(job.notes)
    assert "Note: 1 file is not a .json or .jsonl session: left out (README.md)." in output
    # Counts per rule in the closing table.
    assert "PAIR-1" in output and "PAIR-3" in output
    assert "need repair         3" in output


def test_the_same_bytes_twice_in_one_tree_are_stored_once(run_scan, mixed_tree):
    shutil.copyfile(mixed_tree / "alpha" / "clean.jsonl", mixed_tree / "alpha" / "copy.jsonl")
    job, _ = run_scan(mixed_tree, project="mixed")
    assert job.duplicate == 1
    assert (
        Transcript.objects.filter(
            relative_path__in=["alpha/clean.jsonl", "alpha/copy.jsonl"]
        ).count()
        == 1
    )
    again, _ = run_scan(mixed_tree, project="mixed")
    assert (again.new, again.updated, again.duplicate, again.unchanged) == (0, 0, 1, 5)


def test_a_file_changed_into_a_copy_of_another_drops_its_old_transcript(run_scan, mixed_tree):
    run_scan(mixed_tree, project="mixed")
    old = Transcript.objects.get(relative_path="alpha/clean.jsonl")
    shutil.copyfile(mixed_tree / "codex" / "compaction.jsonl", mixed_tree / "alpha" / "clean.jsonl")
    job, _ = run_scan(mixed_tree, project="mixed")
    assert job.files.get(path="alpha/clean.jsonl").status == ScanFile.Status.DUPLICATE
    assert not Transcript.objects.filter(pk=old.pk).exists()


def test_a_file_processed_twice_counts_once(owner, mixed_tree):
    project = Project.objects.create(owner=owner, name="twice", slug="twice")
    job, found = folder_job(owner, project, mixed_tree)
    ids = start(job, found, enqueue=False)
    for file_id in ids + ids:  # as if every worker were killed after its work and retried
        scan_file.call(file_id)
    job.refresh_from_db()
    assert job.status == ScanJob.Status.DONE
    assert (job.total, job.done, job.new, job.unreadable) == (7, 7, 5, 2)
    assert job.bytes_done == job.bytes_total


def test_owner_defaults_to_the_first_superuser_and_is_made_when_there_is_none(
    django_user_model, mixed_tree
):
    out = io.StringIO()
    call_command("scan", str(mixed_tree / "alpha"), stdout=out)
    made = django_user_model.objects.get(is_superuser=True)
    assert "Created the owner account 'owner'." in out.getvalue()
    project = Project.objects.get(owner=made)
    assert project.name == "alpha"  # the folder's name
    call_command("scan", str(mixed_tree / "codex"), stdout=io.StringIO())
    assert Project.objects.filter(owner=made).count() == 2


def test_a_single_file_can_be_scanned(run_scan, mixed_tree):
    job, _ = run_scan(mixed_tree / "alpha" / "cut-call.jsonl", project="one")
    assert job.total == 1
    assert Transcript.objects.get().relative_path == "cut-call.jsonl"


def test_bad_arguments_are_refused(owner, tmp_path):
    with pytest.raises(CommandError, match="does not exist"):
        call_command("scan", str(tmp_path / "nowhere"), stdout=io.StringIO())
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("scan", str(tmp_path), owner="nobody", stdout=io.StringIO())
    with pytest.raises(CommandError, match="--workers"):
        call_command("scan", str(tmp_path), workers=-1, stdout=io.StringIO())


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_on_a_terminal_and_prints_lines_elsewhere():
    from django.core.management.base import OutputWrapper

    job = ScanJob(total=20, bytes_total=2000, status="running")
    plain, terminal = io.StringIO(), FakeTerminal()
    bars = Progress(OutputWrapper(plain)), Progress(OutputWrapper(terminal))
    for done in range(21):
        job.done, job.bytes_done = done, done * 100
        for bar in bars:
            bar.show(job, final=done == 20)
    lines = plain.getvalue().splitlines()
    assert len(lines) == 11  # 0 %, 10 %, ..., 100 %
    assert lines[-1].startswith("[" + "#" * 30 + "] 100%  20/20 files")
    assert "\r" not in plain.getvalue()
    assert terminal.getvalue().count("\r") == 21
    assert terminal.getvalue().endswith("\n")


def test_a_scan_indexes_each_new_file_from_its_rows_in_its_own_task_credentials_masked(
    run_scan, tmp_path, settings, monkeypatch
):
    # The scan's task indexes what its diagnosis just made (inspector.search.signals):
    # no second task is queued, and the cache file is not read back for it.
    from django_tasks_db.models import DBTaskResult

    from inspector.search import fulltext
    from inspector.search.models import SearchRow
    from inspector.web import store
    from tests.web.conftest import assistant, canonical, user

    settings.TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
    key = "sk-ant-api03-" + "Zq7wX2pL9m" * 8
    root = tmp_path / "keys"
    root.mkdir()
    for n in range(3):
        session = canonical(
            user(f"use ANTHROPIC_API_KEY={key} for billing run {n}"), assistant(content="ok")
        )
        (root / f"s{n}.json").write_bytes(session)

    def no_reading_back(transcript):
        raise AssertionError("the scan read the cache file back to index it")

    monkeypatch.setattr(store, "get_page_diagnosis", no_reading_back)
    job, _ = run_scan(root, project="keys")
    monkeypatch.undo()
    assert (job.new, job.unreadable) == (3, 0)
    assert not DBTaskResult.objects.exists()
    for transcript in Transcript.objects.filter(project=job.project):
        rows = [row for row in store.get_diagnosis(transcript).rows if fulltext.row_text(row)]
        bodies = SearchRow.objects.filter(transcript=transcript).order_by("position")
        assert list(bodies.values_list("key", "body")) == [
            (row["key"], fulltext.row_text(row)) for row in rows
        ]
        assert not any(key[13:33] in body for _, body in bodies.values_list("key", "body"))
    hits = list(fulltext.search(job.project, "masked anthropic billing"))
    assert len(hits) == 3 and all(key not in hit.snippet for hit in hits)


def test_a_scan_whose_indexing_fails_still_stores_counts_and_finishes_every_file(
    run_scan, mixed_tree, monkeypatch, caplog
):
    # Indexing is the scan task's last step: its failure is logged and the file stays
    # counted once; the next search indexes the transcripts it left out (catch_up).
    from inspector.search import fulltext

    def broken(transcript_id, rows):
        raise RuntimeError("a bug in reading a row's text")

    monkeypatch.setattr(fulltext, "entries_of", broken)
    with caplog.at_level("ERROR", logger="inspector.search.signals"):
        job, _ = run_scan(mixed_tree, project="mixed")
    assert (job.status, job.done, job.total, job.new, job.unreadable) == ("done", 7, 7, 5, 2)
    assert caplog.text.count("for search failed") == 5
    monkeypatch.undo()
    assert fulltext.catch_up(job.project, 30.0) == 0


def test_an_openhands_session_in_a_scanned_folder_is_one_session_read_as_openhands(
    run_scan, tmp_path
):
    """Its events/<id>.json files (and the cache pages beside them) are one session."""
    import orjson

    from tests.testdata import CORPUS

    events = tmp_path / "store" / "sessions" / "abc123" / "events"
    events.mkdir(parents=True)
    stream = orjson.loads(read(CORPUS / "openhands" / "derived__basic.crashed-in-edit.json"))
    for event in stream:
        (events / f"{event['id']}.json").write_bytes(orjson.dumps(event))
    cache = events.parent / "event_cache"
    cache.mkdir()
    (cache / "0-25.json").write_bytes(orjson.dumps(stream))
    job, _ = run_scan(tmp_path / "store", project="openhands")
    (row,) = ScanFile.objects.filter(job=job)
    assert row.path == "sessions/abc123/events"
    transcript = Transcript.objects.get(pk=row.transcript_id)
    assert transcript.format == "openhands" and transcript.needs_repair


def test_an_openhands_cli_conversation_in_a_scanned_folder_is_one_session(run_scan, tmp_path):
    """Its events/event-<n>-<id>.json files and its base_state.json are one conversation."""
    from tests.local.test_openhands_cli import CRASHED, place

    events = place(tmp_path / "home" / "conversations", CRASHED, "0a1b2c3d4e5f")
    job, _ = run_scan(tmp_path / "home", project="openhands-cli")
    (row,) = ScanFile.objects.filter(job=job)
    assert row.path == "conversations/0a1b2c3d4e5f/events"
    transcript = Transcript.objects.get(pk=row.transcript_id)
    assert transcript.format == "openhands-cli" and transcript.needs_repair
    assert events.is_dir()
