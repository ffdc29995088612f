"""`manage.py serve` and `make run` stop as a whole: no worker is left behind.

Each test starts the real command on a free port against a throw-away SQLite
database, waits until it answers /healthz and its worker is polling the queue,
stops it the way a terminal, a service manager or a crash would, and checks
that every process of its tree is gone. The tree is read from Linux's /proc.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MANAGE = REPO / "manage.py"
# Serve gives its worker a few seconds to finish a task; an idle one stops at once.
STOP_WITHIN = 12.0
# How long to wait for gunicorn and the worker to come up before calling it a failure:
# under `make test`'s one pytest worker a core, another test may hold the other core, and
# on a shared machine at load 12 the worker once took more than 45 s to import Django.
# A timeout before declaring failure, not a speed claim (the 413 and stop limits are).
READY_WITHIN = 120.0
TAG_VARIABLE = "INSPECTOR_SERVE_PROCESS_TEST"
# Variables the settings read that would point the processes elsewhere.
SETTINGS_VARIABLES = {
    "DATABASE_URL",
    "TASKS_BACKEND",
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_HSTS_SECONDS",
    "LOG_LEVEL",
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the tree in /proc"),
]

# A process is its pid and its start time (field 22 of /proc/<pid>/stat), so a
# pid reused by an unrelated process is not taken for a leftover.
Process = tuple[int, int]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """State, parent pid and start time, or None once the pid is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[19])


def _alive(process: Process) -> bool:
    # A zombie has stopped; one left unreaped by a container's init is not running.
    stat = _stat(process[0])
    return stat is not None and stat[2] == process[1] and stat[0] != "Z"


def _tree(pid: int) -> set[Process]:
    """``pid`` and every live descendant of it."""
    found: set[Process] = set()
    todo = [pid]
    while todo:
        current = todo.pop()
        stat = _stat(current)
        if stat is None or stat[0] == "Z":
            continue
        found.add((current, stat[2]))
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo.extend(int(child) for child in (task / "children").read_text().split())
            except (FileNotFoundError, ProcessLookupError):
                pass
    return found


def _parent(pid: int) -> int | None:
    stat = _stat(pid)
    return None if stat is None else stat[1]


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except (FileNotFoundError, ProcessLookupError):
        return []


def _tagged(tag: str) -> set[Process]:
    """Every live process whose environment carries ``TAG_VARIABLE=tag``.

    This finds a leftover even if it was never seen in the tree (a worker
    started and orphaned between two looks).
    """
    needle = f"{TAG_VARIABLE}={tag}\0".encode()
    found: set[Process] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        stat = _stat(int(entry.name))
        if needle in b"\0" + environ and stat is not None and stat[0] != "Z":
            found.add((int(entry.name), stat[2]))
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def serve_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a local install in a fresh var dir, migrated."""
    var = tmp_path_factory.mktemp("serve-var")
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in SETTINGS_VARIABLES and not name.startswith("INSPECTOR_")
    }
    env.update(
        INSPECTOR_VAR_DIR=str(var),
        INSPECTOR_MEDIA_ROOT=str(var / "media"),
        DJANGO_SETTINGS_MODULE="inspector.settings",
        PYTHONUNBUFFERED="1",
    )
    subprocess.run(
        [sys.executable, str(MANAGE), "migrate", "--noinput"],
        cwd=var,
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return env


class Run:
    """A started command, its output, and every process of its tree seen so far."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Path, port: int, tag: str) -> None:
        self.proc = proc
        self.log = log
        self.port = port
        self.tag = tag
        self.seen: set[Process] = set()

    def left(self) -> set[Process]:
        return {p for p in self.seen if _alive(p)} | _tagged(self.tag)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def workers(self) -> list[Process]:
        return [p for p in self.seen if "worker" in _cmdline(p[0])]

    def wait_ready(self) -> None:
        """Until /healthz answers 200 and the worker has started polling the queue."""
        deadline = time.monotonic() + READY_WITHIN
        healthy = False
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"exited early:\n{self.output()}"
            self.seen |= _tree(self.proc.pid)
            if not healthy:
                try:
                    url = f"http://127.0.0.1:{self.port}/healthz"
                    with urllib.request.urlopen(url, timeout=2) as response:
                        healthy = response.status == 200
                except OSError:
                    pass
            if healthy and self.workers() and "Starting worker" in self.output():
                return
            time.sleep(0.2)
        pytest.fail(f"not ready within {READY_WITHIN} s:\n{self.output()}")

    def assert_tree_gone(self, within: float) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            left = self.left()
            if not left:
                return
            time.sleep(0.1)
        described = {pid: " ".join(_cmdline(pid)) for pid, _ in left}
        pytest.fail(f"left running: {described}\n{self.output()}")


