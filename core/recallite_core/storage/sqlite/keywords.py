"""Keyword search over the FTS5 tables."""

from __future__ import annotations

import sqlite3
from typing import Sequence

from recallite_core.storage.base import MemoryFilter
from recallite_core.storage.fts import fts_query
from recallite_core.storage.sqlite.filters import marks, where_sql


class SqliteKeywords:
    """Keyword search over FTS5: the memories' table and the conversation windows. Scores are
    -bm25() (higher is better), ties by id."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def top(self, query: str, flt: MemoryFilter, depth: int, weights: Sequence[float]) -> list[tuple[int, float]]:
        """The bm25 top-``depth`` among the memories passing the filter.

        The bm25 top-N is taken on the FTS table alone (no per-match join to memories), then
        filtered; only when the filter leaves fewer than ``depth`` of a full top-N is the N
        widened (and finally the whole match set filtered), so the answer is the same as
        filtering every match first."""
        match = fts_query(query)
        if match is None:
            return []
        where, params = where_sql(flt)
        weights_sql = ", ".join(str(w) for w in weights)
        inner = max(depth * 2, 100)
        while True:
            limit_sql, limit_params = ("LIMIT ?", [inner]) if inner else ("", [])
            # One pass: the bm25 top-N with, for each, whether it passes the filter.
            rows = self._conn.execute(
                f"SELECT f.id, f.s, ({where}) FROM (SELECT rowid AS id, bm25(memories_fts, {weights_sql}) AS s "
                f"FROM memories_fts WHERE memories_fts MATCH ? ORDER BY s, rowid {limit_sql}) f "
                "JOIN memories m ON m.id = f.id ORDER BY f.s, f.id",
                [*params, match, *limit_params],
            ).fetchall()
            kept = [r for r in rows if r[2]]
            if len(kept) >= depth or not inner or len(rows) < inner:
                break  # enough, or the top-N already held every match
            inner = inner * 8 if inner < 100_000 else 0
        return [(r[0], -r[1]) for r in kept[:depth]]

    def windows_top(self, query: str, flt: MemoryFilter, depth: int) -> list[tuple[int, float]]:
        """The bm25 top-``depth`` of conversation turns indexed with their neighbours."""
        match = fts_query(query)
        if match is None:
            return []
        where, params = where_sql(flt)
        rows = self._conn.execute(
            "SELECT w.rowid, bm25(episode_windows) AS s FROM episode_windows w JOIN memories m ON m.id = w.rowid "
            f"WHERE episode_windows MATCH ? AND {where} ORDER BY s, w.rowid LIMIT ?",
            [match, *params, depth],
        ).fetchall()
        return [(r[0], -r[1]) for r in rows]

    def document_frequency(self, term: str) -> int:
        """Memories holding the term (a single token)."""
        return self._conn.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (f'"{term}"',)).fetchone()[0]

    def holding(self, term: str, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` hold the term."""
        return [r[0] for r in self._conn.execute(
            f"SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? AND rowid IN ({marks(len(ids))})",
            [f'"{term}"', *ids])]

    def rebuild(self) -> None:
        """The memories' keyword index rebuilt from the table."""
        self._conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")

    def optimize(self) -> None:
        """Merge the keyword index's segments (deleted text leaves its pages)."""
        self._conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')")

    def match_counts(self, queries: Sequence[str]) -> list[int]:
        """How many memories match each keyword query (same stemming as recall), in one statement."""
        if not queries:
            return []
        sql = " UNION ALL ".join("SELECT (SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?)" for _ in queries)
        return [r[0] for r in self._conn.execute(sql, list(queries))]
