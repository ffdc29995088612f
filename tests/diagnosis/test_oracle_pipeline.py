"""The verdict a page shows is the provider's, for every recorded provider answer.

Each request body in ``tests/data/oracle`` goes the way an upload goes:
``diagnose_file`` reads it (any shape, as sniffed), the diagnosis is written
as the cache file and read back, and the verdict for that body's provider,
as the page reads it from there, is the direct check's: rejected, accepted,
or "cannot tell" with its reason (a Responses body continuing a stored
response). Not only the check function: the reader, the fast path of the
verdicts and the cache file each lost a verdict once (a server tool's
``srvtoolu_`` call answered by a client result was shown accepted).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from inspector.diagnosis import diagnose_file
from inspector.diagnosis.stored import encode
from inspector.engine import providers
from tests.testdata import ORACLE, files, read

CASES = [path for provider in providers.PROVIDERS for path in files(ORACLE / provider)]


def _shown(verdict: dict[str, Any]) -> tuple[str, str]:
    """The state a page shows before repair, and the reason for "cannot tell"."""
    if verdict["before"]:
        return providers.REJECTED, ""
    undecided = verdict.get("undecided_before") or []
    if undecided:
        return providers.CANNOT_TELL, undecided[0]
    return providers.ACCEPTED, ""


def test_the_oracle_holds_answers_of_every_kind() -> None:
    states = {providers.check(*_case(path)).state for path in CASES}
    assert states == {providers.ACCEPTED, providers.REJECTED, providers.CANNOT_TELL}
    assert len(CASES) > 900


def _case(path: Path) -> tuple[str, Any]:
    case = orjson.loads(read(path))
    return case["provider"], case["request"]


@pytest.mark.parametrize("path", CASES, ids=lambda path: f"{path.parent.name}/{path.stem[:60]}")
def test_the_stored_diagnosis_shows_the_direct_checks_verdict(path: Path) -> None:
    provider, request = _case(path)
    direct = providers.check(provider, request)
    file = diagnose_file(orjson.dumps(request))
    stored = encode(file.shown, 20)
    shown = stored.open(lambda: io.BytesIO(stored.data)).providers[provider]
    assert _shown(shown) == (direct.state, direct.reason)


ACCEPTED = [path for path in CASES if orjson.loads(read(path))["status"] == 200]
PAIRING = {"PAIR-1", "PAIR-2", "PAIR-3"}


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda path: f"{path.parent.name}/{path.stem[:60]}")
def test_no_pairing_finding_on_a_body_its_provider_accepted(path: Path) -> None:
    """Read as the provider reads it: consecutive assistant turns the API combines, the
    outputs a stateful body opens with after its instructions."""
    _, request = _case(path)
    file = diagnose_file(orjson.dumps(request))
    assert not [f for f in file.shown.findings if f["rule"] in PAIRING]
