"""Who may open what: every URL in the URL conf, for every kind of visitor, GET and POST.

The URLs come from walking the resolver, so a new URL without a row in
``TABLE`` fails here until someone decides who may open it. Every client
enforces CSRF: an unsafe request without the token is refused (403) before
any view runs, except on the token-authenticated API, which takes no cookies.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import URLResolver, get_resolver, resolve, reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from tests.web.conftest import BROKEN_CANONICAL, HEALTHY_CANONICAL

pytestmark = pytest.mark.django_db

LOGIN = "login"  # 302 to the sign-in page
ADMIN_LOGIN = "admin login"  # 302 to the admin's own sign-in page
CSRF_SECRET = "hardeningcsrfsecret0123456789abc"  # 32 characters, as Django's cookie holds
UNSAFE = ("post", "put", "patch", "delete")

# Browsers and scripts: signed in with a session, anonymous, and an anonymous
# browser that has opened a live share link (the token gives it nothing else).
VISITORS = ("owner", "other", "anon", "shared")
# The API's callers: a bearer token of the owner, of someone else, a made-up one.
TOKENS = ("owner_token", "other_token", "wrong_token")


def owners(status: int) -> dict[str, int | str]:
    """Only the owner; someone else gets 404, as if it did not exist."""
    return {"owner": status, "other": 404, "anon": LOGIN, "shared": LOGIN}


def users(status: int) -> dict[str, int | str]:
    """Anyone signed in (each sees their own things)."""
    return {"owner": status, "other": status, "anon": LOGIN, "shared": LOGIN}


def everyone(status: int | str) -> dict[str, int | str]:
    return dict.fromkeys(VISITORS, status)


def api(owner_token: int, other_token: int) -> dict[str, int | str]:
    # A session cookie is no API credential: "owner" sends the owner's cookie only.
    return {
        "owner_token": owner_token,
        "other_token": other_token,
        "wrong_token": 401,
        **everyone(401),
    }


@dataclass
class World:
    """What the URLs' parameters point at: the owner's things, and live and dead links."""

    owner: Any
    other: Any
    transcript: Any
    project: Any
    job: Any
    owner_api_token: Any
    owner_token: str
    other_token: str
    share: dict[str, str] = field(default_factory=dict)
    share_link_id: str = ""

    def signin_kwargs(self) -> dict[str, str]:
        from inspector.web.signin import signin_tokens

        # Fresh each time: a link signs in once.
        self.owner.refresh_from_db()
        uid = urlsafe_base64_encode(force_bytes(self.owner.pk))
        return {"uidb64": uid, "token": signin_tokens.make_token(self.owner)}


Kwargs = Callable[[World], dict[str, str]]


@dataclass(frozen=True)
class Case:
    kwargs: Kwargs
    get: dict[str, int | str]
    post: dict[str, int | str]
    data: dict[str, Any] | bytes = field(default_factory=dict)
    csrf_exempt: bool = False


def none(world: World) -> dict[str, str]:
    return {}


def transcript_id(world: World) -> dict[str, str]:
    return {"public_id": world.transcript.public_id}


def kind(name: str) -> Kwargs:
    return lambda world: {"public_id": world.transcript.public_id, "kind": name}


def token(which: str, download: str | None = None) -> Kwargs:
    def fill(world: World) -> dict[str, str]:
        return {"token": world.share[which], **({"kind": download} if download else {})}

    return fill


def slug(world: World) -> dict[str, str]:
    return {"slug": world.project.slug}


def job_id(world: World) -> dict[str, str]:
    return {"public_id": world.job.public_id}


SHARE_KINDS = ("repaired", "canonical", "report", "html", "original")
DOWNLOAD_KINDS = (*SHARE_KINDS, "markdown", "html-redacted")

# URL name -> the cases to request. GET and POST each expect a status per visitor.
TABLE: dict[str, list[Case]] = {
    "admin:index": [Case(none, everyone(ADMIN_LOGIN), everyone(ADMIN_LOGIN))],
    # --- inspector.web ---
    "home": [Case(none, everyone(200), everyone(405))],
    "healthz": [Case(none, everyone(200), everyone(405))],
    "signin_link": [
        Case(
            lambda world: {"uidb64": "MQ", "token": "c0ffee-0123456789abcdef"},
            everyone(400),
            everyone(400),
        ),
        # A valid one-time link: GET shows a button, POST signs its holder in as its owner.
        Case(World.signin_kwargs, everyone(200), everyone(302)),
    ],
    "login": [Case(none, everyone(200), everyone(200))],
    "logout": [Case(none, everyone(405), everyone(302))],
    "upload": [Case(none, users(200), users(302), {"text": HEALTHY_CANONICAL.decode()})],
    "transcript_list": [Case(none, users(200), users(405))],
    # This machine's sessions: the superuser on a local server only (tests/local).
    "machine": [Case(none, users(403), users(405))],
    "machine_open": [Case(none, users(405), users(403), {"path": "/etc/passwd"})],
    "timeline": [Case(transcript_id, owners(200), users(405))],
    # Without words to look for the owner's search is a bad request (tests/web/test_search.py).
    "transcript_search": [Case(transcript_id, owners(400), users(405))],
    "download": [
        *(Case(kind(name), owners(200), users(405)) for name in DOWNLOAD_KINDS),
        Case(kind("nonsense"), owners(404), users(405)),
    ],
    "delete": [Case(transcript_id, users(405), owners(302))],
    "rule_list": [Case(none, everyone(200), everyone(405))],
    "rule": [
        Case(lambda world: {"rule_id": "PAIR-1"}, everyone(200), everyone(405)),
        Case(lambda world: {"rule_id": "NO-SUCH-9"}, everyone(404), everyone(405)),
    ],
    "spec": [Case(none, everyone(200), everyone(405))],
    "spec_seed": [
        Case(lambda world: {"name": "000_2ae73882a5c611dc.txt"}, everyone(200), everyone(405)),
        Case(lambda world: {"name": "SPEC.md"}, everyone(404), everyone(405)),
    ],
    "account": [Case(none, users(200), users(405))],
    "token_create": [Case(none, users(405), users(200), {"name": "ci"})],
    "token_revoke": [
        Case(
            lambda world: {"public_id": world.owner_api_token.public_id},
            users(405),
            owners(302),
        )
    ],
    "api_upload": [
        Case(
            none,
            everyone(405) | dict.fromkeys(TOKENS, 405),
            api(201, 201),
            HEALTHY_CANONICAL,
            csrf_exempt=True,
        )
    ],
    "api_transcript": [
        Case(
            transcript_id,
            api(200, 404),
            everyone(405) | dict.fromkeys(TOKENS, 405),
            csrf_exempt=True,  # token-authenticated: a POST gets the API's JSON 405
        )
    ],
    # --- inspector.share ---
    "share_panel": [
        Case(transcript_id, owners(200), owners(200), {"mode": "redacted", "expires": "7"})
    ],
    "share_revoke": [
        Case(
            lambda world: {"public_id": world.transcript.public_id, "link_id": world.share_link_id},
            users(405),
            owners(302),
        )
    ],
    # Anyone holding a live token reads the page, signed in or not; dead tokens are 404.
    "shared_timeline": [
        Case(token("redacted"), everyone(200), everyone(405)),
        Case(token("full"), everyone(200), everyone(405)),
        Case(token("revoked"), everyone(404), everyone(405)),
        Case(token("expired"), everyone(404), everyone(405)),
        Case(token("unknown"), everyone(404), everyone(405)),
    ],
    "shared_download": [
        *(Case(token("full", name), everyone(200), everyone(405)) for name in SHARE_KINDS),
        # A redacted link downloads its report and its redacted one-file page only.
        *(
            Case(
                token("redacted", name),
                everyone(200 if name in ("report", "html") else 404),
                everyone(405),
            )
            for name in SHARE_KINDS
        ),
        Case(token("full", "nonsense"), everyone(404), everyone(405)),
        Case(token("revoked", "report"), everyone(404), everyone(405)),
        Case(token("expired", "report"), everyone(404), everyone(405)),
    ],
    # --- inspector.scan ---
    "scan:project_list": [Case(none, users(200), users(405))],
    "scan:project": [Case(slug, owners(200), users(405))],
    "scan:project_csv": [Case(slug, owners(200), users(405))],
    "scan:project_zip": [Case(slug, owners(200), users(405))],
    "scan:new": [Case(none, users(200), users(400))],
    "scan:job": [Case(job_id, owners(200), users(405))],
    "scan:retry": [Case(job_id, users(405), owners(302))],
    # --- inspector.search ---
    # Without words the owner gets the empty search page (tests/search/test_pages.py).
    "search:project": [Case(slug, owners(200), users(405))],
    # --- inspector.watch ---
    "watch:panel": [Case(slug, owners(200), users(405))],
    # No watched file here: the row is looked up in the owner's project only.
    "watch:repair": [
        Case(lambda world: {"slug": world.project.slug, "row_id": 999999}, users(405), owners(404))
    ],
}


def url_names(patterns: list[Any], namespace: str = "") -> Iterator[str]:
    """Every URL pattern's name (``namespace:name``), its route when it has none."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin":
                # Django's admin: its own views and permission checks, tested by
                # Django itself. Only its root is ours to check (who gets past it).
                yield "admin:index"
                continue
            prefix = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from url_names(pattern.url_patterns, prefix)
        else:
            yield f"{namespace}{pattern.name}" if pattern.name else str(pattern.pattern)


