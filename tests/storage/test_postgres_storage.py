"""What only the PostgreSQL backend does (storage/postgres/, issue 17): opening (the driver, the
`vector` extension, migrations, refusals), messages without credentials, the write lock, and the
vector channel answered in the server. The shared contract is tests/storage/test_storage_contract.py."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pytest

from recallite_core.errors import SchemaVersionError, StoreError
from recallite_core.storage.base import MemoryFilter

DIMS = 16


def _store(url, **kw):
    from recallite_core.storage.postgres import PostgresStore

    return PostgresStore(url, **kw)


def _with(url: str, *, user: str | None = None, password: str | None = None, db: str | None = None) -> str:
    parts = urlsplit(url)
    netloc = parts.netloc.rsplit("@", 1)[-1]
    name = user or (parts.username or "postgres")
    auth = f"{name}:{password}" if password is not None else name
    return urlunsplit(parts._replace(netloc=f"{auth}@{netloc}", path="/" + db if db else parts.path))


def test_the_core_imports_without_psycopg_and_names_the_extra():
    code = textwrap.dedent("""
        import sys
        sys.modules["psycopg"] = None  # as if it were not installed
        sys.modules["pgvector"] = None
        import recallite_core
        from recallite_core.storage.postgres import PostgresStore
        from recallite_core.errors import StoreError
        try:
            PostgresStore("postgresql://nobody@/nowhere")
        except StoreError as exc:
            print(exc)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert 'pip install "recallite-mcp[postgres]"' in out.stdout and len(out.stdout.strip().splitlines()) == 1


def test_a_connection_error_never_shows_the_password(postgres_url):
    url = _with(postgres_url, password="hunter2-secret", db="no_such_database")
    with pytest.raises(StoreError) as err:
        _store(url)
    text = str(err.value)
    assert "hunter2-secret" not in text and "***" in text and "no_such_database" in text


def test_migrations_are_recorded_and_a_second_open_changes_nothing(postgres_db_url):
    import psycopg

    from recallite_core.storage.postgres.migrations import MIGRATIONS

    store = _store(postgres_db_url)
    version = store.schema_version()
    store.close()
    assert version == len(MIGRATIONS) >= 2
    again = _store(postgres_db_url)
    try:
        assert again.schema_version() == version
    finally:
        again.close()
    with psycopg.connect(postgres_db_url) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY 1")] == [n for n, _ in MIGRATIONS]


class _Recording:
    """A connection that remembers the SQL and parameters it ran (to explain a backend's own query)."""

    def __init__(self, conn):
        self.conn, self.ran = conn, []

    def execute(self, sql, params=()):
        self.ran.append((sql, params))
        return self.conn.execute(sql, params)


def test_restore_lookup_of_a_logged_retrieval_scanned_the_whole_log(postgres_db_url):
    """As on SQLite: archive.same_retrieval, run once per restored retrieval, had no index to use
    (a sequential scan of the retrieval log each time); migration 0008 indexes the time."""
    import psycopg

    from recallite_core.storage.postgres.archive import PostgresArchive
    from recallite_core.storage.postgres.migrations import MIGRATIONS

    names = [n for n, _ in MIGRATIONS]
    assert names.index("0008_retrievals_created_at") == 7 and names[6] == "0007_keyword_postings"
    _store(postgres_db_url).close()
    with psycopg.connect(postgres_db_url) as conn:
        conn.cursor().executemany(
            "INSERT INTO retrievals (query, profile, kind, created_at) VALUES (%s, 'default', 'recall', %s)",
            [(f"query {i}", 1_700_000_000 + i * 0.5) for i in range(5000)])
        conn.execute("ANALYZE retrievals")  # the plan with real statistics, as a long-lived store has them
        recording = _Recording(conn)
        archive = PostgresArchive(recording)
        assert archive.same_retrieval("query 7", "recall", 1_700_000_003.5, 5000) == 8
        assert archive.same_retrieval("query 7", "recall", 1_700_000_003.5, 5) is None  # logged after `upto`
        sql, params = recording.ran[0]
        plan = " ".join(r[0] for r in conn.execute("EXPLAIN " + sql, params))
    assert "retrievals_created_at" in plan and "Seq Scan" not in plan, plan


