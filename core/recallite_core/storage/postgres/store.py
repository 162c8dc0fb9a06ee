"""The PostgreSQL store: connection, the vector extension, migrations, transactions.

One psycopg connection per store, in psycopg's autocommit mode: this class sends BEGIN and
COMMIT itself, so that nesting and isolation are decided here, in one place. A connection the
server dropped (restart, failover, idle timeout) is replaced when the next unit of work begins,
before anything of it ran, so nothing is retried twice:

- ``transaction()`` is READ COMMITTED plus a transaction-scoped advisory lock that every writer
  of the database takes first. That gives SQLite's BEGIN IMMEDIATE semantics (one writer at a
  time, each seeing every earlier commit), so the engine's read-then-write steps stay correct
  without serialization failures, which a ``with`` block could not retry (its body runs once).
- ``transaction(concurrent=True)``, asked for by the hot write paths, holds that lock in shared
  mode: such writers run side by side (and commit together: one WAL flush for several), and
  what they read to write is guarded by narrower locks as they go (locking.py). Lock waits are
  bounded by ``busy_timeout_ms``.
- ``reading()`` is REPEATABLE READ READ ONLY: one snapshot for every statement in it, never
  blocking or blocked by a writer.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from typing import Any, Iterator, Sequence

from recallite_core.errors import SchemaVersionError, StoreError
from recallite_core.storage.postgres import driver
from recallite_core.storage.postgres.cpu import postmaster_of, tree_cpu_seconds
from recallite_core.storage.postgres.driver import masked
from recallite_core.storage.postgres.errors import explain
from recallite_core.storage.postgres.lazy import LazyBegin
from recallite_core.storage.postgres.locking import MIGRATE_LOCK, WRITE_LOCK, UnitLocks
from recallite_core.storage.postgres.migrations import MIGRATIONS, SCHEMA_VERSION, TABLES
from recallite_core.storage.postgres.session import PostgresSession
from recallite_core.storage.postgres.vectors import index_name

#: SQLSTATEs of a refused CREATE EXTENSION: no privilege, or the extension's files are absent.
_EXTENSION_REFUSED = {"42501": "this role may not create it", "58P01": "it is not installed on the server"}


_fresh = itertools.count()


class PostgresStore:
    """A recallite store in a PostgreSQL database with the pgvector extension."""

    def __init__(self, url: str, *, busy_timeout_ms: int = 30_000, read_only: bool = False):
        self.path: str | None = None  # no file: nothing may open it by path (no scan workers)
        self.where = masked(url)  # what messages may show: the URL without its password
        self.read_only = read_only
        self.busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._mode: str | None = None  # None, "read" or "write": the open transaction
        self._psycopg = driver.load("psycopg")
        self._register_vector = driver.load("pgvector.psycopg").register_vector
        self._secret = self._password(url)
        self._url = url  # kept to reconnect; never shown (messages use self.where)
        self.conn = LazyBegin(self._connect(url), self._reconnect)
        self._locks = UnitLocks(self.conn)
        self._session = PostgresSession(self.conn, self._locks)
        try:
            self._prepare()
        except BaseException:
            self.conn.close()
            raise

    # -- opening -----------------------------------------------------------------------------------
    def _password(self, url: str) -> str | None:
        try:
            return self._psycopg.conninfo.conninfo_to_dict(url).get("password") or None
        except Exception:  # noqa: BLE001  an unparsable URL: psycopg.connect reports it below
            return None

    def _explain(self, exc: BaseException, doing: str) -> StoreError:
        """A driver error as a StoreError naming the server (never its password), the step and
        what to do next (errors.py)."""
        return explain(exc, self.where, doing, self._secret)

    def _connect(self, url: str) -> Any:
        try:
            # The URL goes to libpq as it is (sslmode, host=/socket/dir, service files...).
            conn = self._psycopg.connect(url, autocommit=True, application_name="recallite")
        except self._psycopg.Error as exc:
            raise self._explain(exc, "connecting") from exc
        # Every lock wait on this connection is bounded (the write lock, a concurrent write's row
        # and key locks, vacuum's table locks): set once here, not per transaction (a statement
        # less per write). Statements themselves are not bounded (an index build may be long).
        conn.execute(f"SET lock_timeout = '{int(self.busy_timeout_ms)}ms'")
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")
        return conn

    def _begin(self, statements: Sequence[str], snapshot: bool = False) -> None:
        """Start a unit of work: its BEGIN goes out with its first statement (lazy.py), where a
        connection the server dropped is replaced once, before anything of the unit ran."""
        if self.conn.broken or self.conn.closed:
            self._reconnect()
        self.conn.begin(statements, snapshot)

    def _reconnect(self) -> None:
        with contextlib.suppress(Exception):
            self.conn.raw.close()
        raw = self._connect(self._url)
        self._register_vector(raw)
        self.conn.raw = raw  # the session and its nouns hold self.conn: they follow

    def _has_vector(self) -> bool:
        return self.conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is not None

    def _ensure_vector_extension(self) -> None:
        if self._has_vector():
            return
        if self.read_only:
            raise StoreError(f"PostgreSQL {self.where}: the database lacks the `vector` extension (pgvector); "
                             "open it once writable, or run CREATE EXTENSION vector as its owner.")
        try:
            # Under the migration lock: two processes creating it at once would collide otherwise.
            with self.conn.transaction():
                self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
                self.conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except self._psycopg.Error as exc:
            why = _EXTENSION_REFUSED.get(getattr(exc, "sqlstate", None) or "")
            if why is None:
                raise
            raise StoreError(
                f"PostgreSQL {self.where}: recallite needs the `vector` extension (pgvector) and {why}; "
                "install pgvector on the server and run CREATE EXTENSION vector as a superuser or the database owner."
            ) from exc

    def _applied(self) -> list[str]:
        if self.conn.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
            return []
        return [r[0] for r in self.conn.execute("SELECT name FROM schema_migrations ORDER BY applied_order")]

    def _check_version(self) -> list[str]:
        applied = self._applied()
        known = [name for name, _ in MIGRATIONS]
        unknown = [n for n in applied if n not in known]
        if unknown:
            raise SchemaVersionError(
                f"PostgreSQL {self.where} was written by a newer recallite (migrations {unknown}); this one knows "
                f"schema {SCHEMA_VERSION}. Upgrade recallite-mcp (pip install -U recallite-mcp); nothing was changed."
            )
        if not applied and self.conn.execute("SELECT to_regclass('memories')").fetchone()[0] is not None:
            raise StoreError(f"PostgreSQL {self.where} already has a `memories` table that recallite did not create. "
                             "Use another database or schema (options=-csearch_path=...); nothing was changed.")
        return applied

    def _prepare(self) -> None:
        try:
            self._ensure_vector_extension()
            applied = self._check_version()
            if self.read_only and not applied:
                raise StoreError(f"PostgreSQL {self.where} holds no recallite store yet; open it writable once "
                                 "to create one (a read-only store never writes).")
            if not self.read_only and len(applied) < len(MIGRATIONS):
                self._migrate()
            self._register_vector(self.conn.raw)
        except self._psycopg.Error as exc:
            raise self._explain(exc, "opening the store") from exc

    def _migrate(self) -> None:
        conn = self.conn
        conn.execute("BEGIN")
        try:
            # Another process creating the same new database waits here, however long the
            # migration takes (lock_timeout off for this transaction), then finds it migrated.
            conn.execute("SET LOCAL lock_timeout = 0")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            applied = set(self._check_version())
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, "
                         "applied_order integer NOT NULL, applied_at double precision NOT NULL)")
            for order, (name, statements) in enumerate(MIGRATIONS, 1):
                if name in applied:
                    continue
                for statement in statements:
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations (name, applied_order, applied_at) VALUES (%s, %s, %s)",
                             (name, order, time.time()))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def ensure_vector_index(self, dimensions: int) -> None:
        """An HNSW index (cosine) over the vectors of this dimension. The column is untyped (the
        dimension follows the embedder), so the index is on a cast, limited to rows of that
        dimension; nearest() queries exactly that expression when it uses the index."""
        n = int(dimensions)
        with self.transaction():
            self.conn.execute(
                f"CREATE INDEX IF NOT EXISTS {index_name(n)} ON vectors USING hnsw ((embedding::vector({n})) "
                f"vector_cosine_ops) WHERE vector_dims(embedding) = {n}")

    # -- transactions ------------------------------------------------------------------------------
    def _check_pid(self) -> None:
        if os.getpid() != self._pid:
            raise StoreError("This connection was opened in another process (fork). Open a new store in this process.")

    def _end(self, statement: str) -> None:
        self.conn.end()
        if not self.conn.started():  # nothing of the unit reached the server: nothing to end
            self.conn.drop()
            return
        try:
            self.conn.execute(statement)
        except self._psycopg.Error as exc:
            if statement == "COMMIT":
                with contextlib.suppress(self._psycopg.Error):
                    self.conn.execute("ROLLBACK")
                raise self._explain(exc, "committing") from exc

    @contextlib.contextmanager
    def transaction(self, concurrent: bool = False) -> Iterator[PostgresSession]:
        """One write: everything done through the session commits together, or, if the block
        raises, none of it does. Nested use joins the outer transaction.

        ``concurrent``: the caller's unit of work is one of the write paths made safe to run
        beside others (docs/postgres.md, "Isolation per write path"): the write lock is held in
        shared mode and the session takes row and key locks as it reads. Otherwise the write
        lock is exclusive: one such writer at a time, and no concurrent one beside it."""
        self._check_pid()
        if self.read_only:
            raise StoreError(f"PostgreSQL {self.where}: this store is read-only.")
        with self._lock:
            if self._mode == "write":
                yield self._session
                return
            if self._mode == "read":
                raise StoreError("A write cannot join a reading() snapshot (it is READ ONLY); "
                                 "start the transaction() outside it.")
            try:
                # Sent with the first statement (lazy.py); the wait is bounded (_connect).
                self._begin(("BEGIN ISOLATION LEVEL READ COMMITTED",
                             f"SELECT pg_advisory_xact_lock{'_shared' if concurrent else ''}({int(WRITE_LOCK)})"))
            except self._psycopg.Error as exc:
                with contextlib.suppress(self._psycopg.Error):
                    self.conn.execute("ROLLBACK")
                raise self._explain(exc, "starting a write") from exc
            self._mode = "write"
            self._locks.begin(concurrent)
            try:
                yield self._session
            except BaseException as exc:
                self._mode = None
                self._locks.end()
                self._end("ROLLBACK")
                if isinstance(exc, self._psycopg.Error):
                    raise self._explain(exc, "a write") from exc
                raise
            else:
                self._mode = None
                self._locks.end()
                self._end("COMMIT")

    @contextlib.contextmanager
    def reading(self, consistent: bool = True) -> Iterator[PostgresSession]:
        """One consistent snapshot (REPEATABLE READ READ ONLY) for several reads; inside a
        transaction() or another reading() it joins that one. ``consistent=False``: no
        transaction at all, each statement sees the latest commits on its own (no BEGIN, no
        ROLLBACK: a round trip fewer for a unit of one read, such as remember's duplicate check)."""
        self._check_pid()
        with self._lock:
            if self._mode is not None:
                yield self._session
                return
            if consistent:
                try:
                    self._begin(("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",), snapshot=True)
                except self._psycopg.Error as exc:
                    raise self._explain(exc, "starting a read") from exc
            elif self.conn.broken or self.conn.closed:
                self._reconnect()
            self._mode = "read"
            try:
                yield self._session
            except self._psycopg.Error as exc:
                raise self._explain(exc, "a read") from exc
            finally:
                self._mode = None
                if consistent:
                    # A read-only transaction has nothing to keep: ROLLBACK also ends an aborted one.
                    self._end("ROLLBACK")

    def keyword_mirror(self, weights: Sequence[float]) -> None:
        """None: keyword search runs in the server (the GIN index), with no in-memory mirror."""
        return None

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    # -- meta --------------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self.reading():
            row = self.conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, session: PostgresSession, key: str, value: str) -> None:
        # The session runs on this store's one connection: the row joins its transaction.
        self.conn.execute("INSERT INTO meta (key, value) VALUES (%s, %s) "
                          "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value))

    def change_counter(self) -> int:
        with self.reading() as s:
            return s.feed.counter()

    def schema_version(self) -> int:
        with self.reading():
            return len(self._applied())

    # -- what the engine also asks of a store -------------------------------------------------------
    def write_mark(self) -> tuple[int, int]:
        """What the batch write path compares to skip its second duplicate check: equal marks
        must mean no memory was written in between. Inside reading(): (the snapshot's next
        transaction id, the count of transactions it sees running). Inside a concurrent
        transaction() it is never equal to an earlier one (-1, a fresh number): writers run side
        by side there, and only the check made under the text locks, after the mark, counts, so
        that check always runs (one indexed query per batch). Inside an exclusive transaction()
        it is the latest commit's mark (the write lock keeps other writers out)."""
        if self._mode == "write" and self._locks.concurrent:
            return -1, next(_fresh)
        xmax, running = self.conn.execute(
            "SELECT pg_snapshot_xmax(s)::text::bigint, (SELECT count(*) FROM pg_snapshot_xip(s)) "
            "FROM pg_current_snapshot() AS s").fetchone()
        return int(xmax), int(running)

    def file_sizes(self) -> tuple[int, int]:
        """(bytes of recallite's tables with their indexes and TOAST in the current schema, 0).
        The server's write-ahead log is shared by every database on it, so none of it is
        reported as this store's."""
        with self.reading():
            size = self.conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY(%s)",
                (list(TABLES),)).fetchone()[0]
        return int(size), 0

    def vacuum(self) -> bool:
        """Rewrite recallite's tables without their dead rows (VACUUM FULL), so deleted text
        leaves the table files. It runs outside any transaction (PostgreSQL refuses VACUUM in
        one) and takes each table's exclusive lock in turn, waiting at most busy_timeout_ms for
        other clients' reads and writes to finish. True once it ran: the old files are removed
        at commit. (Copies in the server's write-ahead log, its archive and backups age out as
        the server recycles them; no client can force that.)"""
        self._check_pid()
        if self.read_only:
            raise StoreError(f"PostgreSQL {self.where}: this store is read-only.")
        with self._lock:
            if self._mode is not None:
                raise StoreError("vacuum() cannot run inside a transaction() or reading(); call it outside.")
            if self.conn.broken or self.conn.closed:
                self._reconnect()
            try:
                present = [r[0] for r in self.conn.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname = ANY(%s) ORDER BY 1",
                    (list(TABLES),))]
                if present:  # each table lock waited for at most busy_timeout_ms (_connect)
                    self.conn.execute("VACUUM (FULL, ANALYZE) " + ", ".join(present))
            except self._psycopg.Error as exc:
                raise self._explain(exc, "vacuuming") from exc
        return True

    def server_cpu_seconds(self) -> float | None:
        """CPU seconds the server's processes have used so far (cpu.py), or None when the server
        is not on this machine. Benchmarks take the difference over a run: the server's share of
        what an operation costs, whatever the machine's load."""
        with self.reading():
            postmaster = postmaster_of(self.conn)
        return None if postmaster is None else tree_cpu_seconds(postmaster)

    def close(self) -> None:
        with self._lock:
            with contextlib.suppress(Exception):
                self.conn.close()


__all__ = ["PostgresStore"]
