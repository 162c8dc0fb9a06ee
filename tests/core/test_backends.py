"""Choosing the storage backend (issue 17): `Recallite.open(path_or_url)` opens PostgreSQL for a
`postgresql://` / `postgres://` URL and SQLite otherwise; credentials never reach a message, and
the same ranking code gives the same recall on both backends."""

import sys

import pytest

from recallite_core import Recallite, StoreError
from recallite_core.storage import is_postgres_url, masked_location
from recallite_mcp.settings import Settings

SECRET = "s3cret-pw"


def with_password(url: str) -> str:
    """The test server's URL with a password in it (the socket's trust login ignores it)."""
    head, rest = url.split("://", 1)
    user, _, tail = rest.partition("@")
    return f"{head}://{user.split(':')[0]}:{SECRET}@{tail}"


@pytest.mark.parametrize("path, server", [
    ("postgresql://u@h/db", True), ("postgres://u:p@h:5432/db?sslmode=require", True),
    ("  PostgreSQL://h/db", True), (None, False), (":memory:", False), ("memory.db", False),
    ("/tmp/postgresql/memory.db", False), ("postgresql.db", False),
])
def test_the_url_scheme_chooses_the_backend(path, server):
    assert is_postgres_url(path) is server


def test_locations_in_messages_hide_the_password():
    assert masked_location("postgresql://app:hunter2@db/x") == "postgresql://app:***@db/x"
    assert masked_location("postgres://db/x?password=hunter2&sslmode=require") == "postgres://db/x?password=***&sslmode=require"
    assert masked_location("/data/memory.db") == "/data/memory.db" and masked_location(None) == ":memory:"


def test_settings_pass_a_url_on_and_label_it_masked(monkeypatch):
    monkeypatch.setenv("RECALLITE_DB", "postgresql://app:hunter2@db.internal/recallite")
    s = Settings.load()
    assert s.db_path == "postgresql://app:hunter2@db.internal/recallite" and s.is_postgres
    assert s.db_label == "postgresql://app:***@db.internal/recallite"
    assert not Settings(db="~/x.db").is_postgres and Settings(db="~/x.db").db_label.endswith("/x.db")


def test_without_psycopg_the_error_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    with pytest.raises(StoreError) as info:
        Recallite.open(f"postgresql://app:{SECRET}@db.invalid/recallite", embedder="hash")
    text = str(info.value)
    assert 'pip install "recallite-mcp[postgres]"' in text and "\n" not in text and SECRET not in text


def test_an_unreachable_server_is_named_without_its_password(tmp_path):
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install \"recallite-mcp[postgres]\")")
    url = f"postgresql://app:{SECRET}@/recallite?host={tmp_path}/no-server-here&connect_timeout=2"
    with pytest.raises(StoreError) as info:
        Recallite.open(url, embedder="hash")
    assert SECRET not in str(info.value) and "***" in str(info.value)


def test_postgres_stats_and_doctor_mask_the_password(postgres_db_url):
    from recallite_mcp.doctor import run_doctor

    url = with_password(postgres_db_url)
    with Recallite.open(url, embedder="hash", workers=True) as m:
        assert m.scan_pool is None  # workers read a SQLite file; the server answers its own searches
        m.add("kept in PostgreSQL")
        st = m.stats()
        assert st.memories == 1 and st.db_path.startswith("postgresql://") and SECRET not in st.db_path
        assert "***" in st.db_path and st.db_bytes > 0
    report = run_doctor(Settings(db=url, embedder="hash", warm_embedder=False))
    assert SECRET not in repr(report)
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["database"]["ok"] and checks["integrity"]["ok"] and checks["projections"]["ok"], checks
    assert "journal" not in checks and "permissions" not in checks


def _corpus(m):
    # Plain words: PostgreSQL's parser splits hyphenated words, paths and URLs differently from
    # FTS5's (docs/postgres.md, "Where the answers differ"), so those rank differently by design.
    tools = ["hammer", "wrench", "pliers"]
    topics = ["deploy", "database", "editor", "testing", "release", "security", "logging"]
    for i in range(60):
        t = topics[i % len(topics)]
        m.remember(f"Note {i}: the {t} checklist says step {i % 5} uses the {tools[i % 3]} before the {topics[(i + 2) % 7]} review.",
                   type=["fact", "procedure", "lesson"][i % 3], tags=[t], scope="project:demo" if i % 4 else "user")


@pytest.mark.parametrize("query", ["deploy checklist wrench", "security review step 3", "how do we release logging"])
def test_recall_ranks_the_same_on_both_backends(postgres_db_url, query):
    """Same memories, same embedder: same ids in the same order, scores equal to rounding (the
    keyword channel's bm25 is computed in the server; vectors load through the store)."""
    lite = Recallite.open(None, embedder="hash")
    pg = Recallite.open(postgres_db_url, embedder="hash")
    try:
        _corpus(lite)
        _corpus(pg)
        a, b = lite.recall(query, limit=10), pg.recall(query, limit=10)
        assert a.ids == b.ids
        assert [h.score for h in a.memories] == pytest.approx([h.score for h in b.memories], rel=1e-6, abs=1e-9)
        ra = lite.recall(query, limit=5, scope="project:demo", types=["procedure"])
        rb = pg.recall(query, limit=5, scope="project:demo", types=["procedure"])
        assert ra.ids == rb.ids and ra.ids
    finally:
        lite.close()
        pg.close()


def test_export_import_round_trip_between_backends(postgres_db_url, tmp_path):
    """A JSONL backup of a SQLite store restores into PostgreSQL with the same memories and
    statuses, and PostgreSQL's backup restores into SQLite the same again."""
    lite = Recallite.open(None, embedder="hash")
    pg = Recallite.open(postgres_db_url, embedder="hash")
    again = Recallite.open(None, embedder="hash")
    try:
        a = lite.remember("Use black for formatting.", type="constraint", tags=["python"], scope="project:x")
        b = lite.remember("Use ruff format, not black.", type="constraint", scope="project:x")
        if lite.get(a.id).status != "superseded":  # write-time correction detection may have done it already
            lite.supersede(a.id, b.id)
        assert lite.get(a.id).superseded_by == b.id
        lite.remember("Deploys run from CI only.", type="procedure", scope="user")

        def key(m):
            return (m.content, m.type, m.status, m.scope, tuple(m.tags), m.superseded_by is not None)

        def listed(m):
            return sorted(map(key, m.list(limit=100)))

        lite.export_jsonl(str(tmp_path / "lite.jsonl"))
        pg.import_jsonl(str(tmp_path / "lite.jsonl"), trust="restore")
        assert listed(pg) == listed(lite)
        pg.export_jsonl(str(tmp_path / "pg.jsonl"))
        again.import_jsonl(str(tmp_path / "pg.jsonl"), trust="restore")
        assert listed(again) == listed(lite)
        assert pg.recall("ruff formatting").ids == lite.recall("ruff formatting").ids
    finally:
        for m in (lite, pg, again):
            m.close()


def test_open_store_picks_the_backend_class(postgres_db_url):
    from recallite_core.storage import open_store
    from recallite_core.storage.postgres import PostgresStore
    from recallite_core.storage.sqlite.store import Store

    lite, pg = open_store(None), open_store(postgres_db_url)
    try:
        assert isinstance(lite, Store) and isinstance(pg, PostgresStore) and pg.path is None
        assert lite.busy_timeout_ms == Store(None).busy_timeout_ms  # None keeps each backend's default
    finally:
        lite.close()
        pg.close()