def test_two_processes_creating_one_database_do_not_collide(postgres_db_url):
    import psycopg

    with psycopg.connect(postgres_db_url, autocommit=True) as conn:
        conn.execute("DROP EXTENSION vector")  # the first opens create it too
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            _store(postgres_db_url).close()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


def test_a_newer_schema_is_refused_untouched(postgres_db_url):
    import psycopg

    _store(postgres_db_url).close()
    with psycopg.connect(postgres_db_url) as conn:
        conn.execute("INSERT INTO schema_migrations (name, applied_order, applied_at) VALUES ('0002_future', 2, 0)")
    with pytest.raises(SchemaVersionError, match="newer recallite.*0002_future"):
        _store(postgres_db_url)
    with pytest.raises(SchemaVersionError):
        _store(postgres_db_url, read_only=True)


def test_a_read_only_store_needs_an_existing_one(postgres_db_url):
    with pytest.raises(StoreError, match="no recallite store yet"):
        _store(postgres_db_url, read_only=True)
    _store(postgres_db_url).close()
    _store(postgres_db_url, read_only=True).close()


def test_a_foreign_memories_table_is_refused(postgres_db_url):
    import psycopg

    with psycopg.connect(postgres_db_url) as conn:
        conn.execute("CREATE TABLE memories (x int)")
    with pytest.raises(StoreError, match="did not create"):
        _store(postgres_db_url)


def test_a_refused_vector_extension_is_named(postgres_url):
    """A role that may not create pgvector (not a superuser; pgvector is not a trusted extension),
    on a database without it: one clear line naming the extension, not a driver traceback."""
    import psycopg

    admin = _with(postgres_url, db="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS novector WITH (FORCE)")
        conn.execute("DROP ROLE IF EXISTS plain_role")
        conn.execute("CREATE ROLE plain_role LOGIN")
        conn.execute("CREATE DATABASE novector TEMPLATE template0 OWNER plain_role")
    try:
        with pytest.raises(StoreError, match="`vector` extension") as err:
            _store(_with(postgres_url, user="plain_role", db="novector"))
        assert "CREATE EXTENSION vector" in str(err.value)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS novector WITH (FORCE)")
            conn.execute("DROP ROLE IF EXISTS plain_role")


def test_a_write_cannot_join_a_read_snapshot(postgres_db_url):
    store = _store(postgres_db_url)
    try:
        with store.reading():
            with pytest.raises(StoreError, match="READ ONLY"):
                with store.transaction():
                    pass
        with store.transaction():  # the store is usable afterwards
            pass
    finally:
        store.close()


def test_a_writer_waits_for_the_write_lock_boundedly(postgres_db_url):
    first = _store(postgres_db_url)
    second = _store(postgres_db_url, busy_timeout_ms=200)
    try:
        with first.transaction() as s:
            first.set_meta(s, "holder", "first")  # BEGIN goes out with a unit's first statement
            with pytest.raises(StoreError, match="write lock"):
                with second.transaction() as t:
                    second.set_meta(t, "holder", "second")
        with second.transaction() as t:
            second.set_meta(t, "holder", "second")
    finally:
        first.close()
        second.close()


def test_concurrent_writers_share_the_write_lock_and_exclusive_ones_wait(postgres_db_url):
    """transaction(concurrent=True) holds the write lock in shared mode: two run side by side; a
    plain transaction() waits for them (bounded), and they for it."""
    a, b = _store(postgres_db_url), _store(postgres_db_url, busy_timeout_ms=200)
    try:
        with a.transaction(concurrent=True) as s:
            a.set_meta(s, "a", "1")
            with b.transaction(concurrent=True) as t:  # no wait
                b.set_meta(t, "b", "1")
            with pytest.raises(StoreError, match="write lock"):
                with b.transaction() as t:
                    b.set_meta(t, "b", "2")
        with a.transaction() as s:
            a.set_meta(s, "a", "2")
            with pytest.raises(StoreError, match="write lock"):
                with b.transaction(concurrent=True) as t:
                    b.set_meta(t, "b", "3")
        assert (a.get_meta("a"), a.get_meta("b")) == ("2", "1")
    finally:
        a.close()
        b.close()


