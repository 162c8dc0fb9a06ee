"""Database-wide counters (redactions) and the overview's counts."""

from __future__ import annotations

import sqlite3
from typing import Mapping


class SqliteStats:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def count_redactions(self, counts: Mapping[str, int]) -> None:
        """Add ``counts`` (secret kind -> how many were replaced) to the database-wide tally."""
        self._conn.executemany(
            "INSERT INTO redactions (kind, count) VALUES (?, ?) "
            "ON CONFLICT(kind) DO UPDATE SET count = count + excluded.count", list(counts.items()))