URL_NAMES = sorted(set(url_names(get_resolver().url_patterns)))


@pytest.fixture
def world(owner, other_user) -> World:
    from inspector.scan.models import ScanJob
    from inspector.share.models import ShareLink
    from inspector.web.models import ApiToken
    from inspector.web.store import project_for, store_upload

    project = project_for(owner, "Payments")
    transcript, _ = store_upload(owner, BROKEN_CANONICAL, "broken.json", project=project)
    job = ScanJob.objects.create(
        owner=owner,
        project=project,
        source=ScanJob.Source.UPLOAD,
        label="batch.zip",
        status=ScanJob.Status.DONE,
        finished=timezone.now(),
    )
    owner_api_token, owner_token = ApiToken.issue(owner, "ci")
    _, other_token = ApiToken.issue(other_user, "ci")
    world = World(
        owner, other_user, transcript, project, job, owner_api_token, owner_token, other_token
    )
    link, world.share["redacted"] = ShareLink.issue(transcript, ShareLink.REDACTED, "7")
    world.share_link_id = link.public_id
    _, world.share["full"] = ShareLink.issue(transcript, ShareLink.FULL, "never")
    revoked, world.share["revoked"] = ShareLink.issue(transcript, ShareLink.FULL, "never")
    revoked.revoke()
    expired, world.share["expired"] = ShareLink.issue(transcript, ShareLink.FULL, "1")
    ShareLink.objects.filter(pk=expired.pk).update(expires=timezone.now() - timedelta(seconds=1))
    world.share["unknown"] = "x" * 43
    return world


