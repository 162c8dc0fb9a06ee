"""Memory rows: models, filters, the columns ranking, trust and promotion read."""

from __future__ import annotations

from typing import Any, Collection, Sequence

from recallite_core.models import Memory
from recallite_core.storage.base import MemoryFilter, TrustRow
from recallite_core.storage.postgres.filters import where_sql
from recallite_core.storage.postgres.rows import SELECT_MEMORIES, load_memories, memory_from_select


class PostgresMemories:
    def __init__(self, conn: Any):
        self._conn = conn

    def load(self, ids: Sequence[int]) -> dict[int, Memory]:
        return load_memories(self._conn, list(ids))

    def matching(self, ids: Collection[int] | None, flt: MemoryFilter) -> list[int]:
        """The ids (among ``ids``; None: all memories) that pass the filter, in id order."""
        where, params = where_sql(flt)
        if ids is None:
            return [r[0] for r in self._conn.execute(f"SELECT m.id FROM memories m WHERE {where} ORDER BY m.id", params)]
        if not ids:
            return []
        return [r[0] for r in self._conn.execute(
            f"SELECT m.id FROM memories m WHERE m.id = ANY(%s) AND {where} ORDER BY m.id", [list(ids), *params])]

    def expired(self, valid_at: float) -> set[int]:
        return {r[0] for r in self._conn.execute(
            "SELECT id FROM memories WHERE valid_until IS NOT NULL AND valid_until <= %s", (valid_at,))}

    def trust_rows(self, ids: Sequence[int]) -> list[TrustRow]:
        # metadata->'behavioral' comes back as its JSON value; bool() reads it as SQLite's
        # json_extract result would be read (true/1/"x" are true; false/0/null/absent are not).
        return [TrustRow(mid, st, sid, bool(behavioral), created, validated)
                for mid, st, sid, behavioral, created, validated in self._conn.execute(
                    "SELECT id, source_type, source_id, metadata->'behavioral', created_at, validated_at "
                    "FROM memories WHERE id = ANY(%s)", (list(ids),))]

    def candidates(self, ids: Sequence[int]) -> dict[int, tuple[float, str]]:
        return {mid: (conf, meta) for mid, conf, meta in self._conn.execute(
            "SELECT id, confidence, metadata::text FROM memories WHERE status = 'candidate' AND id = ANY(%s)",
            (list(ids),))}

    def page(self, flt: MemoryFilter, limit: int, offset: int) -> tuple[list[Memory], int]:
        """Memories passing the filter, newest first, from ``offset``; and how many pass it."""
        where, params = where_sql(flt)
        rows = self._conn.execute(f"{SELECT_MEMORIES} WHERE {where} ORDER BY m.id DESC LIMIT %s OFFSET %s",
                                  [*params, limit, offset]).fetchall()
        total = self._conn.execute(f"SELECT count(*) FROM memories m WHERE {where}", params).fetchone()[0]
        return [memory_from_select(r) for r in rows], total

    def exists(self, mid: int) -> bool:
        return self._conn.execute("SELECT 1 FROM memories WHERE id = %s", (mid,)).fetchone() is not None

    def scope_counts(self) -> dict[str, int]:
        """Memories per scope (any status), largest first, ties by name (bytewise, as SQLite)."""
        return dict(self._conn.execute(
            'SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY 2 DESC, scope COLLATE "C"').fetchall())

    def created_at(self, ids: Sequence[int]) -> dict[int, float]:
        return dict(self._conn.execute("SELECT id, created_at FROM memories WHERE id = ANY(%s)", (list(ids),)).fetchall())

    def policy_columns(self, ids: Sequence[int]) -> list[tuple[int, str, str, float, float, float]]:
        """(id, type, status, confidence, usefulness, importance) of the rows among ``ids``."""
        return self._conn.execute(
            "SELECT id, type, status, confidence, usefulness, importance FROM memories WHERE id = ANY(%s)",
            (list(ids),)).fetchall()

    def summaries(self, ids: Sequence[int]) -> list[tuple[int, str, str, str, str, str]]:
        """(id, title, status, scope, source type, metadata JSON) of the rows among ``ids``."""
        return self._conn.execute(
            "SELECT id, title, status, scope, source_type, metadata::text FROM memories WHERE id = ANY(%s)",
            (list(ids),)).fetchall()

    def record_access(self, ids: Sequence[int], now: float) -> None:
        """One more access for each of ``ids``, at ``now``."""
        self._conn.execute(
            "UPDATE memories SET access_count = access_count + 1, last_accessed_at = %s WHERE id = ANY(%s)",
            (now, list(ids)))

    def mark_validated(self, mid: int, confidence: float, metadata: str, now: float) -> None:
        self._conn.execute(
            "UPDATE memories SET status = 'validated', confidence = %s, metadata = %s::jsonb, updated_at = %s, "
            "validated_at = %s WHERE id = %s", (confidence, metadata, now, now, mid))
