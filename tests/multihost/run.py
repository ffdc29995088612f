"""Separate hosts on this machine: network namespaces on one bridge, each a machine of its own.

Each host is a network namespace (``ip netns``, a veth on the bridge, its own
address in 10.233.0.0/24) with its own hostname (UTS namespace), its own
process table (PID namespace: killing its first process powers the whole host
off, every process at once, as a lost machine would) and its own mounts. Each
gets its own tree under the run's temporary folder (``var/``, ``tmp/``,
``home/``, ``log/``) and nothing else of the others:

- ``pg``: a throw-away PostgreSQL cluster (Debian's initdb and pg_ctl, as user
  postgres) listening on its own address only, password authentication;
- ``s3``: moto's S3-compatible server (``python -m moto.server``), the object
  storage (with ``MULTIHOST_STORAGE=shared`` a folder all hosts mount stands in);
- ``web``: gunicorn (``inspector.web.gunicorn.gunicorn_command``, the command
  ``manage.py serve`` runs), with every filesystem read-only but its log folder,
  the object storage (shared mode only) and a tmpfs for ``TMPDIR``: a write
  anywhere else fails with EROFS, and the snapshot of its tree before and after
  shows what changed; ``web2``, a second one alike, serves the same sessions;
- ``w1``, ``w2``: one ``manage.py worker`` each;
- ``out``: a namespace with nothing in it but a fresh client for share links.

The machine running this (the root namespace) holds the bridge's first
address and drives the scenario over HTTP like a browser would. Only one run
at a time (a lock): the subnet is fixed. Everything is removed on the way out,
failure included (namespaces, bridge, processes, folders).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SUBNET = "10.233.0"
ROOT_ADDRESS = f"{SUBNET}.1"
ADDRESSES = {"pg": 2, "s3": 3, "web": 10, "web2": 13, "w1": 11, "w2": 12, "out": 20}
WEB_PORT = 8000
S3_PORT = 5000
PG_PORT = 5432
BUCKET = "inspector-multihost"
LOCK = Path("/run/lock/ti-multihost.lock")
# Each worker beats this often; a worker missing three beats is dead.
BEAT_SECONDS = 1


def address(host: str) -> str:
    return f"{SUBNET}.{ADDRESSES[host]}"


def run(*command: str, check: bool = True, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, check=check, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def postgres_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL's initdb is not installed (apt-get install postgresql)")
    return found[-1].parent


@dataclass
class Host:
    name: str
    namespace: str
    tree: Path
    init: subprocess.Popen[bytes] | None = None
    pid1: int = 0  # the host's first process, as the root namespace numbers it
    services: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def address(self) -> str:
        return address(self.name)

    def path(self, part: str) -> Path:
        return self.tree / part

    def enter(self, wd: Path | None = None) -> list[str]:
        """The prefix that runs a command inside this host (all of its namespaces).

        From the checkout, unless ``wd``: postgres cannot enter a checkout in a
        private folder (CI's clone is in a mode-700 one).
        """
        return [
            "nsenter",
            f"--target={self.pid1}",
            "--net",
            "--uts",
            "--mount",
            "--pid",
            f"--wd={wd or CHECKOUT}",
            "--",
        ]

    def pids(self) -> list[int]:
        """Every process of this host: those in its network namespace."""
        answer = run("ip", "netns", "pids", self.namespace, check=False)
        return [int(pid) for pid in answer.stdout.split()]

    def signal(self, signum: int) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def power_off(self) -> None:
        """Every process of the host at once, as if the machine were lost."""
        if self.pid1:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid1, signal.SIGKILL)
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        for process in [self.init, *self.services]:
            if process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)


class Cluster:
    """The hosts, their network and the services on them; ``close()`` removes all of it."""

    def __init__(self, storage: str = "s3", files_dir: Path | None = None) -> None:
        if storage not in ("s3", "shared"):
            raise ValueError(f"storage is 's3' or 'shared', not {storage!r}")
        self.storage = storage
        self.run_id = secrets.token_hex(2)
        self.prefix = f"ti-mh{self.run_id}"
        self.bridge = f"timh{self.run_id}br"
        self.root = Path(tempfile.mkdtemp(prefix="ti-multihost-"))
        self.root.chmod(0o755)  # postgres must reach its data folder
        self.hosts: dict[str, Host] = {}
        self.secret_key = secrets.token_urlsafe(50)
        self.pg_password = secrets.token_urlsafe(16)
        self.aws_key = "multihost-" + secrets.token_hex(4)
        self.aws_secret = secrets.token_urlsafe(24)
        self.lock_handle = None
        self.notes: list[str] = []

    # --- the whole thing ---------------------------------------------------

    def start(self) -> None:
        self._lock()
        self._network()
        self._start_postgres()
        if self.storage == "s3":
            self._start_s3()
        else:
            (self.root / "mounted-media").mkdir(parents=True)
        self._prepare_database()
        self._start_web()
        # A second web host, to show that they share nothing but the database and storage.
        self._start_web("web2", processes=1)
        self._start_worker("w1")
        self._start_worker("w2")

    def close(self) -> None:
        for name in ("web", "web2", "w1", "w2", "s3", "out"):
            host = self.hosts.get(name)
            if host is not None:
                host.power_off()
        pg = self.hosts.get("pg")
        if pg is not None and pg.pid1 and pg.pids():
            self._pg_ctl(pg, "stop", "-m", "immediate", check=False)
            pg.power_off()
        for host in self.hosts.values():
            run("ip", "netns", "delete", host.namespace, check=False)
        run("ip", "link", "delete", self.bridge, check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        if self.lock_handle is not None:
            self.lock_handle.close()

    def _lock(self) -> None:
        LOCK.parent.mkdir(parents=True, exist_ok=True)
        handle = LOCK.open("w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            handle.close()
            raise RuntimeError(f"another multi-host run holds {LOCK}") from error
        self.lock_handle = handle
        # What a run killed outright (no finally) left: ours only, by prefix, under the lock.
        for line in run("ip", "netns", "list").stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith("ti-mh"):
                for pid in run("ip", "netns", "pids", name, check=False).stdout.split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(pid), signal.SIGKILL)
                run("ip", "netns", "delete", name, check=False)
        for line in run("ip", "-o", "link", "show", "type", "bridge").stdout.splitlines():
            name = line.split(":")[1].strip().split("@")[0]
            if name.startswith("timh"):
                run("ip", "link", "delete", name, check=False)

    # --- network and hosts ----------------------------------------------------

    def _network(self) -> None:
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "addr", "add", f"{ROOT_ADDRESS}/24", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for name in ADDRESSES:
            namespace = f"{self.prefix}-{name}"
            tree = self.root / name
            for part in ("var", "tmp", "home", "log"):
                (tree / part).mkdir(parents=True)
            host = Host(name, namespace, tree)
            self.hosts[name] = host
            outside, inside = f"timh{self.run_id}{name}", f"timh{self.run_id}{name}i"
            run("ip", "netns", "add", namespace)
            run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            run("ip", "link", "set", inside, "netns", namespace)
            run("ip", "link", "set", outside, "master", self.bridge)
            run("ip", "link", "set", outside, "up")
            run("ip", "-n", namespace, "link", "set", inside, "name", "eth0")
            run("ip", "-n", namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            run("ip", "-n", namespace, "link", "set", "eth0", "up")
            run("ip", "-n", namespace, "link", "set", "lo", "up")

    def _boot(self, host: Host, mounts: str = "") -> None:
        """Start the host's first process: its hostname, its mounts, then it sleeps."""
        script = f"hostname ti-{host.name} && {mounts}exec sleep infinity"
        command = ["ip", "netns", "exec", host.namespace]
        command += ["unshare", "--uts", "--pid", "--mount", "--fork", "--mount-proc"]
        command += ["sh", "-c", script]
        log = (host.path("log") / "init.log").open("wb")
        host.init = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            children = Path(f"/proc/{host.init.pid}/task/{host.init.pid}/children")
            with contextlib.suppress(OSError):
                pids = children.read_text().split()
                if pids:
                    pid = int(pids[0])
                    # Ready once it is sleeping: the hostname and mounts are done.
                    if Path(f"/proc/{pid}/comm").read_text().strip() == "sleep":
                        host.pid1 = pid
                        return
            if host.init.poll() is not None:
                break
            time.sleep(0.02)
        raise RuntimeError(f"host {host.name} did not boot: {self._tail(host, 'init.log')}")

    def _spawn(
        self, host: Host, log: str, *command: str, env: dict[str, str], wd: Path | None = None
    ) -> None:
        handle = (host.path("log") / log).open("ab")
        process = subprocess.Popen(
            [*host.enter(wd), "env", "-i", *(f"{k}={v}" for k, v in env.items()), *command],
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=handle,
        )
        host.services.append(process)

    def _in(
        self, host: Host, *command: str, env: dict[str, str] | None = None, wd: Path | None = None
    ) -> str:
        prefix = ["env", "-i", *(f"{k}={v}" for k, v in (env or {}).items())] if env else []
        answer = run(*host.enter(wd), *prefix, *command, check=False)
        if answer.returncode:
            raise RuntimeError(
                f"on {host.name}: {' '.join(command)} failed ({answer.returncode}):\n"
                f"{answer.stdout[-3000:]}\n{answer.stderr[-3000:]}"
            )
        return answer.stdout

    @staticmethod
    def _tail(host: Host, log: str, lines: int = 40) -> str:
        try:
            text = (host.path("log") / log).read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # --- PostgreSQL ----------------------------------------------------------

    def _pg_ctl(self, host: Host, *arguments: str, check: bool = True) -> None:
        data = host.path("var") / "data"
        command = [
            *host.enter(host.tree),
            "runuser",
            "-u",
            "postgres",
            "--",
            str(postgres_bin() / "pg_ctl"),
            "-D",
            str(data),
            *arguments,
        ]
        run(*command, check=check)

    def _start_postgres(self) -> None:
        host = self.hosts["pg"]
        self._boot(host)
        for part in ("var", "log", "tmp"):
            shutil.chown(host.path(part), "postgres", "postgres")
        password_file = host.path("tmp") / "password"
        password_file.write_text(self.pg_password)
        shutil.chown(password_file, "postgres", "postgres")
        self._in(
            host,
            "runuser",
            "-u",
            "postgres",
            "--",
            str(postgres_bin() / "initdb"),
            "-D",
            str(host.path("var") / "data"),
            "--auth-local=peer",
            "--auth-host=scram-sha-256",
            f"--pwfile={password_file}",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            wd=host.tree,
        )
        password_file.unlink()
        data = host.path("var") / "data"
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {SUBNET}.0/24 scram-sha-256\n")
        options = (
            f"-c listen_addresses={host.address} -c port={PG_PORT} "
            f"-c unix_socket_directories={host.path('tmp')} -c fsync=off "
            "-c max_connections=60"
        )
        self._pg_ctl(
            host, "-l", str(host.path("log") / "postgres.log"), "-o", options, "-w", "start"
        )
        self._in(
            host,
            "runuser",
            "-u",
            "postgres",
            "--",
            str(postgres_bin() / "createdb"),
            "-h",
            str(host.path("tmp")),
            "inspector",
            wd=host.tree,
        )

    @property
    def database_url(self) -> str:
        return f"postgres://postgres:{self.pg_password}@{address('pg')}:{PG_PORT}/inspector"

    # --- object storage --------------------------------------------------------

    def _start_s3(self) -> None:
        host = self.hosts["s3"]
        self._boot(host)
        env = {"PATH": "/usr/bin:/bin", "HOME": str(host.path("home"))}
        env["TMPDIR"] = str(host.path("tmp"))
        self._spawn(
            host,
            "moto.log",
            PYTHON,
            "-m",
            "moto.server",
            "-H",
            host.address,
            "-p",
            str(S3_PORT),
            env=env,
            wd=host.tree,
        )
        self._wait_http(host, f"http://{host.address}:{S3_PORT}/", "moto.log", accept=range(600))
        import boto3  # moto[server] brings it; the harness only, never the app

        self.s3().create_bucket(Bucket=BUCKET)
        del boto3

    def s3(self):  # type: ignore[no-untyped-def]
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=f"http://{address('s3')}:{S3_PORT}",
            region_name="us-east-1",
            aws_access_key_id=self.aws_key,
            aws_secret_access_key=self.aws_secret,
        )

    def stored_objects(self) -> list[str]:
        if self.storage != "s3":
            media = self.root / "mounted-media"
            return sorted(str(p.relative_to(media)) for p in media.rglob("*") if p.is_file())
        names: list[str] = []
        for page in self.s3().get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
            names += [item["Key"] for item in page.get("Contents", [])]
        return sorted(names)

    # --- the app's hosts ----------------------------------------------------------

    def app_env(self, host: Host) -> dict[str, str]:
        env = {
            "PATH": f"{Path(PYTHON).parent}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(host.path("home")),
            "TMPDIR": str(host.path("tmp")),
            "INSPECTOR_VAR_DIR": str(host.path("var")),
            "DJANGO_SETTINGS_MODULE": "inspector.settings",
            "SECRET_KEY": self.secret_key,
            "DATABASE_URL": self.database_url,
            "ALLOWED_HOSTS": f"{address('web')},{address('web2')}",
            "INSPECTOR_WORKER_BEAT_SECONDS": str(BEAT_SECONDS),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
        if self.storage == "s3":
            env |= {
                "INSPECTOR_S3_BUCKET": BUCKET,
                "INSPECTOR_S3_ENDPOINT_URL": f"http://{address('s3')}:{S3_PORT}",
                "INSPECTOR_S3_REGION": "us-east-1",
                "INSPECTOR_S3_PREFIX": f"run-{self.run_id}",
                "AWS_ACCESS_KEY_ID": self.aws_key,
                "AWS_SECRET_ACCESS_KEY": self.aws_secret,
            }
        else:
            env["INSPECTOR_MEDIA_ROOT"] = str(self.root / "mounted-media")
        return env

    def _prepare_database(self) -> None:
        """Migrations and the user, from a worker host (as an operator would, from any host)."""
        host = self.hosts["w1"]
        self._boot(host)
        env = self.app_env(host)
        self._in(host, PYTHON, "manage.py", "migrate", "--noinput", env=env)
        env["DJANGO_SUPERUSER_PASSWORD"] = self.password
        self._in(
            host,
            PYTHON,
            "manage.py",
            "createsuperuser",
            "--noinput",
            "--username",
            self.username,
            "--email",
            "alice@example.com",
            env=env,
        )

    username = "alice"
    password = "multihost-" + secrets.token_urlsafe(12)

    def web_prepare(self, host: Host) -> None:
        """A web host's install step: Django's checks, which make its empty var/static."""
        self._in_root(host, PYTHON, "manage.py", "check", "--deploy", "--fail-level", "ERROR")

    def _in_root(self, host: Host, *command: str) -> None:
        env = self.app_env(host)
        answer = run(
            "ip",
            "netns",
            "exec",
            host.namespace,
            "env",
            "-i",
            *(f"{k}={v}" for k, v in env.items()),
            *command,
            check=False,
            cwd=CHECKOUT,
        )
        if answer.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{answer.stdout}\n{answer.stderr}")

    def _start_web(self, name: str = "web", processes: int = 2) -> None:
        host = self.hosts[name]
        self.web_prepare(host)
        if name == "web":
            self.web_before = snapshot(host.tree)
        # Read-only everywhere but its log folder (and, in shared mode, the storage's
        # mount); TMPDIR, where Django spools uploads over FILE_UPLOAD_MAX_MEMORY_SIZE,
        # is memory.
        writable = [host.path("log")]
        if self.storage == "shared":
            writable.append(self.root / "mounted-media")
        mounts = "".join(f"mount --bind {p} {p} && " for p in writable)
        mounts += f"mount -t tmpfs -o size=1g,mode=1777 tmpfs {host.path('tmp')} && "
        mounts += "mount -o remount,bind,ro / && "
        self._boot(host, mounts)
        from inspector.web.gunicorn import gunicorn_command

        command = gunicorn_command(f"{host.address}:{WEB_PORT}", processes, 4, 120, 8)
        self._spawn(host, "gunicorn.log", *command, env=self.app_env(host))
        self._wait_http(host, f"http://{host.address}:{WEB_PORT}/healthz", "gunicorn.log")
        if name != "web":
            return
        # The read-only mount holds: a write into its own var/ is refused.
        probe = run(*host.enter(), "touch", str(host.path("var") / "probe"), check=False)
        self.web_write_probe = (probe.returncode, probe.stderr.strip())

    web_write_probe: tuple[int, str] = (0, "")

    def local_media(self) -> dict[str, list[str]]:
        """Files under each app host's own media folder (none when the storage is S3)."""
        found = {}
        for name in ("web", "w1", "w2"):
            media = self.hosts[name].path("var") / "media"
            found[name] = sorted(str(p) for p in media.rglob("*") if p.is_file())
        return found

    @property
    def base(self) -> str:
        return f"http://{address('web')}:{WEB_PORT}"

    @property
    def base2(self) -> str:
        return f"http://{address('web2')}:{WEB_PORT}"

    def _start_worker(self, name: str) -> None:
        host = self.hosts[name]
        if not host.pid1:
            self._boot(host)
        self._spawn(
            host,
            "worker.log",
            PYTHON,
            "manage.py",
            "worker",
            "--queue-name",
            "*",
            "--no-reload",
            "--no-startup-delay",
            env=self.app_env(host),
        )

    def web_tmp(self) -> Path:
        """The web host's TMPDIR (its tmpfs), seen from here through its first process."""
        host = self.hosts["web"]
        return Path(f"/proc/{host.pid1}/root") / host.path("tmp").relative_to("/")

    def boot_out(self) -> Host:
        host = self.hosts["out"]
        if not host.pid1:
            self._boot(host)
        return host

    def in_out(self, *command: str) -> str:
        host = self.boot_out()
        env = {"PATH": "/usr/bin:/bin", "HOME": str(host.path("home"))}
        env["TMPDIR"] = str(host.path("tmp"))
        return self._in(host, *command, env=env)

    def _wait_http(
        self, host: Host, url: str, log: str, accept: range = range(200, 300), seconds: float = 90
    ) -> None:
        import httpx

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in host.services):
                break
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url, timeout=2).status_code in accept:
                    return
            time.sleep(0.25)
        raise RuntimeError(f"{url} on {host.name} never answered:\n{self._tail(host, log)}")

    def logs(self) -> str:
        parts = []
        for host in self.hosts.values():
            for log in sorted(host.path("log").glob("*.log")):
                parts.append(f"--- {host.name}/{log.name}\n{self._tail(host, log.name, 30)}")
        return "\n".join(parts)


