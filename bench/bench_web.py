"""Timeline time-to-first-byte and upload-to-timeline time (issue 5).

Runs the real Django stack in this process against a throw-away SQLite
database under a temp dir: stores a generated transcript of --messages
canonical messages, then times the timeline's first page, a later page and
a few filtered views once the diagnosis is cached: in storage only (the
in-process cache emptied before each request, as a fresh process or another
worker finds it) and also in the process's memory; then times
the upload of a generated 50 MB Claude Code session through the upload view
up to the timeline's first page. Prints times and their ratio; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--mb", type=int, default=50, help="size of the uploaded session; 0: skip")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    var = tempfile.mkdtemp(prefix="inspector-bench-")
    os.environ["INSPECTOR_VAR_DIR"] = var
    # As ``make run`` runs: background work (the project search's indexing) is queued for
    # the worker, and timed here on its own.
    os.environ["TASKS_BACKEND"] = "database"
    os.environ["DJANGO_SETTINGS_MODULE"] = "inspector.settings"
    os.environ.setdefault("INSPECTOR_MAX_UPLOAD_MB", "400")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    import orjson
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client
    from gen import claude_code_session

    from inspector.diagnosis.select import PAGE_SIZE
    from inspector.search.tasks import index_transcript
    from inspector.web import store
    from inspector.web.models import Transcript

    user = get_user_model().objects.create_user("bench", password="bench-pass-1")
    client = Client()
    client.force_login(user)

    history = _history(args.messages)
    data = orjson.dumps(history)
    start = time.perf_counter()
    transcript, _ = store.store_upload(user, data, "bench.json")
    print(f"stored and diagnosed {args.messages:,} messages in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    index_transcript.call(transcript.pk)  # what the worker does next
    print(f"indexed for project search (the worker's task) in {time.perf_counter() - start:.1f} s")
    url = transcript.get_absolute_url()

    middle = max(1, args.messages // PAGE_SIZE // 2)
    last_pair = max(1, -(-transcript.counts.get("PAIR-1", 0) // PAGE_SIZE))
    views = [
        ("first page", "", False),
        (f"page {middle}", f"?page={middle}", False),
        (f"page {middle} as htmx fragment", f"?page={middle}", True),
        (f"original view, page {middle}", f"?view=original&page={middle}", False),
        (f"only PAIR-1, page {last_pair}", f"?rule=PAIR-1&page={last_pair}", False),
        ("findings with 2 rows of context", "?around=2", False),
    ]

    def ttfb(query: str, htmx: bool, cold: bool) -> float:
        best = float("inf")
        for _ in range(args.repeat):
            if cold:
                store._memory.clear()  # what a fresh process or another worker has
            start = time.perf_counter()
            response = client.get(url + query, **({"HTTP_HX_REQUEST": "true"} if htmx else {}))
            best = min(best, time.perf_counter() - start)
            assert response.status_code == 200, (query, response.status_code)
        return best

    client.get(url)  # the process's first request pays for imports and templates
    print(f"timeline of {args.messages:,} messages, best of {args.repeat} (target < 150 ms each):")
    figures = {}
    for name, query, htmx in views:
        cold, warm = ttfb(query, htmx, cold=True), ttfb(query, htmx, cold=False)
        figures[name] = (cold, warm)
        print(
            f"  {name:<34} cached in storage only {cold * 1000:4.0f} ms; "
            f"also in memory {warm * 1000:4.0f} ms"
        )
    first, later = figures["first page"], figures[f"page {middle}"]
    print(
        f"  later/first ratio: {later[0] / first[0]:.2f} from storage, "
        f"{later[1] / first[1]:.2f} from memory"
    )

    if not args.mb:
        return
    session = claude_code_session(args.mb * 1024 * 1024, seed=11)
    start = time.perf_counter()
    response = client.post(
        "/upload/", {"file": SimpleUploadedFile("session.jsonl", session)}, follow=True
    )
    elapsed = time.perf_counter() - start
    assert response.status_code == 200, response.status_code
    print(
        f"upload to timeline of a {len(session) / 1e6:.0f} MB Claude Code session: "
        f"{elapsed:.1f} s ({len(session) / 1e6 / elapsed:.1f} MB/s)"
    )
    uploaded = Transcript.objects.order_by("-pk").first()
    start = time.perf_counter()
    index_transcript.call(uploaded.pk)
    print(f"  then indexed for project search by the worker in {time.perf_counter() - start:.1f} s")


def _history(count: int) -> list[dict]:
    """A long agent run with one dangling call every 50 turns."""
    messages: list[dict] = [{"role": "user", "content": "start", "metadata": {}}]
    turn = 0
    while len(messages) < count:
        turn += 1
        call = {"tool_call_id": f"c{turn}", "name": "search", "arguments": {"q": f"q{turn}"}}
        messages.append(
            {"role": "assistant", "content": f"step {turn}", "metadata": {"tool_calls": [call]}}
        )
        if turn % 50:
            messages.append(
                {
                    "role": "tool",
                    "content": f"found {turn}",
                    "metadata": {"tool_call_id": f"c{turn}"},
                }
            )
    return messages[:count]


if __name__ == "__main__":
    main()
