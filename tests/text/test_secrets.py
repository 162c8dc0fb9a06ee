"""Secrets are redacted before storage: realistic samples, near-miss non-secrets, the bytes of
the file, the opt-out, the counter. (All keys below are made up; they only have the right shape.)"""

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from recallite_core import Recallite, RecalliteConfig
from recallite_core.text.redaction import find_secrets, key_names_secret, redact_text, redact_value
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings

# Real-shaped, made up. Fly.io macaroons really do start with a run of A's (zero bytes in base64).
FLY = "fm2_lJPECAAAAAAAAMr2xBDAu8J0hGzUZ9vQ1k8xT3n4QmWz8pR2sLkYcXvB7nH1aD9eF0gJ3iK6lM5oN4pQ7rS2tU1vW0xY9zA8bC7dE6fG5hI4jK3lM2n"
FLY2 = "fm2_lJPETm9yWkQ2sLkYcXvB7nH1aD9eF0gJ3iK6lM5oN4pQ7rS2tU1vW0xY9zA8bC7dE6fG5hI4jK3lM2nO1pQ0rS9tU8vW7xY6zZ"
GCP_JSON = (
    '{"type": "service_account", "project_id": "acme-prod", "private_key_id": "3f5a9c2e8b7d6f4a1c0e9b8d7f6a5c4e3b2d1f0a",\n'
    ' "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\\n'
    'Zx9wJalrXUtnFEMIK7MDENGbPxRfiCYzR8kq2Lm9Z\\n-----END PRIVATE KEY-----\\n",\n'
    ' "client_email": "deploy@acme-prod.iam.gserviceaccount.com", "client_id": "104857600123456789012"}'
)

