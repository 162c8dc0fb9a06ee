"""Secrets are redacted before storage: realistic samples, near-miss non-secrets, the bytes of
the file, the opt-out, the counter. (All keys below are made up; they only have the right shape.)"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from recallite_core import Recallite, RecalliteConfig
from recallite_core.redaction import find_secrets, key_names_secret, redact_text, redact_value
from recallite_mcp.server import build_server
from recallite_mcp.settings import Settings

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


@pytest.mark.parametrize("text, kind, secret", SECRETS)
def test_realistic_secrets_are_redacted(text, kind, secret):
    out, kinds = redact_text(text)
    assert secret not in out
    assert "[REDACTED:" in out and kinds
    if kind:
        assert kind in kinds
    assert redact_text(out) == (out, [])  # idempotent: markers are never re-redacted


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_misses_are_kept(text):
    assert redact_text(text) == (text, [])


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
    m = mem.remember(
        "Deploy notes: " + "\n".join(t for t, _, _ in SECRETS),
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
    assert s.redactions >= len(SECRETS) + 3 and s.redactions_by_kind["github_token"] >= 2
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
