"""A read-only connection for another process (a scan worker): opened by path, never inherited."""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Iterator

from recallite_core.storage.sqlite.session import SqliteSession


class SnapshotReader:
    """``file:...?mode=ro`` with ``query_only`` and a busy timeout; each :meth:`snapshot` is one
    read transaction, so a WAL writer in another process never shows it half a write."""

    def __init__(self, path: str, busy_timeout_ms: int):
        self._conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                                     timeout=busy_timeout_ms / 1000.0)
        self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        self._conn.execute("PRAGMA query_only = ON")
        self._session = SqliteSession(self._conn)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[SqliteSession]:
        self._conn.execute("BEGIN")
        try:
            yield self._session
        finally:
            self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()
