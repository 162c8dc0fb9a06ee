"""The SQLite backend: one file (or :memory:), WAL, BEGIN IMMEDIATE writes, FTS5 keyword search."""

from recallite_core.storage.sqlite.session import SqliteSession
from recallite_core.storage.sqlite.store import Store

__all__ = ["SqliteSession", "Store"]