@contextlib.contextmanager
def cluster(storage: str = "s3") -> Iterator[Cluster]:
    hosts = Cluster(storage)
    previous = signal.getsignal(signal.SIGTERM)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # unwinds through the finally below

    signal.signal(signal.SIGTERM, stop)
    try:
        hosts.start()
        yield hosts
    finally:
        hosts.close()
        signal.signal(signal.SIGTERM, previous)


def snapshot(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``root``: its kind, size and content hash (files), by relative path."""
    entries: dict[str, tuple[str, int, str]] = {}
    for path in sorted(root.rglob("*")):
        relative = str(path.relative_to(root))
        if path.is_symlink():
            entries[relative] = ("link", 0, os.readlink(path))
        elif path.is_dir():
            entries[relative] = ("dir", 0, "")
        else:
            data = path.read_bytes()
            entries[relative] = ("file", len(data), hashlib.sha256(data).hexdigest())
    return entries


def changes(before: dict, after: dict) -> list[str]:
    """What differs between two snapshots, one line per path."""
    lines = []
    for path in sorted(before.keys() | after.keys()):
        if path not in before:
            lines.append(f"added {path}")
        elif path not in after:
            lines.append(f"removed {path}")
        elif before[path] != after[path]:
            lines.append(f"changed {path}")
    return lines
