"""PostgreSQL driver errors reach the user as one line that says what to do next, password masked
(issue 17): in the CLI (a click error, no traceback), at the MCP edge (a ToolError) and from the
store itself (a StoreError). Each case makes the real error happen where it can: a closed port, a
missing database, an unknown role, a role that may not create the `vector` extension, a
serialization failure raised by the server, a connection the server terminated."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit, urlunsplit

import pytest
from click.testing import CliRunner

from recallite_core.errors import StoreError
from recallite_core.storage.postgres.errors import explain, is_driver_error, next_step
from recallite_mcp.cli import main

SECRET = "s3cret-pw"


def with_parts(url: str, *, db: str | None = None, user: str | None = None, password: str | None = None) -> str:
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    name = user if user is not None else (parts.username or "postgres")
    auth = f"{name}:{password}" if password is not None else name
    return urlunsplit(parts._replace(netloc=f"{auth}@{host}", path="/" + db if db else parts.path))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


def cli(*args: str):
    return CliRunner().invoke(main, list(args))


def one_line_error(res, *needles: str) -> str:
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and SECRET not in res.output, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: PostgreSQL"), res.output
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def test_connection_refused_says_to_check_the_server_and_url():
    url = f"postgresql://bob:{SECRET}@127.0.0.1:{closed_port()}/recallite"
    one_line_error(cli("stats", "--db", url, "--embedder", "hash"),
                   "postgresql://bob:***@127.0.0.1", "Connection refused", "Check that the server is running")


def test_missing_database_says_to_create_it(postgres_url):
    url = with_parts(postgres_url, db="no_such_db", password=SECRET)
    one_line_error(cli("list", "--db", url, "--embedder", "hash"), '"no_such_db" does not exist', "createdb")


def test_unknown_role_says_to_check_the_user(postgres_url):
    # The test server trusts its socket, so a wrong password passes; an unknown role is the
    # authentication failure it can produce. The password message is covered below by its text.
    url = with_parts(postgres_url, user="nobody_here", password=SECRET)
    one_line_error(cli("recall", "deploys", "--db", url, "--embedder", "hash"), 'role "nobody_here" does not exist',
                   "Check the user name")


def test_password_failure_text_maps_to_pgpass_advice():
    exc = Exception('connection failed: connection to server at "db" (10.0.0.5), port 5432 failed: FATAL:  '
                    'password authentication failed for user "app"')
    err = explain(exc, f"postgresql://app:{SECRET}@db/recallite", "connecting", SECRET)
    assert SECRET not in str(err) and "***" in str(err) and "PGPASSWORD" in str(err) and "\n" not in str(err)


def test_a_role_that_may_not_create_the_vector_extension_is_told_how(postgres_url):
    import psycopg

    admin = with_parts(postgres_url, db="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS no_vector WITH (FORCE)")
        conn.execute("CREATE DATABASE no_vector")
        conn.execute("DROP ROLE IF EXISTS plain_app")
        conn.execute("CREATE ROLE plain_app LOGIN")
    try:
        url = with_parts(postgres_url, db="no_vector", user="plain_app", password=SECRET)
        line = one_line_error(cli("stats", "--db", url, "--embedder", "hash"), "`vector` extension", "CREATE EXTENSION vector")
        assert "may not create it" in line
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS no_vector WITH (FORCE)")
            conn.execute("DROP ROLE IF EXISTS plain_app")


def server_error(url: str, sqlstate: str, text: str) -> Exception:
    """A real psycopg error with this SQLSTATE, raised by the server."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        try:
            conn.execute(f"DO $$ BEGIN RAISE EXCEPTION '{text}' USING ERRCODE = '{sqlstate}'; END $$")
        except psycopg.Error as exc:
            return exc
    raise AssertionError("the server raised nothing")