def visitors(world: World) -> dict[str, tuple[Client, dict[str, str]]]:
    """A fresh CSRF-enforcing client per visitor, with the headers it sends."""
    clients = {name: Client(enforce_csrf_checks=True) for name in (*VISITORS, *TOKENS)}
    clients["owner"].force_login(world.owner)
    clients["other"].force_login(world.other)
    opened = clients["shared"].get(reverse("shared_timeline", args=[world.share["redacted"]]))
    assert opened.status_code == 200
    bearer = {
        "owner_token": world.owner_token,
        "other_token": world.other_token,
        "wrong_token": "ti_" + "x" * 43,
    }
    return {
        name: (client, {"HTTP_AUTHORIZATION": f"Bearer {bearer[name]}"} if name in bearer else {})
        for name, client in clients.items()
    }


def send(
    client: Client, method: str, url: str, headers: dict[str, str], data: Any, csrf: bool
) -> Any:
    if csrf:
        client.cookies["csrftoken"] = CSRF_SECRET
        headers = headers | {"HTTP_X_CSRFTOKEN": CSRF_SECRET}
    if method == "get":
        response = client.get(url, **headers)
    elif isinstance(data, bytes):
        response = client.generic(method.upper(), url, data, "application/json", **headers)
    elif method == "post":
        response = client.post(url, data, **headers)
    else:
        response = client.generic(method.upper(), url, b"", **headers)
    if response.streaming:
        # Run the generator: a streamed CSV or zip can fail after its status.
        b"".join(response.streaming_content)
    return response


