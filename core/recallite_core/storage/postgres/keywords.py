"""Keyword search from the stored tsvector columns (GIN), ranked in the server."""

from __future__ import annotations

from typing import Any, Sequence

from ..base import MemoryFilter
from ..fts import query_terms
from .filters import where_sql
from .migrations import TEXT_CONFIG


def ts_query(text: str) -> str | None:
    """User text as a to_tsquery() expression: every term a quoted lexeme, OR-ed (as fts_query
    does for FTS5). query_terms yields \\w+ tokens, which hold no quote or operator, so quoting
    them makes every word plain text. None when the text has no word at all."""
    terms = query_terms(text)
    return " | ".join(f"'{t}'" for t in terms) if terms else None


def rank_weights(weights: Sequence[float]) -> list[float]:
    """(title, content, tags) column weights as ts_rank_cd's array, ordered {D, C, B, A}: the
    tsvector labels title A, content B, tags C. ts_rank_cd takes weights in [0, 1], so they are
    scaled by the largest; a common factor does not change the order of the answers."""
    title, content, tags = (float(w) for w in weights)
    top = max(title, content, tags) or 1.0
    return [w / top for w in (0.0, tags, content, title)]


class PostgresKeywords:
    """Keyword search over the memories' tsvector and the conversation windows'. Scores are
    ts_rank_cd (cover density; higher is better), ties by id. Not bm25: the scores differ in
    scale from SQLite's, the order of strong matches mostly agrees (docs/postgres.md)."""

    def __init__(self, conn: Any):
        self._conn = conn

    def top(self, query: str, flt: MemoryFilter, depth: int, weights: Sequence[float]) -> list[tuple[int, float]]:
        """The top-``depth`` among the memories passing the filter (the filter is in the query)."""
        tsq = ts_query(query)
        if tsq is None or depth <= 0:
            return []
        where, params = where_sql(flt)
        rows = self._conn.execute(
            f"SELECT m.id, ts_rank_cd(%s::float4[], m.tsv, q) AS s FROM memories m, to_tsquery('{TEXT_CONFIG}', %s) q "
            f"WHERE m.tsv @@ q AND {where} ORDER BY s DESC, m.id LIMIT %s",
            [rank_weights(weights), tsq, *params, depth]).fetchall()
        return [(mid, float(s)) for mid, s in rows]

    def windows_top(self, query: str, flt: MemoryFilter, depth: int) -> list[tuple[int, float]]:
        """The top-``depth`` of conversation turns indexed with their neighbours."""
        tsq = ts_query(query)
        if tsq is None or depth <= 0:
            return []
        where, params = where_sql(flt)
        rows = self._conn.execute(
            f"SELECT w.memory_id, ts_rank_cd(w.tsv, q) AS s FROM episode_windows w JOIN memories m ON m.id = w.memory_id, "
            f"to_tsquery('{TEXT_CONFIG}', %s) q WHERE w.tsv @@ q AND {where} ORDER BY s DESC, w.memory_id LIMIT %s",
            [tsq, *params, depth]).fetchall()
        return [(mid, float(s)) for mid, s in rows]

    def document_frequency(self, term: str) -> int:
        """Memories holding the term (a single token)."""
        tsq = ts_query(term)
        if tsq is None:
            return 0
        return self._conn.execute(
            f"SELECT count(*) FROM memories WHERE tsv @@ to_tsquery('{TEXT_CONFIG}', %s)", (tsq,)).fetchone()[0]

    def holding(self, term: str, ids: Sequence[int]) -> list[int]:
        """Which of ``ids`` hold the term, in id order."""
        tsq = ts_query(term)
        if tsq is None or not ids:
            return []
        return [r[0] for r in self._conn.execute(
            f"SELECT id FROM memories WHERE tsv @@ to_tsquery('{TEXT_CONFIG}', %s) AND id = ANY(%s) ORDER BY id",
            (tsq, list(ids)))]
