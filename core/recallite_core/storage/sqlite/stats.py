"""Database-wide counters (redactions) and the overview's counts."""

from __future__ import annotations

import sqlite3
from typing import Mapping, Sequence

from recallite_core.storage.base import MemoryFilter
from recallite_core.storage.sqlite.filters import where_sql


class SqliteStats:
    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def count_redactions(self, counts: Mapping[str, int]) -> None:
        """Add ``counts`` (secret kind -> how many were replaced) to the database-wide tally."""
        self._conn.executemany(
            "INSERT INTO redactions (kind, count) VALUES (?, ?) "
            "ON CONFLICT(kind) DO UPDATE SET count = count + excluded.count", list(counts.items()))

    def redactions(self) -> dict[str, int]:
        """Secrets replaced per kind, most first."""
        return {k: v for k, v in self._conn.execute("SELECT kind, count FROM redactions ORDER BY count DESC, kind")}

    def memory_counts(self, flt: MemoryFilter) -> list[tuple[str, str, str, str, int, int]]:
        """(scope, status, type, source type, memories, their tokens) per group of the memories
        passing the filter (one pass over a covering index, migration 0011)."""
        where, params = where_sql(flt)
        return self._conn.execute(
            f"SELECT m.scope, m.status, m.type, m.source_type, count(*), coalesce(sum(m.tokens), 0) "
            f"FROM memories m WHERE {where} GROUP BY 1, 2, 3, 4", params).fetchall()

    def relation_counts(self, flt: MemoryFilter) -> dict[str, int]:
        """Relations per type whose source memory passes the filter."""
        where, params = where_sql(flt)
        return {k: v for k, v in self._conn.execute(
            f"SELECT r.type, count(*) FROM relations r JOIN memories m ON m.id = r.from_id WHERE {where} GROUP BY r.type",
            params)}

    def vector_count(self, flt: MemoryFilter) -> int:
        """Memories passing the filter that have a vector."""
        where, params = where_sql(flt)
        return self._conn.execute(
            f"SELECT count(*) FROM memories m WHERE {where} AND EXISTS (SELECT 1 FROM vectors v WHERE v.memory_id = m.id)",
            params).fetchone()[0]

    def expired_count(self, flt: MemoryFilter, now: float) -> int:
        """Memories passing the filter whose valid_until is at or before ``now``."""
        where, params = where_sql(flt)
        return self._conn.execute(
            f"SELECT count(*) FROM memories m WHERE {where} AND m.valid_until IS NOT NULL AND m.valid_until <= ?",
            [*params, now]).fetchone()[0]

    def retrieval_counts(self, scopes: Sequence[str] | None) -> tuple[int, list[int], int, dict[str, int]]:
        """(retrievals, tokens served by each context call, tokens matched by them, feedback per
        outcome) of the retrievals made in one of ``scopes``: the first scope each searched (a
        project's searches also search the user scope, logged as ["p1", "user"]); None: all."""
        rscope = ""
        rparams: list = []
        if scopes is not None:
            rscope = f"WHERE json_extract(r.scope, '$[0]') IN ({', '.join('?' * len(scopes))})"
            rparams = list(scopes)
        conn = self._conn
        retrievals = conn.execute(f"SELECT count(*) FROM retrievals r {rscope}", rparams).fetchone()[0]
        served = [r[0] for r in conn.execute(
            f"SELECT tokens_served FROM retrievals r {rscope} {'AND' if rscope else 'WHERE'} kind = 'context' "
            "AND tokens_served IS NOT NULL", rparams)]
        matched = conn.execute(
            f"SELECT coalesce(sum(tokens_matched), 0) FROM retrievals r {rscope} {'AND' if rscope else 'WHERE'} kind = 'context'",
            rparams).fetchone()[0]
        fb = {k: v for k, v in conn.execute(
            "SELECT f.outcome, count(*) FROM feedback f JOIN retrievals r ON r.id = f.retrieval_id "
            f"{rscope} GROUP BY f.outcome", rparams)}
        return retrievals, served, matched, fb
