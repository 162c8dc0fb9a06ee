"""The SQLite file: connection, pragmas, migrations, transactions. The only writer."""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import stat
import threading
import time
from typing import Iterator, Sequence

from recallite_core.errors import SchemaVersionError, StoreError
from recallite_core.storage.base import Session
from recallite_core.storage.sqlite.keyword_mirror import KeywordIndexes
from recallite_core.storage.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from recallite_core.storage.sqlite.session import SqliteSession

log = logging.getLogger("recallite.store")

MEMORY_PATHS = (None, "", ":memory:")


def explain(exc: sqlite3.Error, path: str | None) -> StoreError:
    """Turn an sqlite error into a StoreError that names the file and a next step."""
    where = path or ":memory:"
    text = str(exc).lower()
    if "disk is full" in text or "disk i/o" in text:
        return StoreError(f"Could not write {where}: the disk is full or failing ({exc}). Free space and retry; nothing was written.")
    if "readonly" in text or "read-only" in text:
        return StoreError(f"{where} is read-only ({exc}). Fix the file's permissions or choose another --db; nothing was written.")
    if "not a database" in text or "malformed" in text or "corrupt" in text:
        return StoreError(
            f"{where} is not a valid recallite database or is damaged ({exc}). "
            "Restore it from a backup or an export, or point --db at a new file; recallite will not overwrite it."
        )
    if "locked" in text or "busy" in text:
        return StoreError(f"{where} stayed locked by another process for too long ({exc}). Retry shortly.")
    if "unable to open" in text:
        return StoreError(f"Cannot open {where} ({exc}). Check that the directory exists and is writable.")
    return StoreError(f"Database error on {where}: {exc}")


