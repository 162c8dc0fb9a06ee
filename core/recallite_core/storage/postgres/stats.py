"""Database-wide counters (redactions) and the overview's counts."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from recallite_core.storage.base import MemoryFilter
from recallite_core.storage.postgres.filters import where_sql


class PostgresStats:
    def __init__(self, conn: Any):
        self._conn = conn

    def count_redactions(self, counts: Mapping[str, int]) -> None:
        """Add ``counts`` (secret kind -> how many were replaced) to the database-wide tally."""
        if counts:
            with self._conn.cursor() as cur:
                cur.executemany("INSERT INTO redactions (kind, count) VALUES (%s, %s) "
                                "ON CONFLICT (kind) DO UPDATE SET count = redactions.count + excluded.count",
                                list(counts.items()))

    def redactions(self) -> dict[str, int]:
        """Secrets replaced per kind, most first (ties by kind, bytewise as SQLite)."""
        return dict(self._conn.execute('SELECT kind, count FROM redactions ORDER BY count DESC, kind COLLATE "C"').fetchall())

    def memory_counts(self, flt: MemoryFilter) -> list[tuple[str, str, str, str, int, int]]:
        """(scope, status, type, source type, memories, their tokens) per group of the memories
        passing the filter."""
        where, params = where_sql(flt)
        return self._conn.execute(
            "SELECT m.scope, m.status, m.type, m.source_type, count(*), coalesce(sum(m.tokens), 0) "
            f"FROM memories m WHERE {where} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4", params).fetchall()

    def relation_counts(self, flt: MemoryFilter) -> dict[str, int]:
        """Relations per type whose source memory passes the filter."""
        where, params = where_sql(flt)
        return dict(self._conn.execute(
            f"SELECT r.type, count(*) FROM relations r JOIN memories m ON m.id = r.from_id WHERE {where} "
            "GROUP BY r.type ORDER BY r.type", params).fetchall())

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
            f"SELECT count(*) FROM memories m WHERE {where} AND m.valid_until IS NOT NULL AND m.valid_until <= %s",
            [*params, now]).fetchone()[0]

    def retrieval_counts(self, scopes: Sequence[str] | None) -> tuple[int, list[int], int, dict[str, int]]:
        """(retrievals, tokens served by each context call, tokens matched by them, feedback per
        outcome) of the retrievals made in one of ``scopes``: the first scope each searched (a
        project's searches also search the user scope, logged as ["p1", "user"]); None: all."""
        where, params = ("(r.scope::jsonb ->> 0) = ANY(%s)", [list(scopes)]) if scopes is not None else ("true", [])
        conn = self._conn
        retrievals = conn.execute(f"SELECT count(*) FROM retrievals r WHERE {where}", params).fetchone()[0]
        served = [r[0] for r in conn.execute(
            f"SELECT tokens_served FROM retrievals r WHERE {where} AND kind = 'context' AND tokens_served IS NOT NULL "
            "ORDER BY id", params)]
        matched = conn.execute(
            f"SELECT coalesce(sum(tokens_matched), 0) FROM retrievals r WHERE {where} AND kind = 'context'",
            params).fetchone()[0]
        fb = dict(conn.execute(
            f"SELECT f.outcome, count(*) FROM feedback f JOIN retrievals r ON r.id = f.retrieval_id WHERE {where} "
            "GROUP BY f.outcome ORDER BY f.outcome", params).fetchall())
        return retrievals, served, int(matched), fb
