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

from recallite_core.storage.base import Session, Storage

#: Errors a backend's driver may raise inside a session (a cache reading through one catches
#: them to fall back to asking the store).
DRIVER_ERRORS: tuple[type[Exception], ...] = (sqlite3.Error,)


__all__ = ["DRIVER_ERRORS", "Session", "Storage"]
