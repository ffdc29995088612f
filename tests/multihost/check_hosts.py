"""Web and workers on separate hosts sharing only PostgreSQL and the object storage.

``make multihost`` runs this file (pytest collects it only when named: it
needs root and ``ip netns``, and takes one to four minutes). One scenario,
then one test per claim:

- a user made with ``manage.py createsuperuser`` signs in on the web host and
  uploads a scan of SESSIONS files (the request is over Django's in-memory
  upload limit, so every file is spooled to the web host's TMPDIR, a tmpfs);
- while worker host w1 is running one of the scan's files, the whole host is
  powered off (every process of its PID namespace killed at once);
- w2 finishes the scan, the task w1 held included (requeued after three missed
  beats: w1 is another machine, so its process cannot be looked up), then a
  zip scan; the pages are read from both web hosts, a share link from a fresh
  client on a host of its own.

Storage: ``MULTIHOST_STORAGE=s3`` (the default: moto's S3 server on its own
host) or ``shared`` (a folder every host mounts, standing in for NFS).
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import signal
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import psycopg
import pytest

from tests.multihost.run import CHECKOUT, Cluster, address, changes, cluster, snapshot

sys.path.insert(0, str(CHECKOUT / "bench"))
from gen import claude_code_session

SESSIONS = 40
SESSION_BYTES = 1_500_000
BIG_BYTES = 6 * 1024 * 1024  # over FILE_UPLOAD_MAX_MEMORY_SIZE (4 MB)
PROJECT = "multihost"
ZIP_PROJECT = "multihost-zip"
ZIP_SESSIONS = 5
SCAN_SECONDS = 240


def _files() -> dict[str, bytes]:
    files = {
        f"session-{index:02d}.jsonl": claude_code_session(SESSION_BYTES, seed=1000 + index)
        for index in range(SESSIONS - 1)
    }
    files["big-session.jsonl"] = claude_code_session(BIG_BYTES, seed=99)
    return files


def _db(hosts: Cluster) -> psycopg.Connection:
    return psycopg.connect(hosts.database_url, autocommit=True)


def _csrf(client: httpx.Client) -> str:
    return client.cookies.get("csrftoken") or ""


def _sign_in(hosts: Cluster) -> httpx.Client:
    client = httpx.Client(base_url=hosts.base, timeout=120)
    page = client.get("/login/")
    page.raise_for_status()
    answer = client.post(
        "/login/",
        data={
            "username": hosts.username,
            "password": hosts.password,
            "csrfmiddlewaretoken": _csrf(client),
        },
    )
    assert answer.status_code == 302, answer.text[:2000]
    return client


class TmpWatch(threading.Thread):
    """Names seen in the web host's TMPDIR while an upload is under way."""

    def __init__(self, folder: Path) -> None:
        super().__init__(daemon=True)
        self.folder, self.seen, self.stop = folder, set(), threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.seen.update(os.listdir(self.folder))
            except OSError:
                pass
            time.sleep(0.002)


def _running_on(db: psycopg.Connection, hostname: str) -> list[tuple[str, list[str]]]:
    rows = db.execute(
        "SELECT id::text, worker_ids FROM django_tasks_database_dbtaskresult "
        "WHERE status = 'RUNNING' AND task_path LIKE %s",
        ("%scan_file",),
    ).fetchall()
    return [(task, ids) for task, ids in rows if ids and _host_of(ids[-1]) == hostname]


def _finished_on(db: psycopg.Connection, hostname: str) -> int:
    rows = db.execute(
        "SELECT worker_ids FROM django_tasks_database_dbtaskresult "
        "WHERE status = 'SUCCESSFUL' AND task_path LIKE %s",
        ("%scan_file",),
    ).fetchall()
    return sum(1 for (ids,) in rows if ids and _host_of(ids[-1]) == hostname)


