"""Run the web server and one task worker together (what `make run` does).

The web server is gunicorn (a production WSGI server: it hands a view the
request body unread, so a refused upload is never read into memory, and it
answers a malformed request itself), with ``INSPECTOR_WEB_WORKERS`` processes
of ``INSPECTOR_WEB_THREADS`` threads. Serve binds the port itself, so a port
in use is one clear sentence, and gives gunicorn the listening socket.

On the first start it creates the owner account; every start prints a fresh
one-time sign-in link for it.

They stop together. SIGINT (Ctrl-C), SIGTERM (a service manager, a container
stop) and SIGHUP (the terminal closed) stop the server (gunicorn's graceful
stop: requests in flight finish) and then the worker: one SIGTERM, a few
seconds to finish the task it is running, then SIGKILL; serve then exits with
status 0. A second signal meanwhile kills them at once. If serve dies without
running its handlers (SIGKILL, the out-of-memory killer), Linux sends gunicorn
and the worker SIGTERM itself. If gunicorn stops on its own, serve stops the
worker and exits with gunicorn's status.
"""

from __future__ import annotations

import ctypes
import errno
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from inspector.web import address
from inspector.web.gunicorn import gunicorn_command
from inspector.web.signin import ensure_owner, signin_path
from inspector.web.store import sweep_orphans

# How long a stopping worker may take to finish its task before it is killed;
# a later worker queues a killed task again (see the worker command). Under
# `docker stop`'s 10 s default, so serve is done before Docker kills it.
WORKER_GRACE_SECONDS = 8.0
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class _Stop(BaseException):
    """Raised in the main thread by a stop signal, to unwind runserver's loop.

    A BaseException, like KeyboardInterrupt, so no ``except Exception`` on the
    way catches it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _worker_preexec() -> Callable[[], None]:
    """What the worker's forked child runs before it execs.

    Ignoring SIGTTOU lets the worker write to the terminal from its own process
    group even under ``stty tostop``. On Linux the kernel's parent-death signal
    ties the worker to serve: chosen over the worker polling its parent's pid
    because it needs no code in the worker, no polling delay, and it already
    holds while the worker's Python is starting. It fires when the thread that
    forked the worker ends; that is serve's main thread, which lives as long as
    serve does. A serve that died between fork and prctl is caught by
    comparing the parent pid afterwards.
    """
    parent = os.getpid()
    prctl: Callable[..., int] | None = None
    if sys.platform.startswith("linux"):
        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            prctl = None

    def preexec() -> None:
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGTERM), 0, 0, 0)
            if os.getppid() != parent:
                os._exit(1)

    return preexec


def start_child(*arguments: str, pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """``manage.py ARGUMENTS`` with this interpreter, from any cwd, tied to serve.

    It runs in a process group of its own, so a terminal's Ctrl-C (SIGINT to
    the foreground group: make and serve) does not reach it: it hears only
    serve's one SIGTERM. db_worker takes a second signal as "abandon the
    running task", and SIGINT during its start-up would print a traceback.
    """
    # A fixed command line: nothing in it comes from input.
    command = [sys.executable, str(settings.BASE_DIR / "manage.py"), *arguments]
    return _start(command, pass_fds)


def _start(command: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    return subprocess.Popen(  # noqa: S603
        command,
        stdin=subprocess.DEVNULL,
        process_group=0,
        pass_fds=pass_fds,
        # preexec_fn is unsafe in a process with threads; serve has only its
        # main thread.
        preexec_fn=_worker_preexec(),
    )


class PortInUse(Exception):
    pass


def listen(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound here so a taken port is serve's own clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise PortInUse(f"That port is already in use: {host}:{port}.") from error
        raise
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def start_web(sock: socket.socket) -> subprocess.Popen[bytes]:
    """gunicorn on ``sock``: ``INSPECTOR_WEB_WORKERS`` processes of ``INSPECTOR_WEB_THREADS``."""
    command = gunicorn_command(
        f"fd://{sock.fileno()}",
        settings.INSPECTOR_WEB_WORKERS,
        settings.INSPECTOR_WEB_THREADS,
        # A big upload's diagnosis runs in the request; the upload limit bounds it.
        settings.INSPECTOR_WEB_TIMEOUT_SECONDS,
        int(WORKER_GRACE_SECONDS),
    )
    return _start(command, (sock.fileno(),))


def start_worker() -> subprocess.Popen[bytes]:
    """``manage.py worker`` on every queue. No autoreloader: its extra child would outlive it."""
    return start_child("worker", "--queue-name", "*", "--no-reload")


def start_watcher() -> subprocess.Popen[bytes]:
    """``manage.py watch`` on the folders ``INSPECTOR_WATCH`` names."""
    return start_child("watch")


def stop_worker(worker: subprocess.Popen[bytes], grace: float = WORKER_GRACE_SECONDS) -> None:
    if worker.poll() is not None:
        return
    worker.terminate()
    try:
        worker.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


class Command(BaseCommand):
    help = (
        "Serve the app on HOST:PORT through gunicorn with one task worker beside it (and a "
        "watcher of the folders INSPECTOR_WATCH names, if any)."
    )
    web: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    watcher: subprocess.Popen[bytes] | None = None
    stopping = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-worker", action="store_true", help="do not start a task worker")

    def handle(self, *args: Any, host: str, port: int, no_worker: bool, **options: Any) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_stop_signal)
        status = 0
        try:
            status = self._serve(host, port, no_worker)
        except PortInUse as error:
            self.stderr.write(str(error))
            status = 1
        except _Stop as stop:
            name = signal.Signals(stop.signum).name
            self.stdout.write(f"\n{name}: stopping the server and the worker.")
        finally:
            address.forget()
            self.stopping = True
            # The server first, so no request starts a task the worker would not take.
            for child in (self.web, self.watcher, self.worker):
                if child is not None:
                    stop_worker(child)
        if status:
            sys.exit(status)

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        if not self.stopping:
            self.stopping = True
            raise _Stop(signum)
        # Asked again while the worker finishes its task: do not wait for it.
        for child in (self.web, self.watcher, self.worker):
            if child is not None:
                child.kill()

    def _serve(self, host: str, port: int, no_worker: bool) -> int:
        """Gunicorn's exit status, if it stops by itself."""
        # A server killed mid-upload may have left stored bytes without a row.
        sweep_orphans(settings.INSPECTOR_ORPHAN_GRACE_SECONDS)
        sock = listen(host, port)
        owner, created = ensure_owner()
        if created:
            self.stdout.write(f"Created the owner account '{owner.get_username()}'.")
        base = address.url_for(host, port)
        address.record(base)  # the links signin_link and scan print point here
        self.stdout.write(
            self.style.SUCCESS(
                f"\nSign in (one-time link, valid 15 minutes):\n  {base}{signin_path(owner)}\n"
            )
        )
        self.stdout.write(
            f"Then open {base}/ and drop a transcript on the page.\n"
            "Ctrl-C stops the server and the worker.\n"
        )
        if not no_worker:
            self.worker = start_worker()
        if settings.INSPECTOR_WATCH:
            self.stdout.write(f"Watching {', '.join(settings.INSPECTOR_WATCH)} for sessions.\n")
            self.watcher = start_watcher()
        self.web = start_web(sock)
        sock.close()  # gunicorn holds it now
        status = self.web.wait()
        self.stderr.write(f"The server stopped by itself (status {status}).")
        return status or 1