@contextmanager
def started(command: list[str], env: dict[str, str], tmp_path: Path, port: int) -> Iterator[Run]:
    """Start ``command`` in its own process group, as a shell starts a foreground job.

    Whatever happens in the test, every process of the tree is killed on the way out.
    """
    log = tmp_path / "output.log"
    tag = str(tmp_path)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command,
            cwd=tmp_path,
            env={**env, TAG_VARIABLE: tag},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            process_group=0,
        )
    run = Run(proc, log, port, tag)
    try:
        yield run
    finally:
        if proc.poll() is None:
            run.seen |= _tree(proc.pid)
        for pid, _ in run.left():
            os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.wait()


def serve_command(port: int) -> list[str]:
    return [sys.executable, str(MANAGE), "serve", "--host", "127.0.0.1", "--port", str(port)]


def _stop_and_check(run: Run, send: signal.Signals, *, group: bool) -> None:
    assert run.workers(), run.seen
    if group:
        os.killpg(run.proc.pid, send)
    else:
        run.proc.send_signal(send)
    try:
        run.proc.wait(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {STOP_WITHIN} s after {send.name}:\n{run.output()}")
    run.assert_tree_gone(within=1.0)
    assert "Traceback" not in run.output(), run.output()


def test_sigterm_to_serve_stops_its_worker(serve_env: dict[str, str], tmp_path: Path) -> None:
    # What a service manager or `docker stop` sends to the main process.
    port = _free_port()
    with started(serve_command(port), serve_env, tmp_path, port) as run:
        run.wait_ready()
        _stop_and_check(run, signal.SIGTERM, group=False)
        assert run.proc.returncode == 0, run.output()


def test_ctrl_c_to_serves_process_group_stops_its_worker(
    serve_env: dict[str, str], tmp_path: Path
) -> None:
    # What a terminal does on Ctrl-C: SIGINT to every process of the foreground group.
    port = _free_port()
    with started(serve_command(port), serve_env, tmp_path, port) as run:
        run.wait_ready()
        _stop_and_check(run, signal.SIGINT, group=True)
        assert run.proc.returncode == 0, run.output()


def test_sighup_to_serve_stops_its_worker(serve_env: dict[str, str], tmp_path: Path) -> None:
    # What the terminal's controlling process sends when the terminal goes away.
    port = _free_port()
    with started(serve_command(port), serve_env, tmp_path, port) as run:
        run.wait_ready()
        _stop_and_check(run, signal.SIGHUP, group=False)
        assert run.proc.returncode == 0, run.output()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
def test_worker_stops_when_serve_is_killed_outright(
    serve_env: dict[str, str], tmp_path: Path
) -> None:
    # SIGKILL (or the out-of-memory killer) runs no handler in serve: the kernel
    # tells the worker instead.
    port = _free_port()
    with started(serve_command(port), serve_env, tmp_path, port) as run:
        run.wait_ready()
        workers = run.workers()
        assert workers, run.seen
        run.proc.kill()
        run.proc.wait(timeout=STOP_WITHIN)
        run.assert_tree_gone(within=STOP_WITHIN)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux's")
def test_worker_stops_when_serve_cannot_bind_its_port(
    serve_env: dict[str, str], tmp_path: Path
) -> None:
    # runserver leaves with os._exit(1) when the port is taken: no finally runs.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        with started(serve_command(port), serve_env, tmp_path, port) as run:
            assert run.proc.wait(timeout=READY_WITHIN) == 1, run.output()
            assert "That port is already in use" in run.output()
            run.assert_tree_gone(within=STOP_WITHIN)


@pytest.fixture
def make_run() -> list[str]:
    """`make run` without the port; skips unless this checkout's .venv is installed.

    `make run` installs the venv first, which these tests must not do.
    """
    if shutil.which("make") is None or Path(sys.executable).parent != REPO / ".venv" / "bin":
        pytest.skip("needs make and pytest running from this checkout's .venv")
    check = subprocess.run(
        ["make", "-q", "-C", str(REPO), ".venv/.installed"], capture_output=True, check=False
    )
    if check.returncode != 0:
        pytest.skip("this checkout's .venv is not installed and up to date")
    return ["make", "--no-print-directory", "-C", str(REPO), "run", "HOST=127.0.0.1"]


def test_ctrl_c_to_make_run_stops_everything(
    serve_env: dict[str, str], tmp_path: Path, make_run: list[str]
) -> None:
    port = _free_port()
    with started([*make_run, f"PORT={port}"], serve_env, tmp_path, port) as run:
        run.wait_ready()
        _stop_and_check(run, signal.SIGINT, group=True)


def test_sigterm_to_make_reaches_serve_and_its_worker(
    serve_env: dict[str, str], tmp_path: Path, make_run: list[str]
) -> None:
    # GNU make passes SIGTERM on to the job it is running; the recipe execs serve
    # so that job is serve itself, not a shell that would die and leave serve.
    port = _free_port()
    with started([*make_run, f"PORT={port}"], serve_env, tmp_path, port) as run:
        run.wait_ready()
        serves = [pid for pid, _ in run.seen if "serve" in _cmdline(pid)]
        assert [_parent(pid) for pid in serves] == [run.proc.pid], "serve is not make's child"
        _stop_and_check(run, signal.SIGTERM, group=False)


def test_with_inspector_watch_serve_also_runs_the_watcher_and_stops_it(
    serve_env: dict[str, str], tmp_path: Path
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    env = {**serve_env, "INSPECTOR_WATCH": str(folder)}
    port = _free_port()
    with started(serve_command(port), env, tmp_path, port) as run:
        run.wait_ready()
        deadline = time.monotonic() + READY_WITHIN
        # The watcher says so once it has read what the folder holds.
        while time.monotonic() < deadline and "sessions read" not in run.output():
            run.seen |= _tree(run.proc.pid)
            time.sleep(0.2)
        run.seen |= _tree(run.proc.pid)
        watchers = [p for p in run.seen if "watch" in _cmdline(p[0])]
        assert watchers, run.output()
        _stop_and_check(run, signal.SIGTERM, group=False)
        assert run.proc.returncode == 0, run.output()


def _raw_post(port: int, path: str, length: str) -> tuple[bytes, float]:
    """The status line of a POST that declares ``length`` and sends only a few bytes of body."""
    started_at = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Content-Type: multipart/form-data; boundary=x\r\n"
            f"Content-Length: {length}\r\n\r\n--x\r\n".encode()
        )
        answer = sock.recv(4096)
    return answer.split(b"\r\n", 1)[0], time.monotonic() - started_at


def test_serve_is_gunicorn_and_refuses_a_body_too_large_before_reading_it(
    serve_env: dict[str, str], tmp_path: Path
) -> None:
    port = _free_port()
    with started(serve_command(port), serve_env, tmp_path, port) as run:
        run.wait_ready()
        # The tree as it is now: a worker gunicorn forked may take its title a moment late.
        deadline = time.monotonic() + 10
        while not any("gunicorn" in " ".join(_cmdline(pid)) for pid, _ in run.seen):
            assert time.monotonic() < deadline, {p: _cmdline(p[0]) for p in run.seen}
            run.seen |= _tree(run.proc.pid)
            time.sleep(0.2)
        # 300 MB declared, a few bytes sent: the answer comes without the rest.
        for path in ("/upload/", "/api/transcripts", "/scan/"):
            status, took = _raw_post(port, path, str(3 * 2**40))
            assert status == b"HTTP/1.1 413 Content Too Large", (path, status)
            assert took < 5
        status, _ = _raw_post(port, "/upload/", "1" + "0" * 22)  # 23 digits
        assert status in (b"HTTP/1.1 413 Content Too Large", b"HTTP/1.1 400 Bad Request")
        status, _ = _raw_post(port, "/upload/", "12abc")
        assert status == b"HTTP/1.1 400 Bad Request"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
            assert response.status == 200
        _stop_and_check(run, signal.SIGTERM, group=False)
        assert run.proc.returncode == 0, run.output()


def test_links_printed_while_serve_runs_point_at_the_port_it_serves_on(
    serve_env: dict[str, str], tmp_path: Path
) -> None:
    """``make run PORT=N``, then ``manage.py signin_link`` in another terminal: the link
    opens on port N, not 8000; once serve stops, the default comes back."""
    port = _free_port()
    link_command = [sys.executable, str(MANAGE), "signin_link"]
    with started(serve_command(port), serve_env, tmp_path, port) as run:
        run.wait_ready()
        printed = subprocess.run(
            link_command, cwd=tmp_path, env=serve_env, capture_output=True, text=True, timeout=60
        )
        assert printed.returncode == 0, printed.stderr
        link = printed.stdout.strip()
        assert link.startswith(f"http://127.0.0.1:{port}/signin/"), link
        with urllib.request.urlopen(link, timeout=5) as response:
            assert response.status == 200
        _stop_and_check(run, signal.SIGTERM, group=False)
    after = subprocess.run(
        link_command, cwd=tmp_path, env=serve_env, capture_output=True, text=True, timeout=60
    )
    assert after.stdout.startswith("http://127.0.0.1:8000/"), after.stdout
