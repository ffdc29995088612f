"""Where a scan worker's CPU goes: CPU-seconds per 1,000 files for each stage.

Generates a tree (as ``bench_scan.py`` does), queues a real scan of it on a
fresh SQLite database (or, with DATABASE_URL, a fresh PostgreSQL database),
then runs one real worker (``manage.py worker --batch``) in this process with
each stage's functions wrapped by a timer of this thread's CPU time. Each
stage counts its own time only (what a stage inside it took is that stage's),
so the rows add up to the worker's CPU. Not a benchmark of the whole command:
the queueing and the summary are left out.

    python bench/profile_scan.py --files 300 --mb 150
    python bench/profile_scan.py --files 300 --mb 150 --cprofile /tmp/worker.prof
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scan import REPO, fresh_database, generate

# (stage, "module:attribute" or "module:Class.attribute") in the order the table prints.
STAGES: list[tuple[str, str]] = [
    (
        "task queue: claim, poll, results",
        "django_tasks_db.management.commands.db_worker:Worker.run",
    ),
    (
        "task queue: claim, poll, results",
        "django_tasks_db.management.commands.db_worker:Worker.run_task",
    ),
    ("task queue: enqueue", "django.tasks.base:Task.enqueue"),
    ("reading the file", "inspector.scan.tasks:_read"),
    ("sha256 and session start", "hashlib:sha256"),
    ("sha256 and session start", "inspector.scan.tasks:session_start"),
    ("memory estimate", "inspector.web.store:check_memory"),
    ("diagnosis", "inspector.web.store:diagnose_file"),
    ("cache file: encode", "inspector.diagnosis.stored:encode"),
    ("zstd compression", "inspector.web.store:_compress"),
    ("storage writes", "inspector.web.store:_write"),
    ("database: scan rows", "inspector.web.store:_existing"),
    ("database: scan rows", "inspector.web.store:_inserted"),
    ("database: scan rows", "inspector.scan.tasks:_place"),
    ("database: scan rows", "inspector.scan.tasks:_finish"),
    ("database: scan rows", "inspector.scan.tasks:complete_if_done"),
    ("database: scan rows", "inspector.scan.tasks:_record"),
    ("database: scan rows", "inspector.web.store:_copy_or_diagnose"),
    ("index: read the cache file", "inspector.web.store:get_page_diagnosis"),
    ("index: rows as shown", "inspector.search.fulltext:shown_row"),
    ("index: credential masking", "inspector.search.fulltext:mask"),
    ("index: row text (the rest)", "inspector.search.fulltext:row_text"),
    ("index: database writes", "inspector.search.fulltext:index_rows"),
    ("index: database writes", "inspector.search.fulltext:index_entries"),
    ("index: database writes", "inspector.search.fulltext:index_many"),
    ("index: row text (the rest)", "inspector.search.fulltext:_batches"),
]

spent: dict[str, float] = defaultdict(float)
calls: dict[str, int] = defaultdict(int)
_stack: list[list[float]] = []  # per open stage: [children's time]


def timed(stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
    clock = time.thread_time

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _stack.append([0.0])
        began = clock()
        try:
            return function(*args, **kwargs)
        finally:
            total = clock() - began
            children = _stack.pop()[0]
            spent[stage] += total - children
            calls[stage] += 1
            if _stack:
                _stack[-1][0] += total

    return wrapper


def timed_generator(stage: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """A generator's own time counts each time it is resumed."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        inner = function(*args, **kwargs)
        step = timed(stage, lambda: next(inner))
        while True:
            try:
                item = step()
            except StopIteration:
                return
            yield item

    return wrapper


def wrap_all() -> None:
    import inspect

    for stage, where in STAGES:
        module_name, _, attribute = where.partition(":")
        module = importlib.import_module(module_name)
        owner: Any = module
        *path, name = attribute.split(".")
        for part in path:
            owner = getattr(owner, part)
        original = getattr(owner, name, None)
        if original is None:  # not in this version of the code
            continue
        wrapping = timed_generator if inspect.isgeneratorfunction(original) else timed
        setattr(owner, name, wrapping(stage, original))
    # Each task's own remainder, by task.
    from django.tasks.base import Task

    call = Task.call

    def task_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        return timed(f"task {self.name} (the rest)", call)(self, *args, **kwargs)

    Task.call = task_call  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--mb", type=int, default=150)
    parser.add_argument("--tree", help="scan this folder instead of a generated one")
    parser.add_argument("--cprofile", help="also write a cProfile of the worker here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="profile-scan-") as temp:
        work = Path(temp)
        if args.tree:
            tree = Path(args.tree)
        else:
            tree = work / "tree"
            generate(tree, args.files, args.mb)
        size = sum(p.stat().st_size for p in tree.rglob("*") if p.is_file())
        with fresh_database(work, "profile") as url:
            env = dict(os.environ, TASKS_BACKEND="database", DATABASE_URL=url)
            env["DJANGO_SETTINGS_MODULE"] = "inspector.settings"
            env["INSPECTOR_VAR_DIR"] = str(work / "profile")
            env["INSPECTOR_MEDIA_ROOT"] = str(work / "profile" / "media")
            (work / "profile").mkdir(exist_ok=True)
            run = functools.partial(subprocess.run, cwd=REPO, env=env, check=True)
            run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"])
            # Queue the scan (what `scan --workers N` does before starting workers).
            run([sys.executable, "-c", QUEUE, str(tree)])
            os.environ.update(env)
            profile(size, args.cprofile)


QUEUE = """
import sys, django
from pathlib import Path
django.setup()
from inspector.scan.jobs import folder_job
from inspector.scan.tasks import start
from inspector.web.signin import ensure_owner
from inspector.web.store import project_for
owner, _ = ensure_owner()
job, found = folder_job(owner, project_for(owner, "profile"), Path(sys.argv[1]))
start(job, found)
"""


def profile(size: int, cprofile: str | None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inspector.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.management import call_command

    from inspector.scan.models import ScanJob

    wrap_all()
    began_wall, began_cpu = time.perf_counter(), time.thread_time()
    options = {"batch": True, "startup_delay": False, "reload": False, "verbosity": 0}
    if cprofile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.runcall(call_command, "worker", **options)
        profiler.dump_stats(cprofile)
    else:
        call_command("worker", **options)
    wall, cpu = time.perf_counter() - began_wall, time.thread_time() - began_cpu
    job = ScanJob.objects.get()
    files = job.done
    per = 1000 / max(files, 1)
    print(
        f"{files:,} files ({job.new:,} new), {size / 2**20:,.1f} MB: worker CPU {cpu:.2f} s, "
        f"wall {wall:.2f} s; {size / 2**20 / cpu:,.1f} MB per CPU-second"
    )
    print(
        "\n| stage | CPU-s per 1,000 files | share | calls per file |\n| --- | ---: | ---: | ---: |"
    )
    accounted = 0.0
    for stage in dict.fromkeys([*(stage for stage, _ in STAGES), *spent]):
        accounted += spent[stage]
        print(
            f"| {stage} | {spent[stage] * per:,.2f} | {spent[stage] / cpu:.0%} | "
            f"{calls[stage] / max(files, 1):.1f} |"
        )
    rest = cpu - accounted
    print(f"| outside these (startup, heartbeat start) | {rest * per:,.2f} | {rest / cpu:.0%} | |")
    print(f"| **total** | **{cpu * per:,.2f}** | 100% | |")


if __name__ == "__main__":
    main()
