from __future__ import annotations

import orjson
import pytest

from inspector.redact import RULES, entropy, find_secrets, mask

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


# Fake credentials of the shapes a full share must never show (none is real):
# name -> (as written in a transcript, the part that must not survive).
B64 = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
SHAPES: dict[str, tuple[str, str]] = {
    "OpenAI key": (f"sk-proj-{B64}abcd", f"sk-proj-{B64}abcd"),
    "Anthropic key": (f"sk-ant-api03-{B64}-_abcdEFGH", f"sk-ant-api03-{B64}-_abcdEFGH"),
    "GitHub token": (
        "ghp_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
        "ghp_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
    ),
    "GitHub fine-grained token": (f"github_pat_11ABCDEFG0_{B64}{B64}", f"11ABCDEFG0_{B64}{B64}"),
    "AWS access key id": ("AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    "AWS secret key, named": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "AWS secret key, bare": (
        "the key is 9dRt/UvQ2pLmN8xZkW4yB+hJcF6sA1eG7oI3nT0u here",
        "9dRt/UvQ2pLmN8xZkW4yB+hJcF6sA1eG7oI3nT0u",
    ),
    "Google API key": (
        "AIzaSyA-1234567890abcdefghijklmnopqrstu",
        "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    ),
    "Slack token": (
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    ),
    "Slack webhook": (
        "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    "private key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    "bearer token": (
        "Authorization: Bearer abcDEF123456ghiJKL789mnoPQR",
        "abcDEF123456ghiJKL789mnoPQR",
    ),
    "high-entropy *_KEY=": ("STRIPE_API_KEY=9f8Q2mZx7LkP4vBn3TqW8yR1", "9f8Q2mZx7LkP4vBn3TqW8yR1"),
    "JWT": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
        ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ),
    "Authorization: Basic": (
        "Authorization: Basic YWRtaW46c3VwZXJzZWNyZXQ=",
        "YWRtaW46c3VwZXJzZWNyZXQ",
    ),
    "postgres URL": ("postgres://admin:Pg5ecretPw@db.internal:5432/app", "Pg5ecretPw"),
    "mysql URL, no digit": ("mysql://root:hunterwolf@localhost/db", "hunterwolf"),
    "?password= in a URL": ("https://example.com/login?user=bob&password=Tr0ub4dor", "Tr0ub4dor"),
    "?access_token= in a URL": (
        "https://api.example.com/v1/data?access_token=ya29A0ARrdaMqq",
        "ya29A0ARrdaMqq",
    ),
    "*_PASSWORD=, short": ("DB_PASSWORD=Zq9wK", "Zq9wK"),
    "*_PASSWORD=, no digit": ("SMTP_PASSWORD=correcthorsebattery", "correcthorsebattery"),
    "password: quoted": ('password: "Sup3r-S3cretVal"', "Sup3r-S3cretVal"),
    "Stripe key, bare": (f"sk_live_51HcTz2Kx9Qa{B64}EFGH", f"51HcTz2Kx9Qa{B64}EFGH"),
    "Stripe restricted key": (f"rk_live_51HcTz2Kx9Qb{B64}", f"51HcTz2Kx9Qb{B64}"),
    "GitLab token": ("glpat-AbCdEf1234567890xYz_", "AbCdEf1234567890xYz_"),
    "Hugging Face token": (
        "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
        "AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
    ),
    "npm token": (f"npm_{B64}", f"npm_{B64}"),
    "SendGrid key": (
        "SG.AbCdEfGhIjKlMnOpQrStUv.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg",
    ),
    "Django SECRET_KEY with #": (
        "SECRET_KEY=django-insecure-k#9x!2@lm$q^z*w(p)v=+r3t-u5y",
        "k#9x!2@lm$q^z*w(p)v=+r3t-u5y",
    ),
    "SECRET_KEY quoted, with #": ("SECRET_KEY = 'x7#kq!m2@z9$w8^p4%r'", "x7#kq!m2@z9$w8^p4%r"),
    "key glued to a letter": (
        "tokensk-proj-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
        "ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
    ),
    "Twilio key": ("SK0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    "Telegram bot token": (
        "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    ),
    "Azure storage key": (f"AccountKey={B64 * 2}{'Qq12' * 4}==", f"{B64 * 2}{'Qq12' * 4}"),
    "PyPI token": (f"pypi-AgEIcHlwaS5vcmc{B64 * 2}", f"{B64 * 2}"),
    "npm authToken in .npmrc": (
        "//registry.npmjs.org/:_authToken=0c8a6d2e-1f3b-4a5c-9d7e-8f0a1b2c3d4e",
        "0c8a6d2e-1f3b-4a5c-9d7e-8f0a1b2c3d4e",
    ),
    # The third round's shapes (issue 30): each as a transcript shows it.
    "Slack workflow webhook": (
        "https://hooks.slack.com/workflows/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",
        "q7Ze2mWv9Kc4Rt1Ly8Hn3Bxd",
    ),
    "Discord webhook": (
        "https://discord.com/api/webhooks/1187249035510976512/"
        "Xq3vL9_Ae7Rb2Kp-Zw5Tn8Ym1Jc4Hd6Gf0Us3Oi9Pe2Wa7Qz5Lx8Nv1Bt4Mk6Cr0Dy3Fh-Gj5Ks",
        "Xq3vL9_Ae7Rb2Kp-Zw5Tn8Ym1Jc4Hd6Gf0Us3Oi9Pe2Wa7Qz5Lx8Nv1Bt4Mk6Cr0Dy3Fh-Gj5Ks",
    ),
    "PuTTY private key": (
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy@build\n"
        "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIGq7Rk2vLx9Wm3Tz\nPc5Yn8Hd1Jb4Fs6Qe0Ua2Io7Lk\n"
        "Private-Lines: 1\nAAAAIHv3Mq8Xz1Rw5Kt9Lp2Nb7Ys4Jd6Gh0Fc3Ve8Ua1Io5Pq\n"
        "Private-MAC: 4f1c9a2e7b3d8f6a0c5e9b2d7f4a1c8e3b6d0f9a2c7e5b8d1f4a6c9e3b7d0f2a",
        "AAAAIHv3Mq8Xz1Rw5Kt9Lp2Nb7Ys4Jd6Gh0Fc3Ve8Ua1Io5Pq",
    ),
    "Azure AD client secret": (
        "AZURE_CLIENT_SECRET=Vx48Q~Lm3Zr7Tq1Wn5Kc9Yb2Hd6Jf0Gs4Pa8Ue",
        "Lm3Zr7Tq1Wn5Kc9Yb2Hd6Jf0Gs4Pa8Ue",
    ),
    "Azure AD client secret, bare": (
        "client secret is Vx48Q~Lm3Zr7Tq1Wn5Kc9Yb2Hd6Jf0Gs4Pa8Ue now",
        "Lm3Zr7Tq1Wn5Kc9Yb2Hd6Jf0Gs4Pa8Ue",
    ),
    "Hugging Face organisation token": (
        "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",
        "QwErTyUiOpAsDfGhJkLzXcVbNmQwErTyUi",
    ),
    "Mailgun key": ("key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "3ax6xnjp29jd6fds4gc373sgvjxteol0"),
    "Okta token": (
        "Authorization: SSWS 00QCjAl4MlV-WPXM7ZQ9S2ZKbxbcXo5QPoJK3XvH9p",
        "00QCjAl4MlV-WPXM7ZQ9S2ZKbxbcXo5QPoJK3XvH9p",
    ),
    "Heroku API key v2": (
        "HRKU-AA7bQ2xZ9kLm4Nc8Vd1Rf5Tg3Yh6Ju0Ik2Ol7Pa9Sb4Dc8Ef1Gh5Ij3Kl6Mn0Op2Qr7St9",
        "7bQ2xZ9kLm4Nc8Vd1Rf5Tg3Yh6Ju0Ik2Ol7Pa9Sb4Dc8Ef1Gh5Ij3Kl6Mn0Op2Qr7St9",
    ),
    "Docker config auth": (
        '{"auths": {"https://index.docker.io/v1/": {"auth": "ZGVwbG95OnM0bXBsZVB3ZDIwMjQ="}}}',
        "ZGVwbG95OnM0bXBsZVB3ZDIwMjQ",
    ),
    "sshpass password": ("sshpass -p 'Tr0ub4dor&3x' ssh deploy@10.0.0.5", "Tr0ub4dor&3x"),
    "sshpass password, bare": ("sshpass -e -p W1nter2024prod scp a b:", "W1nter2024prod"),
    "mysql password": ("mysql -h db.internal -u root -pS3cr3tPassw0rd shop", "S3cr3tPassw0rd"),
    "curl user and password": (
        "curl -sS -u alice:Sup3rS3cretPw https://api.example.com/v1",
        "Sup3rS3cretPw",
    ),
    "New Relic user key": (
        "NRAK-4FQ9ZK2XW7R1T8M3B6N0C5V2H1J",
        "4FQ9ZK2XW7R1T8M3B6N0C5V2H1J",
    ),
    "Mapbox secret token": (
        "sk.eyJ1IjoiYWNtZSIsImEiOiJja2x6OXEyM3gwMDAxMm9xcTVvNW12Z3RqIn0.Q2w9ZxT4kLr7Vb1Nm3Hd6J",
        "Q2w9ZxT4kLr7Vb1Nm3Hd6J",
    ),
    "Square access token": (
        "EAAAl2Xq7Rk9Zm4Tp1Wv8Yc3Nb6Hd0Jf5Gs2Ua7Ie4Lo9Kq1",
        "l2Xq7Rk9Zm4Tp1Wv8Yc3Nb6Hd0Jf5Gs2Ua7Ie4Lo9Kq1",
    ),
    "Doppler service token": (
        "DOPPLER_TOKEN=dp.st.prd.Xq3vL9Ae7Rb2KpZw5Tn8Ym1Jc4Hd6Gf0Us3Oi9Pe2Wa7",
        "Xq3vL9Ae7Rb2KpZw5Tn8Ym1Jc4Hd6Gf0Us3Oi9Pe2Wa7",
    ),
    "Pulumi token": (
        "pul-7f3a9c1e5b2d8f4a6c0e9b3d7f1a5c8e2b4d6f0a",
        "7f3a9c1e5b2d8f4a6c0e9b3d7f1a5c8e2b4d6f0a",
    ),
    "YAML password": ("database:\n  user: app\n  password: hunter2-prod\n", "hunter2-prod"),
    "Datadog key, hex": (
        "DD_API_KEY=3f9a1c2b4d5e6f708192a3b4c5d6e7f8",
        "3f9a1c2b4d5e6f708192a3b4c5d6e7f8",
    ),
    "UUID under a token name": (
        'SERVICE_TOKEN: "7c9e6679-7425-40de-944b-e07fc1f90ae7"',
        "7c9e6679-7425-40de-944b-e07fc1f90ae7",
    ),
    "UUID under a secret name": (
        "webhook_secret => '1b4e28ba-2fa1-11d2-883f-0016d3cca427'",
        "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
    ),
    "GitHub App token": (
        "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        "16C7e42F292c6912E7710c838347Ae178B4a",
    ),
    "Shopify token": (
        "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",
        "4f9c2b7e1a6d3f8c5b0e9a2d7c4f1b6e",
    ),
    "Databricks token": (
        "dapi4f9c2b7e1a6d3f8c5b0e9a2d7c4f1b6e",
        "4f9c2b7e1a6d3f8c5b0e9a2d7c4f1b6e",
    ),
    "Dynatrace token": (
        "dt0c01.ST2EY72KQINMH574WMNVI7YN.G3DFPBEJYMODIDAEX454M7YWBUVEFOWKPRVMWFASS64NFH52PX6BNDVFFM572RZM",
        "G3DFPBEJYMODIDAEX454M7YWBUVEFOWKPRVMWFASS64NFH52PX6BNDVFFM572RZM",
    ),
    "Postman key": (
        "PMAK-5f8b2c1e9a3d7f4b6c0e2a9d-7f1c4e8b2a6d3f9c5e0b7a1d4f8c2e6b9a3d",
        "7f1c4e8b2a6d3f9c5e0b7a1d4f8c2e6b9a3d",
    ),
    "Age secret key": (
        "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQY",
        "QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQY",
    ),
    "Grafana service account token": (
        "glsa_Xq3vL9Ae7Rb2KpZw5Tn8Ym1Jc4Hd6Gf0_3e9a1c5f",
        "Xq3vL9Ae7Rb2KpZw5Tn8Ym1Jc4Hd6Gf0",
    ),
    "Twilio auth token under a name": (
        "TWILIO_AUTH_TOKEN=9c4e1b7a3f6d2c8e5b0a4f9d1c7e3b6a",
        "9c4e1b7a3f6d2c8e5b0a4f9d1c7e3b6a",
    ),
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


@pytest.mark.parametrize("padding", ["", "some words " * 100], ids=["short", "long"])
@pytest.mark.parametrize(("written", "core"), SHAPES.values(), ids=SHAPES.keys())
def test_every_shape_is_masked_where_it_is_written(written, core, padding):
    # A long text is searched near its needles only; a short one whole.
    masked = mask(f"{padding}config:\n{written}\nthat was it")
    assert core not in masked
    assert masked.startswith(f"{padding}config:\n") and masked.endswith("\nthat was it")


@pytest.mark.parametrize(("written", "core"), SHAPES.values(), ids=SHAPES.keys())
def test_every_shape_is_masked_inside_json_inside_json(written, core):
    # A tool's arguments holding JSON, rendered as JSON: quotes come escaped twice.
    arguments = orjson.dumps({"command": orjson.dumps({"env": written}).decode()}).decode()
    shown = orjson.dumps(orjson.loads(arguments), option=orjson.OPT_INDENT_2).decode()
    assert core not in mask(shown)


@pytest.mark.parametrize(
    "written",
    # Keys, not command lines or YAML: words before those are not glued to them.
    [
        w
        for w, _ in SHAPES.values()
        if w[:1].isalpha() and "://" not in w and "=" not in w and not any(c.isspace() for c in w)
    ],
)
def test_a_key_glued_to_the_word_before_it_is_masked(written):
    masked = mask(f"token{written}")
    assert written[4:30] not in masked


def test_escapes_map_back_to_where_the_key_is_written():
    text = 'say \\"' + PLANTED["GitHub token"] + '\\" ok'
    (match,) = find_secrets(text)
    assert text[match.start : match.end] == PLANTED["GitHub token"]


@pytest.mark.parametrize(
    "text",
    [
        "risk-assessment-framework-2024 and desk-organisation-tips-for-you",
        "CACHE_KEY=user-profile-settings",
        "The password: field is required, and the secret: ingredient is love",
        "git checkout 5f3c2a9b8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b",
        '{"id": "toolu_01AbCdEfGhIjKlMnOpQrStUv", "uuid": "5a3bb1c8-c3ce-466e-b487-24212cbf1da1"}',
        "PWD=/home/dev/project OLDPWD=/home/dev",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert mask(text) == text


def test_every_rule_has_needles_so_none_scans_everything():
    assert all(rule.needles for rule in RULES)