class Store:
    """One SQLite connection with WAL, a lock for threads, and BEGIN IMMEDIATE writes."""

    #: SQLite page cache per connection, in KiB (PRAGMA cache_size; its default is 2 MB).
    cache_kib = 32 * 1024

    def __init__(self, path: str | os.PathLike | None, *, busy_timeout_ms: int = 5000, read_only: bool = False):
        self.path = None if path in MEMORY_PATHS else os.path.abspath(os.path.expanduser(os.fspath(path)))
        self.read_only = read_only
        self.busy_timeout_ms = busy_timeout_ms
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self.conn = self._connect()
        # One connection, so one session object serves every unit of work on it.
        self._session = SqliteSession(self.conn)
        if not read_only:
            self._migrate()
        else:
            self._check_version()

    # -- opening -------------------------------------------------------------------------
    def _resolve_symlink(self, path: str) -> str:
        """Symlink policy: a database path that is a symlink is followed to its target, and the
        target is used for everything (SQLite keeps -wal/-shm next to it); but only when the
        target (or, for a dangling link, the directory it points into) belongs to this user. A
        link planted in a shared directory cannot redirect our writes into another user's file."""
        if not os.path.islink(path):
            return path
        real = os.path.realpath(path)
        probe = real if os.path.exists(real) else os.path.dirname(real)
        try:
            owner = os.stat(probe).st_uid
        except OSError:
            return real  # the missing-directory check names it
        if owner != os.geteuid() and not self.read_only:
            raise StoreError(
                f"{path} is a symlink to {real}, which belongs to another user (uid {owner}). recallite does not "
                "follow symlinks into files it does not own; point --db at a file of yours. Nothing was changed."
            )
        return real

    def _check_writable(self, path: str, parent: str) -> None:
        """Clear errors, before SQLite tries, for a read-only file or directory."""
        if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
            st = os.stat(path)
            raise StoreError(
                f"{path} is read-only for this user (mode {oct(stat.S_IMODE(st.st_mode))}, owner uid {st.st_uid}). "
                f"Make it writable (chmod u+rw {path}) or choose another --db; the file was left untouched."
            )
        if not os.access(parent, os.W_OK | os.X_OK) and not (os.path.exists(path) and os.path.exists(path + "-shm")):
            raise StoreError(
                f"The directory {parent} is not writable, and SQLite needs to create "
                f"{os.path.basename(path)}-wal and -shm next to the database. Make the directory writable or choose "
                "another --db; nothing was changed."
            )

    def _connect(self) -> sqlite3.Connection:
        path = self.path
        if path is not None:
            path = self.path = self._resolve_symlink(path)
            parent = os.path.dirname(path) or "."
            if not os.path.isdir(parent):
                raise StoreError(f"The directory {parent} does not exist. Create it, or choose another --db path.")
            if os.path.isdir(path):
                raise StoreError(f"{path} is a directory. Point --db at a file inside it, e.g. {os.path.join(path, 'agent-memory.db')}.")
            if not self.read_only:
                self._check_writable(path, parent)
            if not self.read_only and not os.path.exists(path):
                # Create the file ourselves so it is private from the first byte; SQLite gives
                # the -wal and -shm files the same mode as the database.
                try:
                    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0), 0o600)
                    os.close(fd)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise StoreError(f"Cannot create {path}: {exc.strerror}. Check the directory's permissions.") from exc
            target = f"file:{path}?mode=ro" if self.read_only else f"file:{path}"
        else:
            if self.read_only:
                raise StoreError("A read-only store needs a database file.")
            target = ":memory:"
        try:
            conn = sqlite3.connect(
                target,
                uri=target.startswith("file:"),
                isolation_level=None,
                check_same_thread=False,
                timeout=self.busy_timeout_ms / 1000.0,
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA temp_store = MEMORY")
            # A recall reads a few dozen rows at random; SQLite's default 2 MB page cache holds
            # little of a 10k store, so each read went to the OS. The cache fills only as pages
            # are read, so a small store pays for what it uses.
            conn.execute(f"PRAGMA cache_size = {-int(self.cache_kib)}")
            if self.read_only:
                conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            raise explain(exc, path) from exc
        return conn

    def _applied(self) -> list[str]:
        has = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'"
        ).fetchone()
        if not has:
            return []
        return [r[0] for r in self.conn.execute("SELECT name FROM schema_migrations ORDER BY rowid")]

    def _check_version(self) -> None:
        try:
            applied = self._applied()
            user_version = self.conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.Error as exc:
            raise explain(exc, self.path) from exc
        known = [name for name, _ in MIGRATIONS]
        unknown = [n for n in applied if n not in known]
        if unknown or user_version > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"{self.path or ':memory:'} was written by a newer recallite (schema {user_version}, "
                f"migrations {unknown or '?'}); this one knows schema {SCHEMA_VERSION}. "
                "Upgrade recallite-mcp (pip install -U recallite-mcp); the file was left untouched."
            )
        if not applied and self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] and not self._is_ours():
            raise StoreError(
                f"{self.path} is an SQLite database of another program. Choose another --db path; it was left untouched."
            )

    def _is_ours(self) -> bool:
        return bool(
            self.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='memories'").fetchone()
        )

    def _enable_wal(self) -> None:
        """Switch to WAL only once the file is known to be ours (or new): the switch rewrites the
        header of the file, and a foreign or newer database must be left byte for byte as it was."""
        if self.path is None:
            return
        # The switch takes an exclusive lock and SQLite does not always wait for it through the
        # busy handler: retry (bounded) while another process is creating or migrating the file.
        delay, deadline = 0.02, time.monotonic() + max(10.0, self.busy_timeout_ms / 1000.0)
        while True:
            try:
                mode = self.conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                break
            except sqlite3.OperationalError as exc:
                busy = "locked" in str(exc).lower() or "busy" in str(exc).lower()
                if not busy or time.monotonic() > deadline:
                    raise explain(exc, self.path) from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.5)
            except sqlite3.Error as exc:
                raise explain(exc, self.path) from exc
        if str(mode).lower() != "wal":
            log.warning("Could not switch %s to WAL (got %s); concurrent readers will block.", self.path, mode)
        # Checkpoint every ~40 MB of WAL instead of 4 MB: small writes (feedback, retrieval
        # logs) touch the same hot pages, which a checkpoint then writes and fsyncs once
        # instead of ten times; the WAL is truncated back to 64 MB.
        self.conn.execute("PRAGMA wal_autocheckpoint = 10000")
        self.conn.execute("PRAGMA journal_size_limit = 67108864")

    def _migrate(self) -> None:
        self._check_version()
        self._enable_wal()
        if all(n in set(self._applied()) for n, _ in MIGRATIONS):
            return
        with self.transaction():
            conn = self.conn
            # Again under the write lock: another process opening the same new file may have
            # migrated it between our check and our BEGIN IMMEDIATE.
            self._check_version()
            applied = set(self._applied())
            pending = [(n, sql) for n, sql in MIGRATIONS if n not in applied]
            if not pending:
                return
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            for name, sql in pending:
                # executescript would COMMIT our transaction; run statement by statement.
                for statement in _split_sql(sql):
                    conn.execute(statement)
                conn.execute("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    # -- transactions ----------------------------------------------------------------------
    def _check_pid(self) -> None:
        if os.getpid() != self._pid:
            raise StoreError("This connection was opened in another process (fork). Open a new Recallite in this process.")

    @contextlib.contextmanager
    def transaction(self, concurrent: bool = False, attempts: int = 8) -> Iterator[SqliteSession]:
        """One write transaction (BEGIN IMMEDIATE): everything done through the session it yields
        commits together, or, if the block raises, none of it does. Retries a busy start with
        backoff, bounded. Nested use joins the outer transaction. ``concurrent`` is the
        PostgreSQL backend's (base.Store); SQLite has one writer at a time either way."""
        self._check_pid()
        if self.read_only:
            raise StoreError("This store is read-only.")
        with self._lock:
            if self.conn.in_transaction:  # nested use inside our own transaction
                yield self._session
                return
            delay = 0.01
            for attempt in range(attempts):
                try:
                    self.conn.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc).lower() and "busy" not in str(exc).lower():
                        raise explain(exc, self.path) from exc
                    if attempt == attempts - 1:
                        raise explain(exc, self.path) from exc
                    time.sleep(delay * (1 + random.random()))
                    delay = min(delay * 2, 1.0)
            try:
                yield self._session
            except BaseException as exc:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                if isinstance(exc, sqlite3.Error):
                    raise explain(exc, self.path) from exc
                raise
            else:
                try:
                    self.conn.execute("COMMIT")
                except sqlite3.Error as exc:
                    try:
                        self.conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                    raise explain(exc, self.path) from exc

    @contextlib.contextmanager
    def reading(self, consistent: bool = True) -> Iterator[SqliteSession]:
        """A consistent snapshot for several SELECTs (``consistent`` is for server backends:
        a local file's read transaction costs no round trip)."""
        self._check_pid()
        with self._lock:
            if self.conn.in_transaction:
                yield self._session
                return
            try:
                self.conn.execute("BEGIN")
                yield self._session
            except sqlite3.Error as exc:
                raise explain(exc, self.path) from exc
            finally:
                if self.conn.in_transaction:
                    try:
                        self.conn.execute("COMMIT")
                    except sqlite3.Error:
                        pass

    def keyword_mirror(self, weights: Sequence[float]) -> KeywordIndexes:
        """An in-memory bm25 mirror of this store's FTS tables (the recall's keyword cache)."""
        return KeywordIndexes(weights)

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    # -- meta ---------------------------------------------------------------------------------
    def get_meta(self, key: str) -> str | None:
        with self.reading():
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def set_meta(self, session: Session, key: str, value: str) -> None:
        # The session is one of this store's, on this connection: the write joins its transaction.
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def write_mark(self) -> tuple[int, int]:
        """Changes to the file so far: by other connections (PRAGMA data_version, as of this
        connection's current snapshot) and by this one (total_changes). Call it inside a
        reading() or transaction(); two equal marks mean no row was written in between."""
        return self.conn.execute("PRAGMA data_version").fetchone()[0], self.conn.total_changes

    def journal_mode(self) -> str:
        """The file's journal mode (wal for a file store; memory for an in-memory one)."""
        with self.reading():
            return self.conn.execute("PRAGMA journal_mode").fetchone()[0]

    def vacuum(self) -> bool:
        """Rewrite the file without its free pages (deleted text leaves the disk). False when
        another process's reader kept the rewritten pages in the WAL: the old ones stay in the
        main file until a checkpoint can run."""
        with self.lock:
            try:
                self.conn.execute("VACUUM")
                busy = self.path and self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.Error as exc:
                raise explain(exc, self.path) from exc
        return not busy

    def change_counter(self) -> int:
        with self.reading() as s:
            return s.feed.counter()

    def schema_version(self) -> int:
        with self.reading():
            return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def file_sizes(self) -> tuple[int, int]:
        if self.path is None:
            with self.reading():
                pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
                page_size = self.conn.execute("PRAGMA page_size").fetchone()[0]
            return pages * page_size, 0

        def size(p: str) -> int:
            try:
                return os.path.getsize(p)
            except OSError:
                return 0

        return size(self.path), size(self.path + "-wal")

    def close(self) -> None:
        with self._lock:
            try:
                if self.path is not None and not self.read_only and os.getpid() == self._pid:
                    self.conn.execute("PRAGMA optimize")
            except sqlite3.Error:
                pass
            self.conn.close()


def _split_sql(script: str) -> list[str]:
    """Split a migration into statements; triggers keep their inner semicolons."""
    statements: list[str] = []
    buf: list[str] = []
    for line in script.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("--"):
            continue
        buf.append(line)
        candidate = "\n".join(buf)
        if stripped.endswith(";") and sqlite3.complete_statement(candidate):
            statements.append(candidate.strip())
            buf = []
    if buf and "\n".join(buf).strip():
        statements.append("\n".join(buf).strip())
    return statements
