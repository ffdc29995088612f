"""Fixtures for the project search: a project of sessions whose rows say known things."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.web.conftest import assistant, call, canonical, result, user


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def project(owner):
    from inspector.web.store import project_for

    return project_for(owner, "Payments")


@pytest.fixture
def store_in(owner) -> Callable[..., object]:
    """Store bytes as a transcript of a project (the owner's "Payments" by default)."""
    from inspector.web.models import Transcript
    from inspector.web.store import project_for, store_upload

    def store(data: bytes, name: str, project=None, user=None, path: str = ""):
        who = user or owner
        where = project or project_for(who, "Payments")
        transcript, _ = store_upload(who, data, name, project=where)
        if path:
            Transcript.objects.filter(pk=transcript.pk).update(relative_path=path)
            transcript.relative_path = path
        return transcript

    return store


DEPLOY = canonical(
    user("Deploy the billing service to staging, please."),
    assistant(
        call("c1", "Bash", {"command": "kubectl rollout status deploy/billing"}),
        content="Rolling it out now.",
    ),
    result("c1", "deployment billing successfully rolled out"),
    assistant(content="The billing deployment is done; invoices work again."),
)

REFUND = canonical(
    user("Why did the refund for order 4411 fail?"),
    assistant(call("r1", "Read", {"file_path": "src/payments/views.py"}), content="Looking."),
    result("r1", "def refund(order): raise TimeoutError('gateway')"),
    assistant(content="The gateway timed out: the refund never reached it."),
)
