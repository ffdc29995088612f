"""Load test (`make load`): gunicorn on a throw-away PostgreSQL database, 20 users for 30 s.

Creates a database on the PostgreSQL server at --postgres (loopback by
default), migrates it, makes the users and their sessions, and starts
gunicorn (--workers processes of --threads threads) on a free port of
127.0.0.1. A second process then runs the load: each user uploads small
corpus transcripts through the upload form, reads their timelines (a page and
an htmx fragment), lists them, makes share links and opens them without a
session, for --seconds. Every loop is bounded in count and time and every
request has a timeout.

Prints requests per second, p50/p95/p99 latency per kind of request and the
errors; then fetches every upload's original download and compares its
sha256. Exits 1 on any 5xx, transport error, unexpected status or mismatch.
gunicorn is stopped and the database dropped at the end, whatever happened.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from inspector.web.gunicorn import gunicorn_command

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
HOST = "127.0.0.1"
SMALL_FILE = 20 * 1024
REQUEST_TIMEOUT = 30.0
# gunicorn closes a keep-alive connection idle for 2 s (its default); a client
# that reuses it just then gets a closed socket. Browsers retry such requests;
# these users open a new connection instead once theirs has been idle this long.
IDLE_SECONDS = 1.0
MAX_ITERATIONS = 10_000  # per user: the time limit ends the loop long before this
CSRF_SECRET = "loadtestcsrfsecret0123456789abcd"
TROUBLE = re.compile(
    r"\[(ERROR|CRITICAL)\]|WORKER TIMEOUT|Worker exiting|Traceback"
)  # 32 characters, as Django's cookie holds


# --- the orchestrator: database, users, gunicorn, the load, clean-up ---------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--postgres", default="postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()

    server = urlsplit(args.postgres)
    if server.hostname not in ("127.0.0.1", "localhost", "::1"):
        parser.error("--postgres must be on this machine (loopback)")
    pg = [
        "-h",
        server.hostname,
        "-p",
        str(server.port or 5432),
        "-U",
        server.username or "postgres",
    ]
    name = f"inspector_load_{os.getpid()}_{secrets.token_hex(3)}"
    var = Path(tempfile.mkdtemp(prefix="inspector-load-"))
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="inspector.settings",
        DATABASE_URL=f"{args.postgres.rstrip('/')}/{name}",
        INSPECTOR_VAR_DIR=str(var),
        TASKS_BACKEND="database",
        DEBUG="false",
        LOG_LEVEL="WARNING",
    )
    env.pop("INSPECTOR_MEDIA_ROOT", None)
    # SIGTERM (a CI timeout) unwinds through the finally below like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    gunicorn = None
    created = False
    try:
        subprocess.run(["createdb", *pg, name], check=True)
        created = True
        print(f"database {name} on {server.hostname}:{server.port or 5432}", flush=True)
        manage("migrate", "--noinput", "--verbosity", "0", env=env)
        users = json.loads(helper("users", str(args.users), env=env))
        port = free_port()
        log = var / "gunicorn.log"
        gunicorn = start_gunicorn(port, args.workers, args.threads, env, log)
        wait_healthy(port, gunicorn, log)
        print(
            f"gunicorn on {HOST}:{port}: {args.workers} workers x {args.threads} threads "
            f"(gthread); {args.users} users for {args.seconds:g} s; {os.cpu_count()} CPUs",
            flush=True,
        )
        with tempfile.NamedTemporaryFile("w", suffix=".json", dir=var, delete=False) as handle:
            json.dump({"port": port, "seconds": args.seconds, "users": users}, handle)
        # The load comes from a second process, so its threads share no GIL with this one.
        driver = subprocess.run(
            [sys.executable, __file__, "_drive", handle.name],
            check=False,
            stdout=subprocess.PIPE,
            timeout=args.seconds + 600,
        )
        if driver.returncode != 0 or not driver.stdout:
            print(f"the load process failed (exit {driver.returncode})", file=sys.stderr)
            return 1
        result = json.loads(driver.stdout)
        rows = int(helper("count", env=env))
        ok = report(result, rows)
        # A worker killed for a timeout or crashing shows here, not in any status.
        troubles = [line for line in tail(log, 10_000).splitlines() if TROUBLE.search(line)]
        print(f"gunicorn log: {len(troubles)} errors or worker restarts")
        ok = ok and not troubles
        if not ok:
            print("\n--- gunicorn log (last 40 lines) ---\n" + tail(log, 40), file=sys.stderr)
        return 0 if ok else 1
    finally:
        if gunicorn is not None:
            stop(gunicorn)
        if created:
            subprocess.run(["dropdb", *pg, "--force", "--if-exists", name], check=False)
            print(f"dropped database {name}", flush=True)
        shutil.rmtree(var, ignore_errors=True)


def manage(*arguments: str, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "manage.py", *arguments], cwd=REPO, env=env, check=True)


def helper(command: str, *arguments: str, env: dict[str, str]) -> str:
    """Run one of this script's Django-side helpers; returns what it printed."""
    done = subprocess.run(
        [sys.executable, __file__, f"_{command}", *arguments],
        cwd=REPO,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
        text=True,
        timeout=300,
    )
    return done.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def start_gunicorn(
    port: int, workers: int, threads: int, env: dict[str, str], log: Path
) -> subprocess.Popen:
    command = gunicorn_command(
        f"{HOST}:{port}", workers, threads, 60, 10, "--error-logfile", str(log)
    )
    return subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True)


