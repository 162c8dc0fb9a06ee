import os
import sqlite3
import stat

import pytest

from recallite_core import Recallite, SchemaVersionError, StoreError
from recallite_core.storage.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from recallite_core.storage.sqlite.store import Store, _split_sql


def test_new_file_is_wal_private_and_migrated(db_path):
    m = Recallite.open(db_path, embedder="hash")
    m.add("first memory")
    conn = m.store.conn
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]
    assert names == [n for n, _ in MIGRATIONS]
    for suffix in ("", "-wal", "-shm"):
        p = db_path + suffix
        if os.path.exists(p):
            assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p
    m.close()


def test_reopen_keeps_data_and_does_not_remigrate(db_path):
    m = Recallite.open(db_path, embedder="hash")
    mid = m.add("persisted across opens").id
    m.close()
    m2 = Recallite.open(db_path, embedder="hash")
    assert m2.get(mid).content == "persisted across opens"
    assert m2.store.conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] == len(MIGRATIONS)
    m2.close()


def test_migrations_are_named_ordered_and_unique():
    names = [n for n, _ in MIGRATIONS]
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    for name, sql in MIGRATIONS:
        assert name[:4].isdigit()
        assert _split_sql(sql)


def test_newer_schema_is_refused_untouched(db_path):
    Recallite.open(db_path, embedder="hash").close()
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_the_future', 0)")
    conn.execute("PRAGMA user_version = 999")
    conn.commit()
    conn.close()
    before = open(db_path, "rb").read()
    with pytest.raises(SchemaVersionError, match="newer recallite"):
        Recallite.open(db_path, embedder="hash")
    assert open(db_path, "rb").read() == before


def test_missing_directory_is_a_clear_error(tmp_path):
    with pytest.raises(StoreError, match="does not exist"):
        Store(str(tmp_path / "nope" / "x.db"))


def test_corrupt_file_is_refused_and_left_alone(tmp_path):
    p = tmp_path / "bad.db"
    p.write_bytes(b"this is not sqlite at all" * 100)
    before = p.read_bytes()
    with pytest.raises(StoreError, match="not a valid recallite database|damaged"):
        Recallite.open(str(p), embedder="hash")
    assert p.read_bytes() == before


def test_foreign_sqlite_database_is_refused(tmp_path):
    p = tmp_path / "other.db"
    c = sqlite3.connect(p)
    c.execute("CREATE TABLE invoices (id INTEGER)")
    c.commit()
    c.close()
    with pytest.raises(StoreError, match="another program"):
        Recallite.open(str(p), embedder="hash")


def test_failed_write_rolls_back_everything(file_mem):
    before = file_mem.store.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    with pytest.raises(RuntimeError):
        with file_mem.store.transaction() as conn:
            file_mem.store.conn.execute(
                "INSERT INTO memories (type, content, status, source_type, confidence, created_at, updated_at, content_hash) "
                "VALUES ('fact', 'x', 'active', 'user', 1, 0, 0, 'h')"
            )
            raise RuntimeError("boom")
    assert file_mem.store.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == before


def test_stats_do_not_wait_for_the_writer_lock(file_mem):
    """Regression: a long recall (a 100k worker scan) holds the writer connection's lock; stats
    must still answer, from a read-only connection of their own."""
    import threading

    file_mem.add("counted while the writer is busy")
    done = []
    with file_mem.store.lock:  # what a long recall or write holds
        t = threading.Thread(target=lambda: done.append(file_mem.stats().memories))
        t.start()
        t.join(timeout=30)
        assert not t.is_alive() and done == [1]


class _Recording:
    """A connection that remembers the SQL and parameters it ran (to explain a backend's own query)."""

    def __init__(self, conn):
        self.conn, self.ran = conn, []

    def execute(self, sql, params=()):
        self.ran.append((sql, params))
        return self.conn.execute(sql, params)


def test_restore_lookup_of_a_logged_retrieval_scanned_the_whole_log(db_path):
    """Restoring into a store with logged retrievals looked each one up by query, kind and time
    with a scan of the whole retrievals table (archive.same_retrieval, no index): migration 0016
    indexes the time, and SQLite's plan for that very query searches the index."""
    from recallite_core.storage.sqlite.archive import SqliteArchive

    m = Recallite.open(db_path, embedder="hash")
    conn = m.store.conn
    with conn:
        conn.executemany("INSERT INTO retrievals (query, profile, kind, created_at) VALUES (?, 'default', 'recall', ?)",
                         [(f"query {i}", 1_700_000_000 + i * 0.5) for i in range(3000)])
    conn.execute("ANALYZE")  # the plan with real statistics, as a long-lived store has them
    recording = _Recording(conn)
    archive = SqliteArchive(recording)  # type: ignore[arg-type]
    assert archive.same_retrieval("query 7", "recall", 1_700_000_003.5, 3000) == 8
    assert archive.same_retrieval("query 7", "recall", 1_700_000_003.5, 5) is None  # logged after `upto`
    sql, params = recording.ran[0]
    plan = " ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    assert "USING INDEX retrievals_created_at" in plan and "SCAN" not in plan, plan
    m.close()


def test_a_store_at_schema_15_gains_the_retrievals_created_at_index(db_path):
    """The index comes in a migration of its own, after every shipped one: a store migrated before it
    gets it on the next open, and records it."""
    names = [n for n, _ in MIGRATIONS]
    assert names.index("0016_retrievals_created_at") == 15 and names[14] == "0015_tuning_served_limit"
    Recallite.open(db_path, embedder="hash").close()
    conn = sqlite3.connect(db_path)
    conn.execute("DROP INDEX retrievals_created_at")  # as a store of the release before this migration
    conn.execute("DELETE FROM schema_migrations WHERE name = '0016_retrievals_created_at'")
    conn.execute("PRAGMA user_version = 15")
    conn.commit()
    conn.close()
    m = Recallite.open(db_path, embedder="hash")
    indexes = {r[0] for r in m.store.conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'retrievals' AND type = 'index'")}
    assert "retrievals_created_at" in indexes
    assert m.store.conn.execute("SELECT count(*) FROM schema_migrations WHERE name = '0016_retrievals_created_at'").fetchone()[0] == 1
    m.close()
