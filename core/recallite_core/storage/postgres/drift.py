"""What reconcile compares: the conversation projections (turn positions, chunks, citations,
running summaries) against the memories table, and the deletes that repair them.

Foreign keys keep several of these empty on PostgreSQL (a chunk, turn or citation cannot
outlive its memory); the queries are SQLite's all the same, so reconcile asks one interface."""

from __future__ import annotations

from typing import Any, Sequence


class PostgresDrift:
    def __init__(self, conn: Any):
        self._conn = conn

    def _ids(self, sql: str, *args: object) -> list[int]:
        return [r[0] for r in self._conn.execute(sql, args or None)]

    def unregistered_turns(self) -> list[int]:
        """Episodes (type) without a place in a session, by id."""
        return self._ids("SELECT id FROM memories m WHERE type = 'episode' AND NOT EXISTS "
                         "(SELECT 1 FROM episodes e WHERE e.memory_id = m.id) ORDER BY id")

    def stray_turns(self) -> list[int]:
        """Turn rows whose memory is gone, is no episode, or moved scope or session."""
        return self._ids("SELECT e.memory_id FROM episodes e LEFT JOIN memories m ON m.id = e.memory_id "
                         "WHERE m.id IS NULL OR m.type <> 'episode' OR m.scope <> e.scope "
                         "OR coalesce(m.session, '') <> e.session ORDER BY 1")

    def stray_chunks(self) -> list[int]:
        """Memory ids of chunks whose memory is gone."""
        return self._ids("SELECT DISTINCT memory_id FROM chunks c WHERE NOT EXISTS "
                         "(SELECT 1 FROM memories m WHERE m.id = c.memory_id) ORDER BY 1")

    def malformed_chunks(self, dimensions: int) -> list[int]:
        """Memories with a chunk vector that does not have ``dimensions`` values."""
        return self._ids("SELECT DISTINCT memory_id FROM chunks c WHERE vector_dims(embedding) <> %s "
                         "AND EXISTS (SELECT 1 FROM memories m WHERE m.id = c.memory_id) ORDER BY 1", int(dimensions))

    def chunk_spans(self) -> list[tuple[int, int, int]]:
        """(memory id, start, stop) of every chunk, by memory and order."""
        return self._conn.execute("SELECT memory_id, start, stop FROM chunks ORDER BY memory_id, ord").fetchall()

    def bad_citations(self) -> list[int]:
        """Citing memories of citations whose either end is gone or whose source is no episode."""
        return self._ids("SELECT c.memory_id FROM citations c LEFT JOIN memories e ON e.id = c.episode_id "
                         "LEFT JOIN memories m ON m.id = c.memory_id WHERE e.id IS NULL OR m.id IS NULL "
                         "OR e.type <> 'episode' ORDER BY 1")

    def summaries(self) -> list[tuple[str, str, str, int]]:
        """(scope, session, pool JSON, turns folded in) of every running summary."""
        return self._conn.execute("SELECT scope, session, pool, turns FROM session_summaries ORDER BY 1, 2").fetchall()

    def turn_counts(self) -> dict[tuple[str, str], int]:
        """Turns per (scope, session)."""
        return {(sc, se): n for sc, se, n in self._conn.execute(
            "SELECT scope, session, count(*) FROM episodes GROUP BY scope, session")}

    def turn_fields(self, ids: Sequence[int]) -> list[tuple[int, str, str, float]]:
        """(id, scope, session or '', created_at) of the rows among ``ids``, by id."""
        return self._conn.execute("SELECT id, scope, coalesce(session, ''), created_at FROM memories "
                                  "WHERE id = ANY(%s) ORDER BY id", (list(ids),)).fetchall()

    def drop_turns(self, ids: Sequence[int]) -> None:
        """The turn rows (places in a session) of these memories."""
        if ids:
            self._conn.execute("DELETE FROM episodes WHERE memory_id = ANY(%s)", (list(ids),))

    def drop_bad_citations(self) -> None:
        """Citations whose source is no episode (or gone) or whose citing memory is gone."""
        self._conn.execute(
            "DELETE FROM citations c WHERE NOT EXISTS (SELECT 1 FROM memories e WHERE e.id = c.episode_id "
            "AND e.type = 'episode') OR NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = c.memory_id)")
