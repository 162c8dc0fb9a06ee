"""The SQLite backend: one file (or :memory:), WAL, BEGIN IMMEDIATE writes, FTS5 keyword search."""

from .session import SqliteSession
from .store import Store

__all__ = ["SqliteSession", "Store"]