def test_a_serialization_failure_inside_a_write_says_retry(postgres_db_url):
    from recallite_core.storage import open_store

    store = open_store(postgres_db_url)
    try:
        with pytest.raises(StoreError) as info, store.transaction():
            store.conn.execute("DO $$ BEGIN RAISE EXCEPTION 'could not serialize access due to concurrent update' "
                               "USING ERRCODE = '40001'; END $$")
        msg = str(info.value)
        assert "could not serialize access" in msg and "retry it" in msg and "CONTEXT" not in msg and "\n" not in msg
        with store.reading() as s:  # the store is usable again
            assert s.feed.counter() >= 0
    finally:
        store.close()


def test_a_connection_lost_inside_a_write_is_one_line_and_the_store_reconnects(postgres_db_url):
    import psycopg

    from recallite_core.storage import open_store

    store = open_store(postgres_db_url)
    try:
        pid = store.conn.info.backend_pid
        with pytest.raises(StoreError) as info, store.transaction():
            # The unit must have reached the server: a connection dropped before its first statement is
            # replaced and the opening resent (lazy.py), which is not a lost write.
            store.conn.execute("SELECT 1")
            with psycopg.connect(postgres_db_url, autocommit=True) as admin:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            store.conn.execute("SELECT 1")
        msg = str(info.value)
        assert "\n" not in msg and ("reconnects by itself" in msg or "may or may not have been kept" in msg), msg
        with store.reading() as s:  # the next unit of work opens a new connection first
            assert s.feed.counter() >= 0
    finally:
        store.close()


def test_losing_the_connection_at_commit_does_not_claim_nothing_was_kept(postgres_url):
    exc = server_error(postgres_url, "08006", "server closed the connection unexpectedly")
    assert "may or may not have been kept" in next_step(exc, "committing")
    assert "reconnects by itself" in next_step(exc, "a write")


@pytest.mark.parametrize("sqlstate,needle", [("40P01", "retry it"), ("25006", "primary"), ("53300", "pgbouncer"),
                                             ("57014", "statement_timeout"), ("42501", "Least-privilege")])
def test_each_server_error_names_its_next_step(postgres_url, sqlstate, needle):
    exc = server_error(postgres_url, sqlstate, "boom")
    assert is_driver_error(exc)
    assert needle in str(explain(exc, postgres_url, "a write"))


def test_an_unwrapped_driver_error_at_the_cli_edge_is_one_line(postgres_db_url, monkeypatch):
    from recallite_core import Recallite

    exc = server_error(postgres_db_url, "40001", "could not serialize access")

    def boom(self, *a, **k):
        raise exc

    monkeypatch.setattr(Recallite, "recall", boom)
    one_line_error(cli("recall", "deploys", "--db", postgres_db_url, "--embedder", "hash"), "retry it")


@pytest.mark.anyio
async def test_tools_on_an_unreachable_server_answer_with_the_fix_masked():
    from mcp import Client

    from recallite_mcp.server import build_server
    from recallite_mcp.settings import Settings

    url = f"postgresql://bob:{SECRET}@127.0.0.1:{closed_port()}/recallite"
    async with Client(build_server(Settings(db=url, embedder="hash", warm_embedder=False))) as client:
        res = await client.call_tool("recallite_recall", {"query": "deploys"})
    text = res.content[0].text
    assert res.is_error and SECRET not in text and "***" in text
    assert "Check that the server is running" in text and "restart it" in text


@pytest.mark.anyio
async def test_an_unwrapped_driver_error_at_the_mcp_edge_is_a_tool_error(postgres_db_url, monkeypatch):
    from mcp import Client

    from recallite_core import Recallite
    from recallite_mcp.server import build_server
    from recallite_mcp.settings import Settings

    exc = server_error(postgres_db_url, "40001", "could not serialize access")

    def boom(self, *a, **k):
        raise exc

    monkeypatch.setattr(Recallite, "recall", boom)
    async with Client(build_server(Settings(db=postgres_db_url, embedder="hash", warm_embedder=False))) as client:
        res = await client.call_tool("recallite_recall", {"query": "deploys"})
    text = res.content[0].text
    assert res.is_error and "could not serialize access" in text and "retry it" in text and "Internal error" not in text
