"""A fresh client: no cookie, no session, another host. Fetches each URL and prints what came back.

Run inside the ``out`` host by the multi-host test: ``python fetch.py URL...``;
prints one JSON object per URL (status, the body's sha256 and length, and
whether a Set-Cookie or a sign-in form came with it).
"""

from __future__ import annotations

import hashlib
import sys
import urllib.error
import urllib.request

import orjson


def fetch(url: str) -> dict[str, object]:
    # A plain opener: no cookie jar, no redirect followed silently past a sign-in page.
    request = urllib.request.Request(url, headers={"User-Agent": "multihost-fresh-client"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            status = response.status
            final = response.geturl()
    except urllib.error.HTTPError as error:
        body, status, final = error.read(), error.code, url
    return {
        "url": url,
        "final": final,
        "status": status,
        "length": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
        "text": body.decode("utf-8", "replace")[:200_000],
    }


if __name__ == "__main__":
    for url in sys.argv[1:]:
        sys.stdout.write(orjson.dumps(fetch(url)).decode() + "\n")