# (text, kind, the secret that must disappear)
SECRETS = [
    ("aws key AKIAZ7Q3LJ5XKQ2VN4PD in the config", "aws_access_key_id", "AKIAZ7Q3LJ5XKQ2VN4PD"),
    ("temp creds ASIAY34FZKBOKMUTVV7A expire soon", "aws_access_key_id", "ASIAY34FZKBOKMUTVV7A"),
    ("AWS_SECRET_ACCESS_KEY=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", "aws_secret_access_key",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzR8kq2Lm9Z"),
    ("aws secret key is \"Zx9wJalrXUtnFEMI/K7MDENG/bPxRfiCYzR8kq2L\" ok", None, "Zx9wJalrXUtnFEMI/K7MDENG/bPxRfiCYzR8kq2L"),
    ("push with ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sD5jC2aE9uI please", "github_token", "ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sD5jC2aE9uI"),
    ("github_pat_11ABCDEFG0aBcDeFgHiJkL_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP", "github_token",
     "github_pat_11ABCDEFG0aBcDeFgHiJkL_0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"),
    ("OPENAI_API_KEY is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cD0eF now", "openai_key",
     "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cD0eF"),
    ("old style sk-4xT7bN2qL9mZ3vR8cW1yH6pK0sD5fJ2gA7eU3iO9 key", "openai_key", "sk-4xT7bN2qL9mZ3vR8cW1yH6pK0sD5fJ2gA7eU3iO9"),
    ("claude: sk-ant-api03-Xy7Zq2Wk9Lm4Np6Rt8Vb1Cd3Fg5Hj0Kl-ABCDEF123_xyz", "anthropic_key",
     "sk-ant-api03-Xy7Zq2Wk9Lm4Np6Rt8Vb1Cd3Fg5Hj0Kl-ABCDEF123_xyz"),
    ("bot token xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack_token",
     "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"),
    ("stripe sk_live_51HqZ2mKc8Yt3Rw9Pq4Lx7Vn charge", "stripe_key", "sk_live_51HqZ2mKc8Yt3Rw9Pq4Lx7Vn"),
    ("maps AIzaSyD3kF9xQ2mZ8vR1bL7nP4wY6tH0sJ5cE2a key", "google_api_key", "AIzaSyD3kF9xQ2mZ8vR1bL7nP4wY6tH0sJ5cE2a"),
    ("session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt",
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"),
    ('curl -H "Authorization: Bearer 9f8e7d6c5b4a3210fedcba9876543210abcd" https://api', "bearer_token",
     "9f8e7d6c5b4a3210fedcba9876543210abcd"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
     "private_key", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
    ("pasted half a key -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx9Zq", "private_key", "MIIEowIBAAKCAQEAx9Zq"),
    ("db is postgres://admin:S3cr3t!pw@db.internal:5432/app", "url_password", "S3cr3t!pw"),
    ("DB_PASSWORD=hunter2xyz", "env_secret", "hunter2xyz"),
    ('export STRIPE_WEBHOOK_SECRET="whsec_a1B2c3D4e5F6"', "env_secret", "whsec_a1B2c3D4e5F6"),
    ("config.yaml has password: Tr0ub4dor&3", "env_secret", "Tr0ub4dor&3"),
    ('{"client_secret": "q8Zp2LmX91"}', "env_secret", "q8Zp2LmX91"),
    ("apiKey = 'k3yV4lu3x9'", "env_secret", "k3yV4lu3x9"),
    # Provider formats added for issue 15 (the Fly.io body was stored; the others had no rule).
    (f"FLY_API_TOKEN=FlyV1 {FLY}", "flyio_token", FLY[4:]),
    (f"fly tokens create deploy printed {FLY},{FLY2} for the app", "flyio_token", FLY2[4:]),
    ("fly org token fo1_Zx9wJalrXUtnFEMIK7MDENGbPxRfiCYzR8kq2Lm9ZAb", "flyio_token", "Zx9wJalrXUtnFEMIK7MDENGbPxRfiCYzR8kq2Lm9ZAb"),
    ("git clone https://oauth2:glpat-Rk4wZ8vQ2mL7nP1xT9bC@gitlab.com/acme/app.git", None, "Rk4wZ8vQ2mL7nP1xT9bC"),
    ("GITLAB_TOKEN is glpat-3kR9xQ2mZ8vR1bL7nP4wY6tH0sJ5cE2aK.01.1a0b2c3d4 now", "gitlab_token",
     "3kR9xQ2mZ8vR1bL7nP4wY6tH0sJ5cE2aK"),
    ("runner: glrt-t1_Qm7zK2xV9pL4nR8wB3cT6yH1sD5", "gitlab_token", "Qm7zK2xV9pL4nR8wB3cT6yH1sD5"),
    ("//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "npm_token",
     "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmcCJGRiYTA1ZjVhLTk0ZTAtNDY1Zi1hOWE0LTY3MWY5ZjE4ZTEyYQACKlszLCI4YjlhNjM3Ny0xZDk3",
     "pypi_token", "CJGRiYTA1ZjVhLTk0ZTAtNDY1Zi1hOWE0LTY3MWY5ZjE4ZTEyYQACKlszLCI4YjlhNjM3Ny0xZDk3"),
    ("DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey=Xq3vN8bT2pL7mK9wR4yZ1cF6hJ0sD5gA3eU8iO2nB7vC4xM9qW1tY6r"
     "E5uI0oP3aS8dF2gH7jK4lZ9xC1vB6nM3qW==;EndpointSuffix=core.windows.net", "azure_storage_key",
     "Xq3vN8bT2pL7mK9wR4yZ1cF6hJ0sD5gA3eU8iO2nB7vC4xM9qW1tY6r"),
    ("Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=Lk9mN2bV5cX8zA1sD4fG7hJ0kL3qW6eR9tY2uI5oP8a=",
     "azure_storage_key", "Lk9mN2bV5cX8zA1sD4fG7hJ0kL3qW6eR9tY2uI5oP8a"),
    ("blob url https://acme.blob.core.windows.net/logs/a.txt?sv=2022-11-02&sr=b&sig=Zq8%2Bk3LmN0pQ7rS2tU1vW0xY9zA8bC7dE6fG5hI4jK%3D",
     "azure_sas_signature", "Zq8%2Bk3LmN0pQ7rS2tU1vW0xY9zA8bC7dE6fG5hI4jK"),
    ("the app registration's client secret is Abc8Q~xY7kQ2mZ8vR1bL7nP4wY6tH0sJ5cE2aKd (expires in May)", "azure_client_secret",
     "xY7kQ2mZ8vR1bL7nP4wY6tH0sJ5cE2aKd"),
    (GCP_JSON, "private_key", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"),
    ('half a service account: {"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcw\\nggSjAgEAAo',
     "private_key", "ggSjAgEAAo"),
    ("id_token=eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJodHRwczovL2FjY291bnRzLmdvb2dsZS5jb20ifQ.c2lnbmF0dXJlLXBhcnQtMTIz",
     "jwt", "c2lnbmF0dXJlLXBhcnQtMTIz"),
    ("password: hunter2hunter2", "env_secret", "hunter2hunter2"),
    ("[default]\naws_access_key_id = AKIAZ7Q3LJ5XKQ2VN4PD\naws_secret_access_key = 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\n",
     "aws_secret_access_key", "Zx9wJalrXUtnFEMI/K7MDENG/bPxRfiCYzR8kq2L"),
    ("secret = Qm7zK2xV9pL4", "env_secret", "Qm7zK2xV9pL4"),
    ("HF_TOKEN=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", "huggingface_token", "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"),
    ("sendgrid 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 sends mail", "sendgrid_key",
     "Hk1sD5fG7hJ0kL3qW6eR9tY2uI5oP8aZ4xC7vB1nM3q"),
    ("doctl auth init -t dop_v1_3f5a9c2e8b7d6f4a1c0e9b8d7f6a5c4e3b2d1f0a3f5a9c2e8b7d6f4a1c0e9b8d", "digitalocean_token",
     "3f5a9c2e8b7d6f4a1c0e9b8d7f6a5c4e3b2d1f0a3f5a9c2e8b7d6f4a1c0e9b8d"),
    ("docker login -u acme -p dckr_pat_Qm7zK2xV9pL4nR8wB3cT6yH1sD5f", "dockerhub_token", "Qm7zK2xV9pL4nR8wB3cT6yH1sD5f"),
    ("VAULT_TOKEN set to hvs.CAESIQm7zK2xV9pL4nR8wB3cT6yH1sD5fG7hJ0kL3q", "vault_token", "CAESIQm7zK2xV9pL4nR8wB3cT6yH1sD5fG7hJ0kL3q"),
    ("shopify admin 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", "shopify_token", "3f5a9c2e8b7d6f4a1c0e9b8d7f6a5c4e"),
    ("the webhook signs with whsec_Qm7zK2xV9pL4nR8wB3cT6yH1sD5fG7hJ", "stripe_webhook_secret", "Qm7zK2xV9pL4nR8wB3cT6yH1sD5fG7hJ"),
]

NEAR_MISSES = [
    "commit 3f5a9c2e8b7d6f4a1c0e9b8d7f6a5c4e3b2d1f0a fixed the flaky test",
    "request id 123e4567-e89b-12d3-a456-426614174000 failed",
    "the logo is data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg== in the README",
    "Fix the password reset flow before the token refresh work.",
    "Password: must be at least 12 characters. Token: see the wiki.",
    "Docs use sk-xxxxxxxxxxxxxxxxxxxxxxxx and sk-... as placeholders, and AKIAIOSFODNN7EXAMPLE.",
    "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX is the shape of a token",
    "export GITHUB_TOKEN=$(cat ~/.token); PASSWORD=${DB_PASS}; PASSWORD_MIN_LENGTH=12; TOKEN_URL=https://auth/x",
    "connect with postgres://user:password@localhost/db in development",
    "sk-learn-compatible-estimator-pipeline is not a key",
    "Send Bearer <token> in the header; the bearer of bad news is the CI bot.",
    "API_KEY=your-api-key-here",
    "SECRET_NAME=prod-db-credentials and TOKEN_TTL=3600",
    "BYPASS=true COMPASS_DIR=/opt/compass",
]

# Placeholders and code that names a secret without holding one: kept as written.
PLACEHOLDERS = [
    "password: <your password>",
    'password: "<your password>"',
    "token = ${TOKEN}",
    "DB_PASSWORD=changeme",
    "secret: xxxx",
    "api_key = example-key-123",
    "FLY_API_TOKEN=FlyV1 <token from fly tokens create>",
    "GITLAB_TOKEN=glpat-xxxxxxxxxxxxxxxxxxxx",
    "NPM_TOKEN=npm_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "password = REPLACE_ME",
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # AWS's documented example
    "client_secret: '{{ vault_client_secret }}'",
    "password = os.environ['DB_PASSWORD']",
    "apiKey: process.env.API_KEY,",
    "secret = settings.SECRET_KEY",
    "def login(user: str, password: Optional[str] = None):",
    "token = get_token(scope)",
    "PASSWORD=${DB_PASS:-}",
]

# Ordinary text near the new rules' prefixes: kept as written.
ORDINARY = [
    "Set npm_config_cache=/tmp/npm before npm ci.",
    "The hf_hub cache lives in ~/.cache/huggingface.",
    "SG. stands for Singapore in the region list; fm2 is a radio band.",
    "Use the sig= query parameter only with a SAS token from the portal.",
    "FlyV1 is the scheme of Fly.io tokens; glpat- prefixes GitLab's.",
    "cache_key: user_profile_v2 and sort_key: created_at",
    "Bump pypi-publish to v1.8 and rerun the workflow.",
    # code and prose an agent stores every day (found by running the rules over this repository)
    "mem.build_context(query, max_tokens=max_tokens, format=fmt)",
    "Row(tokens_stored=tokens_stored, tokens_matched=matched, redact_secrets=redact_secrets)",
    'inputs = {"input_ids": ids, "token_type_ids": type_ids}',
    '{"pad_token": "[PAD]", "unk_token": "[UNK]", "max_tokens": 2000, "token": 19204}',
    "permissions: id-token: write, then pypa/gh-action-pypi-publish",
    "# Second pass: superseded_by pointers",
    "Concurrency, crashes and secrets: [security.md](security.md).",
    'ENV = {"redact_secrets": "RECALLITE_REDACT_SECRETS", "api_key": "OPENAI_API_KEY"}',
    "The API verifies the HS256 secret from JWT_SECRET: `jwt.decode(token, key)`.",
]


@pytest.mark.parametrize("text, kind, secret", SECRETS)
def test_realistic_secrets_are_redacted(text, kind, secret):
    out, kinds = redact_text(text)
    assert secret not in out
    assert "[REDACTED:" in out and kinds
    if kind:
        assert kind in kinds
    assert redact_text(out) == (out, [])  # idempotent: markers are never re-redacted


@pytest.mark.parametrize("text", NEAR_MISSES + PLACEHOLDERS + ORDINARY)
def test_near_misses_placeholders_and_ordinary_text_are_kept(text):
    assert redact_text(text) == (text, [])


def test_a_fly_io_token_body_is_not_stored(db_path):
    """Issue 15: `FLY_API_TOKEN=FlyV1 fm2_…` kept the fm2_ body (the key rule took "FlyV1" only,
    and the run of A's at the start of every macaroon read as a placeholder)."""
    mem = Recallite.open(db_path, embedder="hash")
    m = mem.remember(f"Deploy with FLY_API_TOKEN=FlyV1 {FLY},{FLY2} fly deploy", type="procedure")
    ctx = mem.build_context("deploy fly", max_tokens=500).context
    mem.close()
    assert m.content == "Deploy with FLY_API_TOKEN=[REDACTED:flyio_token] fly deploy"
    assert "fm2_" not in ctx
    data = b"".join(open(db_path + sfx, "rb").read() for sfx in ("", "-wal") if os.path.exists(db_path + sfx))
    for part in (FLY[4:40], FLY[-30:], FLY2[4:40], FLY2[-30:]):
        assert part.encode() not in data


def test_a_yaml_password_and_an_aws_secret_assignment_are_not_stored(db_path):
    mem = Recallite.open(db_path, embedder="hash")
    mem.remember("config.yml:\n  password: hunter2hunter2\n~/.aws/credentials has\n"
                 "aws_secret_access_key = Zx9wJalrXUtnFEMI/K7MDENG/bPxRfiCYzR8kq2L", type="fact")
    mem.close()
    data = b"".join(open(db_path + sfx, "rb").read() for sfx in ("", "-wal") if os.path.exists(db_path + sfx))
    assert b"hunter2hunter2" not in data and b"Zx9wJalrXUtnFEMI" not in data


def test_overlapping_findings_are_merged_not_dropped():
    # the assignment sees the first word of the value; the Fly rule the whole token: one marker
    out, kinds = redact_text(f"TOKEN=FlyV1 {FLY} rest")
    assert out == "TOKEN=[REDACTED:flyio_token] rest" and kinds == ["flyio_token"]


def test_key_names():
    for k in ("DB_PASSWORD", "apiKey", "client_secret", "GITHUB_TOKEN", "aws.secret.key", "passwd", "MASTER_KEY"):
        assert key_names_secret(k), k
    for k in ("PASSWORD_MIN_LENGTH", "TOKEN_URL", "SECRET_NAME", "keyboard", "BYPASS", "tokenizer", "monkey"):
        assert not key_names_secret(k), k


def test_metadata_values_and_secret_named_keys():
    kinds: list[str] = []
    out = redact_value({"password": "s3cr3tpass", "n": [{"url": "https://u:p4ssw0rd9@h.example"}], "count": 3,
                        "token": "todo"}, kinds)
    assert out == {"password": "[REDACTED:named_secret]", "n": [{"url": "https://u:[REDACTED:url_password]@h.example"}],
                   "count": 3, "token": "todo"}
    assert sorted(kinds) == ["named_secret", "url_password"]


@given(st.text(alphabet=st.sampled_from(list("aAkK019_-=:/@. \n\"'sxpPghAIzaeyJ")), max_size=300))
@settings(max_examples=300, deadline=None)
def test_redaction_is_total_and_idempotent(text):
    out, _ = redact_text(text)
    assert redact_text(out)[0] == out
    assert all(0 <= f.start < f.end <= len(text) for f in find_secrets(text))


def test_secrets_never_reach_the_file(db_path):
    mem = Recallite.open(db_path, embedder="hash")
    secrets = [s for _, _, s in SECRETS]
    notes = "Deploy notes: " + "\n".join(t for t, _, _ in SECRETS)
    m = mem.remember(
        notes,
        title="creds ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sD5jC2aE9uI",
        tags=["AKIAZ7Q3LJ5XKQ2VN4PD"],
        metadata={"env": "DB_PASSWORD=hunter2xyz", "api_key": "Zq81mNw77Lp0"},
        type="fact",
    )
    mem.recall("what is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cD0eF for?")  # the query is logged too
    r = mem.recall("deploy notes")
    mem.feedback(r.retrieval_id, "success", reason="worked with password=Tr0ub4dor&3")
    assert "[REDACTED:" in m.content and "[REDACTED:" in m.title and m.metadata["api_key"] == "[REDACTED:named_secret]"
    s = mem.stats()
    assert s.redactions >= len(redact_text(notes)[1]) + 3 and s.redactions_by_kind["github_token"] >= 2
    mem.close()
    data = b"".join(open(db_path + sfx, "rb").read() for sfx in ("", "-wal") if __import__("os").path.exists(db_path + sfx))
    for secret in secrets + ["Zq81mNw77Lp0", "Tr0ub4dor&3"]:
        assert secret.encode() not in data, secret


def test_opt_out_per_call_and_by_config():
    mem = Recallite.open(None, embedder="hash")
    kept = mem.remember("token ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sD5jC2aE9uI", redact_secrets=False)
    assert "ghp_4fT9" in kept.content and mem.stats().redactions == 0
    many = mem.remember_many([{"content": "DB_PASSWORD=hunter2xyz", "redact_secrets": False}, {"content": "DB_PASSWORD=hunter3xyz"}])
    assert "hunter2xyz" in many[0].content and "hunter3xyz" not in many[1].content
    mem.close()
    raw = Recallite.open(None, embedder="hash", config=RecalliteConfig(redact_secrets=False))
    assert "hunter2xyz" in raw.add("DB_PASSWORD=hunter2xyz").content
    raw.close()


def test_duplicate_detection_sees_the_redacted_text():
    mem = Recallite.open(None, embedder="hash")
    a = mem.add("the key is ghp_4fT9kQ2mZ8xR1vB7nL3pW6yH0sD5jC2aE9uI")
    b = mem.add("the key is ghp_9gU1kQ2mZ8xR1vB7nL3pW6yH0sD5jC2aE7zZ")
    assert b.duplicate_of == a.id  # both are "the key is [REDACTED:github_token]"
    mem.close()


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_remember_redacts_and_has_no_opt_out(anyio_backend):
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False))) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert "redact_secrets" not in tools["recallite_remember"].input_schema["properties"]
        res = await c.call_tool("recallite_remember", {"content": "use sk-ant-api03-Xy7Zq2Wk9Lm4Np6Rt8Vb1Cd3Fg5Hj0Kl-ABCDEF123_xyz"})
        got = await c.call_tool("recallite_get", {"ids": [res.structured_content["id"]]})
        assert got.structured_content["memories"][0]["content"] == "use [REDACTED:anthropic_key]"
        stats = (await c.call_tool("recallite_stats", {})).structured_content
        assert stats["redactions"] == 1 and stats["redactions_by_kind"] == {"anthropic_key": 1}
    async with Client(build_server(Settings(db=":memory:", embedder="hash", warm_embedder=False, redact_secrets=False))) as c:
        res = await c.call_tool("recallite_remember", {"content": "DB_PASSWORD=hunter2xyz"})
        got = await c.call_tool("recallite_get", {"ids": [res.structured_content["id"]]})
        assert got.structured_content["memories"][0]["content"] == "DB_PASSWORD=hunter2xyz"


def test_server_settings_switch(monkeypatch):
    monkeypatch.setenv("RECALLITE_REDACT_SECRETS", "0")
    monkeypatch.setenv("RECALLITE_MAX_TAGS", "5")
    s = Settings.load()
    assert s.redact_secrets is False and s.max_tags == 5
    assert Settings.load(redact_secrets=True).redact_secrets is True
    from recallite_mcp.server import open_memory

    mem = open_memory(Settings(db=":memory:", embedder="hash", redact_secrets=False, max_tags=5, max_metadata_bytes=100))
    assert mem.config.redact_secrets is False and mem.limits.max_tags == 5 and mem.limits.max_metadata_bytes == 100
    mem.close()


def test_a_long_token_with_a_placeholder_word_inside_is_still_a_secret():
    # about 1 in 2,500 random 200-character tokens holds "your" or "fake" among its letters
    token = FLY[:60] + "QyourXk" + FLY[60:] + "bFakeZ"
    out, kinds = redact_text(f"deploy token {token}")
    assert out == "deploy token [REDACTED:flyio_token]" and kinds == ["flyio_token"]
    assert redact_text("API_KEY=sk-proj-your-key-here-0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdef")[1] == []
