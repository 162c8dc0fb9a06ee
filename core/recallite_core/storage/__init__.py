"""Storage: the one place recallite talks SQL. It owns the schema and its migrations, the file
or server connection, transactions (a write is one unit of work that commits whole or not at
all), the vector BLOB format and the row <-> model mapping, and offers the rest of the core a
small typed interface grouped by noun (``base``: memories, vectors, relations, outcomes,
episodes, the change feed, integrity) that a backend implements (``sqlite``: the embedded
default; a second backend is a sibling module). It may import only the standard library,
numpy, and recallite_core's models, errors and policy tables; never retrieval, learning, the
engine or config, which all sit above it. docs/storage.md describes the interface.
"""

from __future__ import annotations

import sqlite3

from .base import Session, Storage
from .sqlite.session import SqliteSession

#: Errors a backend's driver may raise inside a session (a cache reading through one catches
#: them to fall back to asking the store).
DRIVER_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error,)


def as_session(handle: Session | sqlite3.Connection) -> Session:
    """``handle`` as a Session: callers outside the core (the doctor command, benchmarks) still
    pass a plain sqlite3 connection, which is wrapped in the SQLite session."""
    if isinstance(handle, sqlite3.Connection):
        return SqliteSession(handle)
    return handle


__all__ = ["DRIVER_ERRORS", "Session", "Storage", "as_session"]
