from __future__ import annotations

import pytest

from inspector.redact import entropy, find_secrets, mask

# Fake credentials of every shape we promise to catch (none of them is real).
PLANTED = {
    "OpenAI key": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
    "Anthropic key": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcdEFGH",
    "GitHub token": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "AWS access key id": "AKIAIOSFODNN7EXAMPLE",
    "Google API key": "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    "Slack token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "Slack webhook": "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
}


@pytest.mark.parametrize(("kind", "secret"), PLANTED.items())
def test_each_credential_shape_is_found_and_masked(kind, secret):
    text = f"export THING={secret} # from .env"
    matches = find_secrets(text)
    assert [m.kind for m in matches] == [kind]
    masked = mask(text)
    assert secret not in masked
    assert f"[masked {kind}, {len(secret)} chars]" in masked


def test_private_key_block_is_masked_whole():
    block = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    masked = mask(f"cat ~/.ssh/id_ed25519\n{block}\n$ ")
    assert "b3BlbnNzaC1rZXkt" not in masked and "PRIVATE KEY" not in masked
    assert masked.startswith("cat ~/.ssh/id_ed25519\n[masked private key")


def test_bearer_header_keeps_the_word_and_masks_the_token():
    masked = mask("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123")
    assert masked.startswith("Authorization: Bearer [masked bearer token")
    assert "eyJhbGci" not in masked


def test_aws_secret_assignment_is_masked():
    masked = mask("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    assert "wJalrXUtnFEMI" not in masked


def test_high_entropy_assignment_is_masked_but_plain_words_are_not():
    assert "9f8Q2mZ" not in mask("STRIPE_API_KEY=9f8Q2mZx7LkP4vBn3TqW8yR1")
    assert mask("CACHE_KEY=user-profile-settings") == "CACHE_KEY=user-profile-settings"
    assert mask("The TOKEN: is explained below in the docs") == (
        "The TOKEN: is explained below in the docs"
    )


def test_text_without_secrets_is_returned_as_is():
    text = "nothing secret here: sk- is a prefix, AKIA too"
    assert mask(text) is text


def test_entropy_separates_random_from_repetitive():
    assert entropy("aaaaaaaaaaaaaaaa") == 0
    assert entropy("9f8Q2mZx7LkP4vBn3TqW8yR1") > 4