def test_a_unit_that_ran_nothing_sends_nothing(postgres_db_url):
    """BEGIN goes out with the first statement (lazy.py): an empty unit holds no lock, and a
    connection the server dropped is replaced when the next unit starts."""
    store = _store(postgres_db_url)
    other = _store(postgres_db_url, busy_timeout_ms=200)
    try:
        with store.transaction():
            with other.transaction() as t:  # not blocked: the first unit never reached the server
                other.set_meta(t, "k", "v")
        import psycopg

        with psycopg.connect(postgres_db_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE application_name = 'recallite' AND pid <> pg_backend_pid()")
        assert store.get_meta("k") == "v"  # reconnected before anything of the unit ran
    finally:
        store.close()
        other.close()


# -- the vector channel in the server -------------------------------------------------------------------
def _fill(store, n: int, rng) -> np.ndarray:
    vecs = rng.standard_normal((n, DIMS)).astype(np.float32)
    with store.transaction():
        with store.conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO memories (id, type, content, status, source_type, scope, confidence, created_at, "
                "updated_at, content_hash) OVERRIDING SYSTEM VALUE VALUES (%s, 'fact', %s, 'active', 'user', %s, 0.5, 0, 0, 'h')",
                [(i + 1, f"m{i}", "small" if i % 10 == 0 else "big") for i in range(n)])
            cur.executemany("INSERT INTO vectors (memory_id, embedding) VALUES (%s, %s)",
                            [(i + 1, vecs[i]) for i in range(n)])
    return vecs


def _exact(vecs: np.ndarray, q: np.ndarray, ids: list[int], k: int) -> list[int]:
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    sims = unit[np.array(ids) - 1] @ (q / np.linalg.norm(q))
    order = sorted(range(len(ids)), key=lambda j: (-sims[j], ids[j]))
    return [ids[j] for j in order[:k]]


def test_nearest_exact_and_hnsw_with_filters_inside(postgres_db_url):
    store = _store(postgres_db_url)
    rng = np.random.default_rng(7)
    try:
        vecs = _fill(store, 3000, rng)
        store.ensure_vector_index(DIMS)
        small = [i + 1 for i in range(3000) if i % 10 == 0]
        q = rng.standard_normal(DIMS).astype(np.float32)
        with store.reading() as s:
            exact = s.vectors.nearest(q, MemoryFilter(scopes=("small",)), 10)
            assert [i for i, _ in exact] == _exact(vecs, q, small, 10)
            sims = [sim for _, sim in exact]
            assert sims == sorted(sims, reverse=True) and -1.0 <= sims[-1] <= sims[0] <= 1.0
            # Past exact_below: the HNSW index with iterative scan still returns k rows of the
            # scope (10% of the rows), ranked, and nearly the exact answer.
            approx = s.vectors.nearest(q, MemoryFilter(scopes=("small",)), 10, exact_below=0)
            got = [i for i, _ in approx]
            assert len(got) == 10 and all((i - 1) % 10 == 0 for i in got)
            assert len(set(got) & set(exact_ids := [i for i, _ in exact])) >= 8, (got, exact_ids)
            assert [d for _, d in approx] == sorted((d for _, d in approx), reverse=True)
            assert s.vectors.nearest(q, MemoryFilter(scopes=("none",)), 10) == []
            assert s.vectors.nearest(q[:8], MemoryFilter(), 10) == []  # another dimension: never compared
    finally:
        store.close()


def test_the_hnsw_index_matches_the_query_it_serves(postgres_db_url):
    """The index is on a cast limited to one dimension; the planner can use it only if the
    query repeats that expression and predicate, as Vectors.nearest does."""
    store = _store(postgres_db_url)
    try:
        _fill(store, 500, np.random.default_rng(1))
        store.ensure_vector_index(DIMS)
        store.ensure_vector_index(DIMS)  # idempotent
        q = "[" + ",".join(["0.1"] * DIMS) + "]"
        with store.reading():
            store.conn.execute("SET LOCAL enable_seqscan = off")
            plan = "\n".join(r[0] for r in store.conn.execute(
                f"EXPLAIN SELECT v.memory_id FROM vectors v JOIN memories m ON m.id = v.memory_id "
                f"WHERE vector_dims(v.embedding) = {DIMS} AND m.scope = ANY(%s) "
                f"ORDER BY v.embedding::vector({DIMS}) <=> %s::vector({DIMS}) LIMIT 5", (["big"], q)))
        assert f"vectors_hnsw_{DIMS}" in plan, plan
    finally:
        store.close()


# -- keyword scores: the same BM25 as SQLite's FTS5 -----------------------------------------------------
_DOCS = [
    ("zebrafish tank heater set to twenty degrees", "tank", ("aquarium",)),
    ("the zebrafish heater failed twice this week", "", ()),
    ("unrelated note about lunch and coffee", "lunch", ("food",)),
    ("heater heater heater: a memory that repeats one word many times over", "", ()),
    ("the deploy script needs the network up first, then the deploy runs", "deploy", ("deploy", "ops")),
    ("a much longer memory about aquariums, fish tanks, water heaters, filters, pumps, lights and the "
     "weekly cleaning routine that keeps the zebrafish healthy and the water clear", "fish care", ("aquarium",)),
]
_QUERIES = ["zebrafish heater", "heater", "deploy", "aquarium tank", "lunch coffee", "water heaters fish", "the"]


def test_keyword_scores_equal_sqlite_bm25_on_plain_text(postgres_db_url, tmp_path):
    """Same rows, same queries: the same ids in the same order with the same scores as FTS5's
    bm25 (column weights included), so the recall's fusion sees one scale on either backend."""
    from recallite_core.storage.sqlite.store import Store
    from tests.storage.test_storage_contract import Seed

    seeds = [Seed("sqlite", Store(str(tmp_path / "k.db")), None), Seed("postgres", _store(postgres_db_url), None)]
    try:
        for seed in seeds:
            ids = [seed.memory(text, title=title, tags=tags, scope="a" if i % 2 else "b")
                   for i, (text, title, tags) in enumerate(_DOCS)]
            seed.forget(seed.memory("a deleted heater note leaves the statistics"))
            with seed.store.transaction():  # an edited text moves the statistics too
                seed.sql("UPDATE memories SET content = ? WHERE id = ?", ("the heater was replaced by a new heater", ids[1]))
            for i, mid in enumerate(ids):
                seed.turn(mid, "chat", "s", i, "user")
            with seed.store.transaction() as s:
                s.episodes.replace_windows([], [(mid, _DOCS[i][0] + " " + _DOCS[(i + 1) % len(_DOCS)][0])
                                                for i, mid in enumerate(ids)])
        answers = []
        for seed in seeds:
            with seed.store.reading() as s:
                answers.append([
                    [s.keywords.top(q, MemoryFilter(), 10, (0.3, 1.0, 0.5)) for q in _QUERIES],
                    [s.keywords.top(q, MemoryFilter(scopes=("a",)), 2, (1.0, 1.0, 1.0)) for q in _QUERIES],
                    [s.keywords.windows_top(q, MemoryFilter(), 10) for q in _QUERIES],
                ])
        lite, pg = answers
        for group_lite, group_pg in zip(lite, pg):
            for q, a, b in zip(_QUERIES, group_lite, group_pg):
                assert [i for i, _ in a] == [i for i, _ in b], q
                assert np.allclose([x for _, x in a], [x for _, x in b], rtol=1e-9, atol=1e-12), (q, a, b)
        assert any(lite[0]) and any(lite[2])
    finally:
        for seed in seeds:
            seed.store.close()


def test_a_dropped_connection_is_replaced_at_the_next_unit_of_work(postgres_db_url):
    """The server ends our backend (a restart, an idle timeout): the next transaction or reading
    reconnects before it starts, instead of failing until the process restarts."""
    import psycopg

    store = _store(postgres_db_url)
    try:
        with store.transaction() as s:
            rid = s.retrievals.add("q", "default", None, "recall", 1.0, [])
        for start in (store.reading, store.transaction):
            pid = store.conn.info.backend_pid
            with psycopg.connect(postgres_db_url, autocommit=True) as admin:
                assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
            with start() as s:
                assert s.retrievals.get(rid)[1] == "q"
            assert store.conn.info.backend_pid != pid
        with store.reading() as s:  # the vector adapter came back with the connection
            assert s.vectors.nearest(np.ones(DIMS, dtype=np.float32), MemoryFilter(), 3) == []
    finally:
        store.close()


def _new_row(content: str) -> tuple:
    return ("fact", "", content, "active", "user", None, "default", None, "[]", "{}", 0.7, 0.5, 0.5, 0, 0, 0, None,
            1.0, 1.0, "h-" + content, 1, None)


def test_vacuum_runs_outside_a_unit_of_work_only(postgres_db_url):
    store = _store(postgres_db_url)
    try:
        with store.transaction() as s:
            (mid,) = s.memories.insert_many([_new_row("secret text")], [np.ones(DIMS, "<f4").tobytes()])
            with pytest.raises(StoreError, match="outside"):
                store.vacuum()
        with store.reading():
            with pytest.raises(StoreError, match="outside"):
                store.vacuum()
        with store.transaction() as s:
            assert s.memories.delete(mid)
        assert store.vacuum() is True
        with store.reading() as s:
            assert s.memories.count() == 0 and s.integrity.file_check() == "ok"
    finally:
        store.close()
    with pytest.raises(StoreError, match="read-only"):
        ro = _store(postgres_db_url, read_only=True)
        try:
            ro.vacuum()
        finally:
            ro.close()


def test_insert_many_ids_are_never_reused(postgres_db_url):
    """Ids come from the identity sequence: a rolled-back batch leaves a gap (SQLite reuses them),
    and rows inserted without an id (the sequence's default) never collide with a batch."""
    store = _store(postgres_db_url)
    blob = np.ones(DIMS, "<f4").tobytes()
    try:
        with store.transaction() as s:
            first = s.memories.insert_many([_new_row("a"), _new_row("b")], [blob, blob])
        with pytest.raises(RuntimeError), store.transaction() as s:
            s.memories.insert_many([_new_row("c")], [blob])
            raise RuntimeError
        with store.transaction() as s:
            (after,) = s.memories.insert_many([_new_row("d")], [blob])
            plain = store.conn.execute(
                "INSERT INTO memories (type, content, status, source_type, confidence, created_at, updated_at, "
                "content_hash) VALUES ('fact', 'e', 'active', 'user', 0.5, 1, 1, 'h-e') RETURNING id").fetchone()[0]
        assert first == [first[0], first[0] + 1] and after > first[1] + 1 and plain > after
    finally:
        store.close()


def test_a_write_mark_follows_another_process_commits(postgres_db_url):
    store, other = _store(postgres_db_url), _store(postgres_db_url)
    blob = np.ones(DIMS, "<f4").tobytes()
    try:
        with store.reading():
            mark = store.write_mark()
        with other.transaction() as s:
            s.relations.find(1, 2, "supports")  # a read-only unit of work moves nothing
        with store.transaction():
            assert store.write_mark() == mark
        with other.transaction() as s:
            s.memories.insert_many([_new_row("from elsewhere")], [blob])
        with store.transaction():
            assert store.write_mark() != mark
    finally:
        other.close()
        store.close()