def wait_healthy(port: int, gunicorn: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if gunicorn.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {gunicorn.returncode}:\n{tail(log, 40)}")
        try:
            connection = http.client.HTTPConnection(HOST, port, timeout=2)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer /healthz within 60 s:\n{tail(log, 40)}")


def stop(process: subprocess.Popen) -> None:
    """SIGTERM to gunicorn's master (it stops its workers), SIGKILL to its group if it hangs."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def report(result: dict[str, Any], rows: int) -> bool:
    samples: dict[str, list[float]] = result["latencies"]
    every = sorted(value for values in samples.values() for value in values)
    seconds = result["seconds"]
    print(f"\n{len(every):,} requests in {seconds:.1f} s: {len(every) / seconds:,.1f} requests/s")
    print(f"{'request':<16}{'count':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for kind, values in sorted(samples.items(), key=lambda item: -len(item[1])):
        print(kind_line(kind, sorted(values)))
    print(kind_line("all", every))
    statuses = Counter({int(code): count for code, count in result["statuses"].items()})
    server_errors = sum(count for code, count in statuses.items() if code >= 500)
    print(f"statuses: {dict(sorted(statuses.items()))}")
    print(
        f"errors: {server_errors} 5xx, {len(result['unexpected'])} unexpected statuses, "
        f"{len(result['transport'])} transport errors"
    )
    for problem in (result["unexpected"] + result["transport"])[:10]:
        print(f"  {problem}")
    uploads, checked = result["uploads"], result["verified"]
    print(
        f"uploads: {uploads:,}; retrieved afterwards with the same sha256: {checked:,}; "
        f"transcript rows: {rows:,}; mismatches: {len(result['mismatches'])}"
    )
    for problem in result["mismatches"][:10]:
        print(f"  {problem}")
    ok = (
        server_errors == 0
        and not result["unexpected"]
        and not result["transport"]
        and not result["mismatches"]
        and checked == uploads == rows
    )
    print("OK: no 5xx, nothing lost" if ok else "FAILED")
    return ok


def kind_line(kind: str, values: list[float]) -> str:
    def at(fraction: float) -> float:
        return values[min(len(values) - 1, int(fraction * len(values)))] * 1000

    return (
        f"{kind:<16}{len(values):>8,}{at(0.50):>9.1f}{at(0.95):>9.1f}{at(0.99):>9.1f}"
        f"{values[-1] * 1000:>9.1f}"
    )


# --- Django-side helpers (run with the temp database's settings) -----------


def make_users(count: int) -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.contrib.sessions.backends.db import SessionStore

    users = []
    for number in range(count):
        user = get_user_model().objects.create_user(f"load{number:02d}")
        session = SessionStore()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.save()
        users.append(f"{settings.SESSION_COOKIE_NAME}={session.session_key}")
    print(json.dumps(users))


def count_rows() -> None:
    import django

    django.setup()
    from inspector.web.models import Transcript

    print(Transcript.objects.count())


# --- the load (the second process) -----------------------------------------


def corpus() -> list[tuple[str, bytes]]:
    """Small corpus transcripts of every registered shape (``tests/data/corpus/<NAME>/``)
    that read the same with extra trailing newlines."""
    sys.path.insert(0, str(REPO))
    from inspector import formats
    from tests import testdata

    files = []
    for shape in formats.FORMATS:
        for path in testdata.files(testdata.CORPUS / shape):
            data = testdata.read(path).rstrip()
            if len(data) > SMALL_FILE:
                continue
            try:
                if formats.load(data).format != formats.load(data + b"\n\n").format:
                    continue
            except Exception:  # any file the reader refuses is left out
                continue
            files.append((path.name, data))
    if not files:
        raise SystemExit(f"no small corpus files under {testdata.CORPUS}")
    return files


class User:
    """One simulated person: a keep-alive connection carrying their session."""

    def __init__(self, port: int, cookie: str, stats: Stats) -> None:
        self.port, self.stats = port, stats
        self.cookie = f"{cookie}; csrftoken={CSRF_SECRET}"
        self.connection: http.client.HTTPConnection | None = None
        self.last_used = 0.0
        self.uploads: list[tuple[str, str]] = []  # (public id, sha256)

    def request(
        self,
        kind: str,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
        expect: int = 200,
        signed_in: bool = True,
    ) -> tuple[int, dict[str, str], bytes] | None:
        """One request; ``signed_in=False`` is another person: no cookie, a new connection."""
        headers = dict(headers or {})
        if signed_in:
            headers["Cookie"] = self.cookie
            if method == "POST":
                headers["X-CSRFToken"] = CSRF_SECRET
        if signed_in and self.connection and time.monotonic() - self.last_used > IDLE_SECONDS:
            self.connection.close()
            self.connection = None
        connection = self.connection if signed_in else None
        if connection is None:
            connection = http.client.HTTPConnection(HOST, self.port, timeout=REQUEST_TIMEOUT)
        start = time.perf_counter()
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            self.connection = None if signed_in else self.connection
            self.stats.transport(f"{method} {kind}: {type(error).__name__}: {error}")
            return None
        self.stats.record(kind, time.perf_counter() - start, response.status)
        if signed_in and not response.will_close:
            self.connection, self.last_used = connection, time.monotonic()
        else:
            connection.close()
            if signed_in:
                self.connection = None
        if response.status != expect:
            self.stats.unexpected(f"{method} {kind} {path}: {response.status}, wanted {expect}")
            return None
        return response.status, dict(response.getheaders()), data

    def upload(self, name: str, data: bytes) -> str | None:
        boundary = uuid.uuid4().hex
        body = b"".join(
            [
                f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
                f'filename="{name}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode(),
                data,
                f'\r\n--{boundary}\r\nContent-Disposition: form-data; name="project"\r\n\r\n'
                f"load\r\n--{boundary}--\r\n".encode(),
            ]
        )
        content_type = f"multipart/form-data; boundary={boundary}"
        answer = self.request(
            "upload", "POST", "/upload/", body, {"Content-Type": content_type}, expect=302
        )
        if answer is None:
            return None
        match = re.fullmatch(r"/t/([\w-]+)/", answer[1].get("Location", ""))
        if match is None:
            self.stats.unexpected(f"upload redirected to {answer[1].get('Location')!r}")
            return None
        self.uploads.append((match.group(1), hashlib.sha256(data).hexdigest()))
        return match.group(1)

    def share(self, public_id: str) -> str | None:
        body = b"mode=full&expires=1"
        headers = {"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"}
        answer = self.request("share create", "POST", f"/t/{public_id}/share/", body, headers)
        if answer is None:
            return None
        match = re.search(rb"/s/([\w-]{20,})/", answer[2])
        return match.group(1).decode() if match else None

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()


class Stats:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.statuses: Counter[int] = Counter()
        self.problems: dict[str, list[str]] = {"unexpected": [], "transport": []}

    def record(self, kind: str, seconds: float, status: int) -> None:
        with self.lock:
            self.latencies[kind].append(seconds)
            self.statuses[status] += 1

    def unexpected(self, text: str) -> None:
        with self.lock:
            self.problems["unexpected"].append(text)

    def transport(self, text: str) -> None:
        with self.lock:
            self.problems["transport"].append(text)


def run_user(user: User, files: list[tuple[str, bytes]], offset: int, deadline: float) -> None:
    iteration = 0
    while time.monotonic() < deadline and iteration < MAX_ITERATIONS:
        name, data = files[(offset + iteration) % len(files)]
        # Trailing newlines make each upload new bytes for this user (the same
        # bytes twice give the stored transcript back) and read the same.
        public_id = user.upload(name, data + b"\n" * (iteration // len(files) + 1))
        iteration += 1
        if public_id is None:
            continue
        user.request("timeline", "GET", f"/t/{public_id}/")
        user.request(
            "timeline htmx", "GET", f"/t/{public_id}/?view=repaired", headers={"HX-Request": "true"}
        )
        if iteration % 3 == 0:
            token = user.share(public_id)
            if token is not None:
                user.request("share page", "GET", f"/s/{token}/", signed_in=False)
        if iteration % 5 == 0:
            user.request("list", "GET", "/t/")


def verify(user: User, mismatches: list[str], lock: threading.Lock) -> int:
    """Fetch each of the user's uploads as uploaded and compare its sha256."""
    verified = 0
    for public_id, sha in user.uploads:
        answer = user.request("original", "GET", f"/t/{public_id}/download/original/")
        if answer is not None and hashlib.sha256(answer[2]).hexdigest() == sha:
            verified += 1
        else:
            with lock:
                mismatches.append(f"{public_id}: not retrievable with sha256 {sha}")
    return verified


def drive(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    files = corpus()
    stats = Stats()
    users = [User(config["port"], cookie, stats) for cookie in config["users"]]
    start = time.monotonic()
    deadline = start + config["seconds"]
    threads = [
        threading.Thread(target=run_user, args=(user, files, index * 7, deadline), daemon=True)
        for index, user in enumerate(users)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        # Bounded: past the deadline, a loop only finishes its current iteration.
        thread.join(timeout=config["seconds"] + 10 * REQUEST_TIMEOUT)
    elapsed = time.monotonic() - start
    result: dict[str, Any] = {
        "seconds": elapsed,
        "latencies": dict(stats.latencies),
        "statuses": dict(stats.statuses),
        **stats.problems,
        "uploads": sum(len(user.uploads) for user in users),
    }
    if any(thread.is_alive() for thread in threads):
        stats.transport("a user's loop did not finish in time")
    # Verification is not part of the timed load: its requests are counted apart.
    mismatches: list[str] = []
    lock = threading.Lock()
    counts = [0] * len(users)

    def check(index: int) -> None:
        counts[index] = verify(users[index], mismatches, lock)

    checkers = [threading.Thread(target=check, args=(index,)) for index in range(len(users))]
    for thread in checkers:
        thread.start()
    for thread in checkers:
        thread.join(timeout=600)
    for user in users:
        user.close()
    result |= {"verified": sum(counts), "mismatches": mismatches, **stats.problems}
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        sys.path.insert(0, str(REPO))
        command, arguments = sys.argv[1], sys.argv[2:]
        if command == "_drive":
            drive(*arguments)
        elif command == "_users":
            make_users(int(arguments[0]))
        elif command == "_count":
            count_rows()
        sys.exit(0)
    sys.exit(main())
