"""The timeline's pages from an S3-compatible object storage against local files (issue 33).

Stores one generated transcript of --messages canonical messages three
times, each in its own storage, in one run and side by side:

- local files (``FileSystemStorage``, the embedded default);
- an S3 bucket through ``inspector.web.objectstore.ObjectStorage`` (what
  ``INSPECTOR_S3_BUCKET`` chooses): ranged reads;
- the same bucket through django-storages' plain ``S3Storage``, which
  downloads a whole object on its first read: what ranged reads avoid.

The S3 server is moto's, in a process of its own on 127.0.0.1 (no network
latency: a real bucket adds its round trips, counted here as GETs). Then
times the first page and a later page of the timeline with the diagnosis in
storage only (the in-process cache emptied before each request, as a fresh
process or another host finds it), and counts the bytes and GETs each page
fetched. Prints times, ratios and counts; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

PORTS = range(9100, 9150)


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port for the S3 server")


def _start_s3() -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    server = subprocess.Popen(  # a fixed command line
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return server, endpoint
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("the S3 server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--mb", type=int, default=50, help="size of a generated Claude Code session"
    )
    parser.add_argument(
        "--messages", type=int, default=0, help="a canonical history of this many messages instead"
    )
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    var = tempfile.mkdtemp(prefix="inspector-bench-")
    os.environ["INSPECTOR_VAR_DIR"] = var
    os.environ["DJANGO_SETTINGS_MODULE"] = "inspector.settings"
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    server, endpoint = _start_s3()
    try:
        _run(args, endpoint)
    finally:
        server.terminate()
        server.wait()


def _run(args: argparse.Namespace, endpoint: str) -> None:
    import logging

    import django

    django.setup()
    for noisy in ("axes", "botocore", "django.tasks"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    import boto3
    import orjson
    from bench_web import _history
    from django.contrib.auth import get_user_model
    from django.core.files.storage import default_storage
    from django.core.management import call_command
    from django.test import Client, override_settings
    from gen import claude_code_session

    from inspector.diagnosis import ENGINE_VERSION
    from inspector.diagnosis.select import PAGE_SIZE
    from inspector.settings import default_storage_from
    from inspector.web import store

    call_command("migrate", verbosity=0)
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket="bench")
    s3 = default_storage_from(
        {"INSPECTOR_S3_BUCKET": "bench", "INSPECTOR_S3_ENDPOINT_URL": endpoint}
    )
    storages = {
        "local files": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "S3, ranged reads": s3,
        "S3, whole download": {**s3, "BACKEND": "storages.backends.s3.S3Storage"},
    }
    if args.messages:
        data, name = orjson.dumps(_history(args.messages)), "bench.json"
    else:
        data, name = claude_code_session(args.mb * 1024 * 1024, seed=11), "session.jsonl"

    # What each page asked of the bucket: requests (GET, HEAD), and bytes that GETs fetched.
    fetched = {"bytes": 0, "gets": 0}

    def count(event_name: str = "", parsed: dict | None = None, **kwargs: object) -> None:
        fetched["gets"] += 1
        if event_name.endswith(".GetObject"):
            fetched["bytes"] += int((parsed or {}).get("ContentLength", 0))

    figures: dict[str, dict[str, tuple[float, int, int]]] = {}
    for number, (label, backend) in enumerate(storages.items()):
        user = get_user_model().objects.create_user(f"bench{number}", password="bench-pass-1")
        client = Client()
        client.force_login(user)
        with override_settings(STORAGES={**django.conf.settings.STORAGES, "default": backend}):
            transcript, _ = store.store_upload(user, data, name)
            middle = max(1, transcript.message_count // PAGE_SIZE // 2)
            pages = {"first page": "", "middle page": f"?page={middle}"}
            cache = store._diagnosis_path(transcript.public_id, ENGINE_VERSION)
            size = default_storage.size(cache)
            if hasattr(default_storage, "connection"):
                events = default_storage.connection.meta.client.meta.events
                events.register("after-call.s3", count)
            url = transcript.get_absolute_url()
            client.get(url)  # imports and templates paid once
            figures[label] = {}
            for page, query in pages.items():
                best = float("inf")
                for _ in range(args.repeat):
                    store._memory.clear()  # what a fresh process or another host has
                    fetched.update(bytes=0, gets=0)
                    start = time.perf_counter()
                    response = client.get(url + query)
                    best = min(best, time.perf_counter() - start)
                    assert response.status_code == 200, (label, query, response.status_code)
                figures[label][page] = (best, fetched["bytes"], fetched["gets"])
            if hasattr(default_storage, "connection"):
                events.unregister("after-call.s3", count)
    print(
        f"timeline of a {len(data) / 1e6:.0f} MB transcript, {transcript.message_count:,} "
        f"messages (the middle page is {middle}), cache file {size / 1e6:.1f} MB, "
        f"diagnosis in storage only, best of {args.repeat}:"
    )
    for label, by_page in figures.items():
        for page, (best, bytes_, gets) in by_page.items():
            line = f"  {label:<20} {page:<12} {best * 1000:6.0f} ms"
            if label != "local files":
                local = figures["local files"][page][0]
                line += f"; {best / local:5.2f}x local; fetched {bytes_ / 1e3:8.0f} kB"
                line += f" in {gets} requests"
            print(line)
    ranged, whole = figures["S3, ranged reads"], figures["S3, whole download"]
    for page in pages:
        print(
            f"  {page}: ranged reads fetch {ranged[page][1] / max(whole[page][1], 1):.3f} of "
            f"what whole downloads do, in {ranged[page][0] / whole[page][0]:.2f} of the time"
        )


if __name__ == "__main__":
    main()