def check(response: Any, expected: int | str, what: str) -> None:
    location = response.get("Location", "")
    if expected == LOGIN:
        assert response.status_code == 302 and location.startswith("/login/?next="), what
    elif expected == ADMIN_LOGIN:
        assert response.status_code == 302 and location.startswith("/admin/login/"), what
    else:
        assert response.status_code == expected, f"{what}: {response.status_code} {location}"


def owners_things(world: World) -> tuple[list[Any], ...]:
    """A snapshot of everything of the owner's that someone else's request could change."""
    from inspector.scan.models import ScanJob
    from inspector.share.models import ShareLink
    from inspector.web.models import ApiToken, Transcript

    return (
        list(Transcript.objects.filter(owner=world.owner).values_list("public_id", "project")),
        list(ApiToken.objects.filter(user=world.owner).values_list("public_id", flat=True)),
        list(
            ShareLink.objects.filter(transcript__owner=world.owner).values_list(
                "public_id", "revoked"
            )
        ),
        list(ScanJob.objects.filter(owner=world.owner).values_list("public_id", "status")),
    )


@pytest.mark.parametrize("name", URL_NAMES)
def test_every_url_answers_each_visitor_as_the_table_says(name, world):
    assert name in TABLE, f"{name} is a new URL: add it to TABLE with who may open it"
    for case in TABLE[name]:
        # Built for each request: a sign-in link works once.
        url = lambda case=case: reverse(name, kwargs=case.kwargs(world))  # noqa: E731
        assert bool(getattr(resolve(url()).func, "csrf_exempt", False)) == case.csrf_exempt
        clients = visitors(world)

        for who, expected in case.get.items():
            client, headers = clients[who]
            response = send(client, "get", url(), headers, None, csrf=False)
            check(response, expected, f"GET {url()} {who}")

        for who in case.post:
            client, headers = clients[who]
            for method in UNSAFE:
                if case.csrf_exempt and method == "post":
                    continue  # the API's POST is checked below, without a CSRF token
                response = send(client, method, url(), headers, case.data, csrf=False)
                expected = 405 if case.csrf_exempt else 403
                check(response, expected, f"{method.upper()} {url()} {who} without CSRF token")

        # The owner last: their POST may delete what the others were refused.
        before = owners_things(world)
        others = [who for who in case.post if not who.startswith("owner")]
        for who in [*others, None, *(who for who in case.post if who not in others)]:
            if who is None:
                assert owners_things(world) == before, f"someone else's POST changed {url()}"
                continue
            client, headers = clients[who]
            response = send(client, "post", url(), headers, case.data, csrf=not case.csrf_exempt)
            check(response, case.post[who], f"POST {url()} {who}")


def test_the_table_names_only_urls_that_exist():
    assert sorted(TABLE) == URL_NAMES


@pytest.mark.parametrize("name", URL_NAMES)
def test_head_answers_wherever_get_does_with_the_same_status_and_no_body(name, world):
    for case in TABLE.get(name, []):
        url = lambda case=case: reverse(name, kwargs=case.kwargs(world))  # noqa: E731
        clients = visitors(world)
        for who in case.get:
            client, headers = clients[who]
            get = send(client, "get", url(), headers, None, csrf=False)
            head = client.head(url(), **headers)
            assert head.status_code == get.status_code, f"HEAD {url()} {who}"
            if head.status_code == 200 and not head.streaming:
                assert head.content == b"", f"HEAD {url()} {who} sent a body"