def _zip_scan(
    hosts: Cluster, client: httpx.Client, db: psycopg.Connection, deadline: float
) -> dict[str, Any]:
    """A zip of a project folder through the web host: w2 reads it from storage and unpacks it."""
    members = {
        f"project/{'sub/' if index % 2 else ''}zipped-{index}.jsonl": claude_code_session(
            200_000, seed=5000 + index
        )
        for index in range(ZIP_SESSIONS)
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    answer = client.post(
        "/scan/",
        data={"project": ZIP_PROJECT, "csrfmiddlewaretoken": _csrf(client)},
        files=[("files", ("project.zip", buffer.getvalue(), "application/zip"))],
    )
    assert answer.status_code == 302, answer.text[:3000]
    job_id = answer.headers["location"].rstrip("/").rsplit("/", 1)[-1]
    row: tuple[Any, ...] = ()
    while time.monotonic() < deadline:
        row = db.execute(
            "SELECT status, total, new FROM scan_scanjob WHERE public_id = %s", (job_id,)
        ).fetchone()
        if row[0] in ("done", "failed"):
            break
        time.sleep(0.5)
    paths = db.execute(
        "SELECT t.relative_path, t.sha256 FROM web_transcript t JOIN web_project p "
        "ON p.id = t.project_id WHERE p.slug = %s",
        (ZIP_PROJECT,),
    ).fetchall()
    return {
        "job": row,
        "members": {name: hashlib.sha256(data).hexdigest() for name, data in members.items()},
        "transcripts": dict(paths),
    }


def _scenario(hosts: Cluster) -> dict[str, Any]:
    facts: dict[str, Any] = {"storage": hosts.storage}
    files = _files()
    facts["files"] = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    client = _sign_in(hosts)
    db = _db(hosts)

    watch = TmpWatch(hosts.web_tmp())
    watch.start()
    started = time.monotonic()
    answer = client.post(
        "/scan/",
        data={"project": PROJECT, "csrfmiddlewaretoken": _csrf(client)},
        files=[("files", (name, data, "application/octet-stream")) for name, data in files.items()],
    )
    watch.stop.set()
    watch.join()
    facts["upload_seconds"] = time.monotonic() - started
    facts["tmp_seen_during_upload"] = sorted(watch.seen)
    assert answer.status_code == 302, answer.text[:3000]
    job_url = answer.headers["location"]
    job_id = job_url.rstrip("/").rsplit("/", 1)[-1]
    facts["job_url"] = job_url

    # Power w1 off while it runs one of the scan's files.
    deadline = time.monotonic() + SCAN_SECONDS
    victim: tuple[str, list[str]] | None = None
    while time.monotonic() < deadline and victim is None:
        held = _running_on(db, "ti-w1")
        done, total = db.execute(
            "SELECT done, total FROM scan_scanjob WHERE public_id = %s", (job_id,)
        ).fetchone()
        # Mid-scan: w1 has finished files of it already and is running another.
        if held and _finished_on(db, "ti-w1") >= 2 and done < total - 4:
            # Frozen first, so what it holds cannot change between the look and the kill.
            w1 = hosts.hosts["w1"]
            w1.signal(signal.SIGSTOP)
            held = _running_on(db, "ti-w1")
            if not held:  # it finished that file meanwhile: let it take another
                w1.signal(signal.SIGCONT)
                continue
            victim = held[0]
            w1.power_off()
            facts["killed_at"] = time.monotonic()
            facts["done_at_kill"], facts["total"] = done, total
            facts["w1_finished_before_kill"] = _finished_on(db, "ti-w1")
            facts["w1_processes_after_kill"] = hosts.hosts["w1"].pids()
        else:
            time.sleep(0.02)
    assert victim is not None, "w1 was never seen running a file mid-scan\n" + hosts.logs()
    facts["victim_task"], facts["victim_worker"] = victim[0], victim[1][-1]

    # The scan ends on w2 alone; the job page (htmx fragment) is what a browser polls.
    status = ""
    while time.monotonic() < deadline:
        progress = client.get(job_url, headers={"HX-Request": "true"})
        assert progress.status_code == 200, progress.text[:2000]
        status = db.execute(
            "SELECT status FROM scan_scanjob WHERE public_id = %s", (job_id,)
        ).fetchone()[0]
        if status in ("done", "failed"):
            break
        time.sleep(0.5)
    if status != "done":
        held = db.execute(
            "SELECT status, worker_ids FROM django_tasks_database_dbtaskresult "
            "WHERE status IN ('READY', 'RUNNING')"
        ).fetchall()
        pytest.fail(
            f"the scan is {status}, not done, {SCAN_SECONDS} s after its upload; tasks not "
            f"finished: {held}\n{hosts.logs()}"
        )
    facts["scan_seconds"] = time.monotonic() - started
    facts["after_kill_seconds"] = time.monotonic() - facts["killed_at"]
    # Then the search index tasks the scan queued.
    left = -1
    while time.monotonic() < deadline:
        left = db.execute(
            "SELECT count(*) FROM django_tasks_database_dbtaskresult "
            "WHERE status IN ('READY', 'RUNNING')"
        ).fetchone()[0]
        if not left:
            break
        time.sleep(0.5)
    facts["tasks_left"] = left

    facts["job"] = dict(
        zip(
            ("status", "total", "done", "new", "updated", "unchanged", "duplicate", "unreadable"),
            db.execute(
                "SELECT status, total, done, new, updated, unchanged, duplicate, unreadable "
                "FROM scan_scanjob WHERE public_id = %s",
                (job_id,),
            ).fetchone(),
            strict=True,
        )
    )
    facts["scan_files"] = db.execute(
        "SELECT f.path, f.status, f.sha256, t.public_id, t.sha256 FROM scan_scanfile f "
        "JOIN scan_scanjob j ON j.id = f.job_id LEFT JOIN web_transcript t "
        "ON t.id = f.transcript_id WHERE j.public_id = %s ORDER BY f.path",
        (job_id,),
    ).fetchall()
    facts["transcripts"] = db.execute(
        "SELECT t.public_id, t.relative_path, t.sha256 FROM web_transcript t "
        "JOIN web_project p ON p.id = t.project_id WHERE p.slug = %s ORDER BY t.relative_path",
        (PROJECT,),
    ).fetchall()
    facts["scan_tasks"] = db.execute(
        "SELECT id::text, status, worker_ids, args_kwargs FROM django_tasks_database_dbtaskresult "
        "WHERE task_path LIKE %s",
        ("%scan_file",),
    ).fetchall()
    facts["zip"] = _zip_scan(hosts, client, db, deadline)
    facts["stored_objects"] = hosts.stored_objects()
    facts["local_media"] = hosts.local_media()
    facts["web_write_probe"] = hosts.web_write_probe

    # Every page, signed in, on the web host.
    pages: dict[str, tuple[int, str]] = {}
    for public_id, _, _ in facts["transcripts"]:
        page = client.get(f"/t/{public_id}/")
        pages[f"/t/{public_id}/"] = (page.status_code, page.text)
    for path in (
        f"/p/{PROJECT}/",
        f"/p/{PROJECT}/search/?q=Step",
        "/p/",
        "/t/",
        job_url,
    ):
        page = client.get(path)
        pages[path] = (page.status_code, page.text)
    facts["pages"] = pages

    # A full share link of one session, opened by a fresh client from another host.
    public_id, path, _ = facts["transcripts"][0]
    panel = client.post(
        f"/t/{public_id}/share/",
        data={"mode": "full", "expires": "1"},
        headers={"HX-Request": "true", "X-CSRFToken": _csrf(client)},
    )
    assert panel.status_code == 200, panel.text[:2000]
    match = re.search(r"http://[\d.:]+/s/[\w-]{20,}/", panel.text)
    assert match, panel.text[:3000]
    share = match.group(0)
    facts["share"] = {"url": share, "path": path}
    fetched = hosts.in_out(
        sys.executable,
        str(CHECKOUT / "tests" / "multihost" / "fetch.py"),
        share,
        share + "download/original/",
        f"{hosts.base}/t/{public_id}/",
    )
    facts["fresh"] = [orjson.loads(line) for line in fetched.splitlines()]
    # The second web host: the session signed in on the first, and the share link, work there.
    # (Behind one name, as a load balancer puts them, the browser sends it the same cookie.)
    session = f"sessionid={client.cookies['sessionid']}"
    other = httpx.Client(base_url=hosts.base2, timeout=120, headers={"Cookie": session})
    facts["web2_pages"] = {
        path: (page.status_code, page.text)
        for path in (f"/t/{public_id}/", f"/p/{PROJECT}/", f"/p/{PROJECT}/search/?q=Step")
        for page in [other.get(path)]
    }
    other.close()
    share2 = share.replace(hosts.base, hosts.base2)
    fetched = hosts.in_out(
        sys.executable, str(CHECKOUT / "tests" / "multihost" / "fetch.py"), share2
    )
    facts["fresh_web2"] = orjson.loads(fetched)
    client.close()

    # The web host's tree, while it still runs and after it is powered off.
    web = hosts.hosts["web"]
    facts["web_tmp_after"] = sorted(os.listdir(hosts.web_tmp()))
    facts["web_changes_running"] = changes(hosts.web_before, snapshot(web.tree))
    web.power_off()
    facts["web_changes"] = changes(hosts.web_before, snapshot(web.tree))
    facts["web_log_files"] = sorted(p.name for p in web.path("log").iterdir())
    db.close()
    return facts


@pytest.fixture(scope="module")
def facts() -> Iterator[dict[str, Any]]:
    if os.geteuid() != 0:
        pytest.fail("the multi-host test needs root (ip netns, unshare, mount)")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    with cluster(os.environ.get("MULTIHOST_STORAGE", "s3")) as hosts:
        try:
            result = _scenario(hosts)
        except BaseException:
            sys.stderr.write(hosts.logs() + "\n")
            raise
        result["logs"] = hosts.logs()
        sys.stdout.write(summary(result))
        yield result


def summary(facts: dict[str, Any]) -> str:
    """What the run saw, for the terminal (``make multihost`` runs pytest with -s)."""
    finished_by: dict[str, int] = {}
    for _, _, ids, _ in facts["scan_tasks"]:
        host = _host_of(ids[-1])
        finished_by[host] = finished_by.get(host, 0) + 1
    job = facts["job"]
    lines = [
        "",
        f"storage: {facts['storage']}; {len(facts['files'])} files uploaded through "
        f"{address('web')} in {facts['upload_seconds']:.1f} s",
        f"web host TMPDIR (tmpfs) during the upload held: {len(facts['tmp_seen_during_upload'])} "
        f"spooled file(s); after: {len(facts['web_tmp_after'])}",
        f"w1 powered off with {facts['done_at_kill']}/{facts['total']} files done, holding task "
        f"{facts['victim_task']} ({facts['victim_worker']}), {facts['w1_finished_before_kill']} "
        "finished by w1 before; processes left on w1: "
        f"{len(facts['w1_processes_after_kill'])}",
        f"scan {job['status']}: {job['done']}/{job['total']} done, {job['new']} new, "
        f"{job['duplicate']} duplicate, {job['unchanged']} unchanged, {job['unreadable']} "
        f"unreadable, in {facts['scan_seconds']:.1f} s ({facts['after_kill_seconds']:.1f} s "
        "after the kill)",
        f"files finished by: {finished_by}; transcripts: {len(facts['transcripts'])}; "
        f"stored objects: {len(facts['stored_objects'])}",
        "pages: "
        + ", ".join(f"{status}" for status, _ in facts["pages"].values())
        + f" ({len(facts['pages'])} pages)",
        "fresh client on "
        + address("out")
        + ": "
        + ", ".join(
            f"{item['status']} {item['final'].split('/', 3)[-1]}" for item in facts["fresh"]
        ),
        "second web host "
        + address("web2")
        + ": "
        + ", ".join(str(status) for status, _ in facts["web2_pages"].values())
        + f", share link {facts['fresh_web2']['status']}",
        f"zip scan: {facts['zip']['job']}",
        "web host tree changes: " + "; ".join(facts["web_changes"]),
        "",
    ]
    return "\n".join(lines)


def test_worker_host_was_killed_mid_scan_and_its_file_requeued(facts: dict[str, Any]) -> None:
    assert facts["w1_processes_after_kill"] == []
    assert 0 < facts["done_at_kill"] < facts["total"]
    assert facts["w1_finished_before_kill"] >= 2
    tasks = {task: (status, ids) for task, status, ids, _ in facts["scan_tasks"]}
    status, ids = tasks[facts["victim_task"]]
    # Claimed by w1, then (requeued) by w2, which finished it.
    assert ids[0] == facts["victim_worker"] and _host_of(ids[0]) == "ti-w1"
    assert len(ids) >= 2 and _host_of(ids[-1]) == "ti-w2", ids
    assert status == "SUCCESSFUL"


def test_every_file_processed_once(facts: dict[str, Any]) -> None:
    job = facts["job"]
    assert job == {
        "status": "done",
        "total": SESSIONS,
        "done": SESSIONS,
        "new": SESSIONS,
        "updated": 0,
        "unchanged": 0,
        "duplicate": 0,
        "unreadable": 0,
    }
    # One row per file, each stored as new with the uploaded bytes' hash.
    assert {path: sha for path, _, sha, _, _ in facts["scan_files"]} == facts["files"]
    assert {status for _, status, *_ in facts["scan_files"]} == {"new"}
    # One transcript per file: no duplicate from the requeued task.
    transcripts = facts["transcripts"]
    assert sorted(path for _, path, _ in transcripts) == sorted(facts["files"])
    assert {path: sha for _, path, sha in transcripts} == facts["files"]
    # One task per file, each finished.
    assert len(facts["scan_tasks"]) == SESSIONS
    assert {status for _, status, _, _ in facts["scan_tasks"]} == {"SUCCESSFUL"}
    assert facts["tasks_left"] == 0
    # Both worker hosts took part (w1 may have finished none before it was killed).
    claimed = {_host_of(worker) for _, _, ids, _ in facts["scan_tasks"] for worker in ids}
    assert claimed == {"ti-w1", "ti-w2"}


def test_a_zip_scan_is_unpacked_from_storage_by_the_remaining_worker(
    facts: dict[str, Any],
) -> None:
    assert facts["zip"]["job"] == ("done", ZIP_SESSIONS, ZIP_SESSIONS)
    # Paths inside the zip's folder, as a folder scan would record them; the bytes unchanged.
    expected = {name.removeprefix("project/"): sha for name, sha in facts["zip"]["members"].items()}
    found = facts["zip"]["transcripts"]
    assert found in (expected, facts["zip"]["members"]), found


def test_every_page_served(facts: dict[str, Any]) -> None:
    pages = facts["pages"]
    broken = {path: status for path, (status, _) in pages.items() if status != 200}
    assert broken == {}
    for public_id, path, _ in facts["transcripts"]:
        # The name is in the database; the first prompt is read from the stored file.
        assert Path(path).name in pages[f"/t/{public_id}/"][1]
        assert "Step 1:" in pages[f"/t/{public_id}/"][1]
    dashboard = pages[f"/p/{PROJECT}/"][1]
    for name in facts["files"]:
        assert name in dashboard
    search = pages[f"/p/{PROJECT}/search/?q=Step"][1]
    found = set(re.findall(r"/t/([\w-]+)/", search))
    assert found & {public_id for public_id, _, _ in facts["transcripts"]}


def test_share_link_works_from_a_fresh_client_on_another_host(facts: dict[str, Any]) -> None:
    page, original, private = facts["fresh"]
    assert page["status"] == 200 and "Step 1:" in page["text"]
    assert original["status"] == 200
    assert original["sha256"] == facts["files"][facts["share"]["path"]]
    # The same client is not signed in: the owner's page sends it to sign in.
    assert "/login/" in private["final"] or private["status"] in (302, 403, 404)


def test_a_second_web_host_serves_the_same_session_and_share(facts: dict[str, Any]) -> None:
    pages = facts["web2_pages"]
    assert {path: status for path, (status, _) in pages.items()} == dict.fromkeys(pages, 200)
    timeline = next(text for path, (_, text) in pages.items() if path.startswith("/t/"))
    assert "Step 1:" in timeline
    assert facts["fresh_web2"]["status"] == 200 and "Step 1:" in facts["fresh_web2"]["text"]


def test_nothing_written_to_the_web_host_but_logs(facts: dict[str, Any]) -> None:
    assert facts["web_changes"], "the snapshot saw no log either: it is not looking"
    assert [line for line in facts["web_changes"] if not line.startswith("added log/")] == [], (
        facts["web_changes"]
    )
    running = facts["web_changes_running"]
    assert [line for line in running if not line.startswith("added log/")] == [], running
    # Kept so by the kernel, not by luck: the web host's disk is read-only to it.
    code, error = facts["web_write_probe"]
    assert code != 0 and "Read-only file system" in error, facts["web_write_probe"]
    # Django's spooled upload was removed from the tmpfs when the request ended.
    assert facts["web_tmp_after"] == []


def test_uploads_left_nothing_in_storage(facts: dict[str, Any]) -> None:
    # The scan's own upload copies are deleted once scanned; what remains is the stored
    # transcripts (and their cache files), named by the storage, not the scan.
    if facts["storage"] == "s3":
        # Every byte went to the object storage: no host kept a local media folder.
        assert facts["local_media"] == {"web": [], "w1": [], "w2": []}
    leftovers = [name for name in facts["stored_objects"] if "scans/" in name]
    assert leftovers == []
    assert len(facts["stored_objects"]) >= SESSIONS
    assert address("web") in facts["share"]["url"]


def _host_of(worker_id: str) -> str:
    """The host name in a worker's id (``hostname~machine:pid:random``)."""
    return worker_id.split(":")[0].split("~")[0]
