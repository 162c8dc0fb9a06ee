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
from typing import Any

from recallite_core.storage.base import Session, Storage

#: Errors a backend's driver may raise inside a session (a cache reading through one catches
#: them to fall back to asking the store). SQLite's only: PostgreSQL aborts the transaction at its
#: first error, so no fallback could run in the same unit; its errors end the unit (postgres/errors.py).
DRIVER_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error,)

#: URL schemes that name a PostgreSQL server; any other path is a SQLite file (or ":memory:").
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(path: str | None) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL (case-insensitive scheme)."""
    return isinstance(path, str) and path.strip().lower().startswith(POSTGRES_SCHEMES)


def open_store(path: str | None, *, busy_timeout_ms: int | None = None, read_only: bool = False) -> Any:
    """The store ``path`` names: PostgreSQL for a ``postgresql://`` / ``postgres://`` URL (psycopg
    loaded only then), otherwise the SQLite file at ``path`` (None or ":memory:": in memory).
    ``busy_timeout_ms`` None keeps the backend's own default."""
    timeout = {} if busy_timeout_ms is None else {"busy_timeout_ms": busy_timeout_ms}
    if is_postgres_url(path):
        from recallite_core.storage.postgres import PostgresStore

        return PostgresStore(str(path).strip(), read_only=read_only, **timeout)
    from recallite_core.storage.sqlite.store import Store

    return Store(path, read_only=read_only, **timeout)


def masked_location(path: str | None) -> str:
    """``path`` fit for a message: a server URL with its password replaced by ``***``, a file
    as it is, None as ":memory:"."""
    if path is None:
        return ":memory:"
    if is_postgres_url(path):
        from recallite_core.storage.postgres.driver import masked

        return masked(path)
    return str(path)


__all__ = ["DRIVER_ERRORS", "POSTGRES_SCHEMES", "Session", "Storage", "is_postgres_url", "masked_location", "open_store"]
